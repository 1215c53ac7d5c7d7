#!/usr/bin/env bash
# Run tests of today's tree against the code of an older commit (to show a new test fails there):
#   scripts/at_commit.sh COMMIT [pytest args...] TEST_FILE...
# The commit is checked out in a temporary worktree with today's test files copied over it. The editable install
# maps agentrl.envs, agentrl.sandboxes and agentrl.configs to this checkout's folders whatever PYTHONPATH says, so
# PYTHONPATH alone would run today's envs code: a sitecustomize drops that finder, and links in the worktree's
# agentrl/ give it the old folders. Subprocesses the tests start inherit PYTHONPATH, so they run the old code too.
set -euo pipefail
commit=$1; shift
repo=$(git rev-parse --show-toplevel)
tmp=$(mktemp -d)
trap 'git -C "$repo" worktree remove --force "$tmp/wt" >/dev/null 2>&1 || true; rm -rf "$tmp"' EXIT
git -C "$repo" worktree add --detach "$tmp/wt" "$commit" >/dev/null 2>&1
for d in envs sandboxes configs; do ln -sfn "../$d" "$tmp/wt/agentrl/$d"; done
mkdir "$tmp/shim"
cat > "$tmp/shim/sitecustomize.py" <<'PY'
import sys
sys.meta_path[:] = [f for f in sys.meta_path if "__editable__" not in repr(f) + str(getattr(f, "__module__", ""))]
PY
for arg in "$@"; do  # today's version of each named test file (and its folder's conftest) over the old one
    path=${arg%%::*}
    if [[ -f "$repo/$path" ]]; then
        mkdir -p "$tmp/wt/$(dirname "$path")"
        cp "$repo/$path" "$tmp/wt/$path"
    fi
done
cd "$tmp/wt"
PYTHONPATH="$tmp/wt:$tmp/shim" "$repo/.venv/bin/python" -c \
    "import agentrl.envs, agentrl.sandboxes, sys; assert all(m.__file__.startswith(sys.argv[1]) for m in (agentrl.envs, agentrl.sandboxes)), 'not the old code'" "$tmp/wt"
PYTHONPATH="$tmp/wt:$tmp/shim" "$repo/.venv/bin/python" -m pytest -p no:cacheprovider "$@"
