"""bench/gpu_check.py, the one command a GPU owner runs, end to end on the CPU with the tiny model: both dtypes
train calc on the device it is given and report their step split, mismatch and engine table; a failing part
makes the exit status 1, a model that is not there 2."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"
TINY = ["--device", "cpu", "--model", "tiny", "--steps", "1", "--tasks", "2", "--group", "2", "--sft-episodes", "2",
        "--prompts", "2", "--samples", "2", "--new-tokens", "8"]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=900)


@pytest.mark.slow
def test_the_cpu_path_trains_both_dtypes_and_prints_every_table():
    r = _run(*TINY)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    for dtype in ("bfloat16", "float32"):
        train = re.search(rf"^\| {dtype} \| ([\d.]+) \| ([\d.]+) \| ([\d.]+) \| n/a \| 1/1 \| (\S+) \| (\S+) / (\S+) \|$",
                          out, re.M)
        assert train, out
        rollout, update, _, kl, mean, worst = (float(x) for x in train.groups())
        assert rollout > 0 and update > 0 and 0 <= mean <= worst < 1  # π_old vs μ at staleness 0: numerical only
        engine = re.search(rf"^\| {dtype} \| ([\d,]+) \| ([\d,]+) \| ([\d.]+)× \| (\S+) / (\S+) \| n/a \|$", out, re.M)
        assert engine, out
        assert float(engine.group(4)) < (0.05 if dtype == "bfloat16" else 1e-4)  # decode vs recompute
    assert "all parts passed" in out
    assert "train float32: running (calc: warm start of 2 expert episodes, then 1 GRPO steps of 2×2 episodes)" in out


@pytest.mark.slow
def test_ctrl_c_stops_the_check_and_a_second_one_at_once():
    """Guards a check that took 147 s to stop on Ctrl-C (blocking training work finished first, asyncio then
    waited for its worker threads) and said nothing meanwhile: the first Ctrl-C says it is stopping, the second
    quits at once with 130."""
    proc = subprocess.Popen([sys.executable, str(SCRIPT), *TINY, "--dtypes", "float32", "--steps", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        for line in proc.stdout:
            if line.startswith("train float32: running"):
                break
        time.sleep(3.0)  # into the warm start or the first steps
        proc.send_signal(signal.SIGINT)
        time.sleep(0.5)
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        t0 = time.monotonic()
        rc = proc.wait(timeout=30)
        stopped_s = time.monotonic() - t0
    finally:
        proc.kill()
    err = proc.stderr.read()
    assert rc == 130 and "gpu_check: stopping after the current operation" in err, (rc, err[-2000:])
    assert stopped_s < 10, stopped_s


@pytest.mark.slow
def test_a_failing_part_exits_1_and_a_missing_model_exits_2(tmp_path):
    r = _run(*TINY, "--skip", "engine", "--dtypes", "float32", "--set", "trainer.no_such_key=1")
    assert r.returncode == 1 and "train float32: FAILED: ConfigError" in r.stdout, r.stdout[-2000:]
    r = _run("--device", "cpu", "--model", str(tmp_path / "nowhere"), "--skip", "train,engine")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "gpu_check: error:" in r.stderr, r.stderr
