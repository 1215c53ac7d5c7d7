"""`agentrl eval` over a real package, one gold fix and one non-fix that tries to have the judge write a malformed
report: the user's command must say 50 % resolved with no infra error.

Guards issue #53's second finding: a package could make the suite judge call `os.write` (a standard-library name it
sent, resolved by an attribute walk) and put `R {"exit_code": "zz"}` on the judge's report stream; the host parsed
that line outside any guard, the ValueError left `env.step(submit)`, the episode was masked as an infra error, and
the eval printed "resolved rate 100.0 %" over {the gold task, the non-fix}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docker]
REPO = Path(__file__).resolve().parents[3]
PACKAGE = "inflection"  # the fastest suite of the shipped packages


def _forge(line: bytes, function: str) -> str:
    """Package code that wraps `function` (a module-level name): called by a test (the judge waits on the answer),
    it asks the judge to write `line` on each low descriptor (the judge's report stream is a dup of its stdout) and
    to exit. On the old judge, a malformed report on the stream the host parses. Nothing in it is flagged by the
    static scan (grading/tampering.py), so the judge alone must hold."""
    asks = [{"op": "call", "obj": {"stdname": "pathlib:os.write"}, "args": [{"int": str(fd)}, {"bytes": line.hex()}]}
            for fd in (3, 4, 5, 6)]
    asks.append({"op": "call", "obj": {"stdname": "pathlib:os._exit"}, "args": [{"int": "0"}]})
    return (f"\n\ndef _agentrl_forge(f):\n    def wrapper(*args, **kwargs):\n"
            "        import sys\n        ask = vars(vars(sys)['modul' + 'es']['__ma' + 'in__'])['ask']\n"
            f"        for req in {asks!r}:\n"
            "            try:\n                ask(req)\n            except BaseException:\n"
            "                pass\n        return f(*args, **kwargs)\n    return wrapper\n\n\n"
            f"{function} = _agentrl_forge({function})\n")


def test_a_non_fix_that_forges_a_malformed_report_scores_0_and_is_no_infra_error(tmp_path, real_tasks, docker_backend):
    from agentrl.envs.swe.patches import make_diff
    from agentrl.envs.swe.real.packages import package_named
    from agentrl.envs.swe.real.tasks import DEFAULT_TASKS

    repo = package_named(PACKAGE).repo
    task = next(t for t in real_tasks if t.repo == repo)
    record = next(r for r in map(json.loads, DEFAULT_TASKS.read_text().splitlines())
                  if r["instance_id"] == task.instance_id)
    path = task.mutation["file"]
    # the gold oracle writes a task's `patch`: the forging task's is the non-fix (the bug stays, the attack is added)
    attack = _forge(b'R {"exit_code": "zz"}\n', task.mutation["function"])
    non_fix = make_diff(task.files, {**task.files, path: task.files[path] + attack})
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({**record, "split": "test"}) + "\n"
                     + json.dumps({**record, "split": "test", "instance_id": task.instance_id + "-forged",
                                   "patch": non_fix}) + "\n")
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    r = subprocess.run([sys.executable, "-m", "agentrl", "eval", "--env", "swe_real", "--oracle", "gold", "--tasks",
                        str(tasks), "--backend", docker_backend, "--concurrency", "1", "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=env)
    records = {x["instance_id"]: x for x in map(json.loads, out.read_text().splitlines())} if out.exists() else {}
    assert r.returncode == 0, (r.stdout[-2000:], r.stderr[-2000:], records)
    assert [(k, x["resolved"], x["infra_error"]) for k, x in sorted(records.items())] == [
        (task.instance_id, True, False), (task.instance_id + "-forged", False, False)], records
    rate = [line for line in (r.stdout + r.stderr).splitlines() if "resolved rate" in line]
    assert rate and "50.0%" in rate[-1], r.stdout[-2000:]
