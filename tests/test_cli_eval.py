"""`agentrl eval` as typed: progress while long episodes run, a summary that labels summed episode time, and a
Ctrl-C/SIGTERM that says how to resume (and the rerun that does)."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.test_cli import ParityEnv

REPO = Path(__file__).resolve().parents[1]


class SlowStepEnv(ParityEnv):
    """Each step takes 2.5 s, as a SWE episode's tool calls and grading take minutes."""

    def step(self, action):
        time.sleep(2.5)
        return super().step(action)


def _eval(out: Path, *argv: str) -> list[str]:
    return [sys.executable, "-m", "agentrl", "eval", "--env", "tests.test_cli_eval:SlowStepEnv", "--oracle", "expert",
            "--concurrency", "1", "--out", str(out), *argv]


@pytest.mark.slow
def test_eval_says_episodes_are_running_and_labels_the_summed_episode_time(tmp_path):
    """Guards an eval silent for the whole of each long episode, and 'episode time 194s' beside 'wall time 144s'
    with nothing saying the first is a sum over episodes that ran at the same time."""
    r = subprocess.run(_eval(tmp_path / "r.jsonl", "--num-tasks", "2", "--progress-every", "1"),
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr
    lines = r.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("[1/2] "))
    beats = [line for line in lines[:first] if line.startswith("eval: ")]
    assert beats and all(re.fullmatch(r"eval: 0/2 episodes finished, 1 running; none finished in the last \d+s "
                                      r"\(\d+s elapsed\)", b) for b in beats), lines
    assert re.fullmatch(r"\[1/2\] seed-\d+#0: resolved \(done, 1 turns, \d+s\) — resolved 1/1", lines[first]), lines
    time_row = next(line for line in r.stdout.splitlines() if line.startswith("episode time"))
    assert re.fullmatch(r"episode time +\d+s summed over 2 episodes, which may overlap \(mean \d+s each\)",
                        time_row), r.stdout
    assert any(line.startswith("wall time") for line in r.stdout.splitlines())
    r = subprocess.run(_eval(tmp_path / "r.jsonl", "--num-tasks", "2", "--progress-every", "0"),
                       capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 2 and r.stderr == "agentrl eval: error: --progress-every must be a positive number of " \
                                             "seconds, got 0\n", r.stderr


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "status", "how"), [(signal.SIGINT, 130, "interrupted"),
                                                    (signal.SIGTERM, 143, "terminated (SIGTERM)")])
def test_a_stopped_eval_says_how_to_resume_and_the_rerun_finishes_the_rest(tmp_path, sig, status, how):
    """Guards 'agentrl eval: interrupted' alone (train's line says how to resume): the line counts the finished
    episodes in --out and says to rerun the command, and the rerun runs only the rest."""
    out, log = tmp_path / "r.jsonl", tmp_path / "stderr.txt"
    argv = _eval(out, "--num-tasks", "4")
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while "[1/4]" not in log.read_text() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, log.read_text()
        proc.send_signal(sig)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    done = len(out.read_text().splitlines())
    assert proc.returncode == status and 1 <= done < 4, err
    assert err.splitlines()[-1] == f"agentrl eval: {how}; {done} finished episode(s) are in {out}: rerun the same " \
                                   "command to resume (it skips them)", err
    assert "Traceback" not in err
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert f"resuming {out}: {done} episodes done, {4 - done} to run" in r.stdout + r.stderr
    assert len(out.read_text().splitlines()) == 4


def test_eval_help_names_every_env_with_the_gold_oracle():
    """Guards '--oracle … swe_lite also: gold | empty' although swe_real's gold oracle works as well."""
    r = subprocess.run([sys.executable, "-m", "agentrl", "eval", "--help"], capture_output=True, text=True,
                       timeout=120, cwd=REPO)
    help_text = " ".join(r.stdout.split())
    assert "swe_lite and swe_real also: gold | empty" in help_text, r.stdout
    assert "agentrl eval --env swe_real --oracle gold --split test" in r.stdout
