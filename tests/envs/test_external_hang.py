"""A plain `def run` agent that never returns, under `agentrl train` as a user runs it.

Guards issue #48's first finding: the hanging agent's episodes were masked at the deadline as documented, but
the run never exited, and SIGTERM and then SIGINT did not end it; only SIGKILL did (after 848 s). The agent ran
in the shared default executor's threads, which asyncio.run and the interpreter join at exit; and once every
one of them held a hung agent, every other worker-thread call (making an env, closing one) waited too. Now a
plain def runs in a daemon thread of its own: the run ends after the deadline, and at once on a signal, with
its process group empty afterwards and the masked episodes kept.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
HANG = '''
import os
import time


def run(task, client):
    with open(os.environ["AGENT_MARK"], "a") as f:
        f.write("started\\n")
    time.sleep(10**6)
'''


def _start(tmp_path: Path, *overrides: str) -> tuple[subprocess.Popen, Path, Path]:
    """`agentrl train --env external:hang.py:run` on the tiny model, in a session of its own (so its process group
    can be checked afterwards); returns the process, its run folder and its stderr file."""
    (tmp_path / "hang.py").write_text(HANG)
    run_dir, err = tmp_path / "run", tmp_path / "stderr.txt"
    argv = [sys.executable, "-m", "agentrl", "train", "--env", "external:hang.py:run", "model.name=tiny",
            "sft.episodes=0", "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_new_tokens=4",
            "rollout.max_turns=2", "rollout.dynamic_sampling=false", "trainer.steps=1", "trainer.tensorboard=false",
            "trainer.sample_every=0", "trainer.eval_episodes=0", f"trainer.run_dir={run_dir}", *overrides]
    env = {**os.environ, "AGENT_MARK": str(tmp_path / "mark"), "PYTHONUNBUFFERED": "1"}
    # exec resets a handled signal to its default but keeps an ignored one ignored, and a shell starts background
    # jobs with SIGINT ignored: handle it here while starting the child, so that it takes Ctrl-C as a terminal's
    # foreground job does even when this test runs in the background
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with open(err, "w") as f:
            proc = subprocess.Popen(argv, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=f,
                                    start_new_session=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    return proc, run_dir, err


def _ended(proc: subprocess.Popen, within_s: float, err: Path) -> int:
    """The exit status; fails (after killing its group) if it has not exited within `within_s`, or if any
    process of its group outlives it."""
    try:
        code = proc.wait(timeout=within_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        pytest.fail(f"agentrl train still ran {within_s:.0f}s later; stderr:\n{err.read_text()[-3000:]}")
    try:
        os.killpg(proc.pid, 0)
    except ProcessLookupError:
        return code
    os.killpg(proc.pid, signal.SIGKILL)
    pytest.fail("a process of the run outlived it")


@pytest.mark.slow
def test_a_hanging_sync_agent_is_masked_at_the_deadline_and_the_run_exits(tmp_path):
    """episode_timeout_s=3: both episodes end as env_error at their deadline and are kept in trajectories.jsonl,
    the run stops with one line naming the cause (every episode masked: exit 2), and the process exits instead
    of waiting for the agent's thread."""
    proc, run_dir, err = _start(tmp_path, "rollout.episode_timeout_s=3")
    code = _ended(proc, 240, err)
    text = " ".join(err.read_text().split())
    assert code == 2 and "2 of 2 episodes of the last 1 step were masked" in text, text[-3000:]
    assert "the agent program ran past the episode deadline (3s)" in text
    rows = [json.loads(x) for x in (run_dir / "trajectories.jsonl").read_text().splitlines()]
    assert len(rows) == 2 and {r["termination"] for r in rows} == {"env_error"}, rows
    assert all(r["termination_detail"].startswith("the agent program ran past the episode deadline (3s)")
               for r in rows), rows
    assert (tmp_path / "mark").read_text().count("started") == 2


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_ends_a_run_whose_sync_agent_hangs(tmp_path, sig):
    """SIGTERM (or Ctrl-C's SIGINT) while both agents hang inside a 600 s deadline: the run unwinds at once,
    says it was stopped, and exits 128 + the signal number."""
    proc, _, err = _start(tmp_path, "rollout.episode_timeout_s=600")
    mark, deadline = tmp_path / "mark", time.monotonic() + 240
    while not (mark.exists() and mark.read_text().count("started") == 2):
        if proc.poll() is not None or time.monotonic() > deadline:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"the agents never started (exit {proc.poll()}); stderr:\n{err.read_text()[-3000:]}")
        time.sleep(0.1)
    proc.send_signal(sig)
    code = _ended(proc, 60, err)
    assert code == 128 + sig, err.read_text()[-3000:]
    how = "terminated (SIGTERM)" if sig == signal.SIGTERM else "interrupted"
    assert f"agentrl train: {how}" in " ".join(err.read_text().split())
