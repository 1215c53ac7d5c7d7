"""What a run leaves behind when it stops early, and what `agentrl plot` says about a folder it cannot plot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from tests.test_cli import TINY_RUN, ParityEnv

REPO = Path(__file__).resolve().parents[1]


def _run(*argv: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run([sys.executable, "-m", "agentrl", *argv], capture_output=True, text=True, timeout=600,
                          cwd=cwd, env=env)


class SlowExpertEnv(ParityEnv):
    """Each step takes 2 s, so the warm start's expert episodes hold the run in start-up for a while."""

    def step(self, action):
        time.sleep(2.0)
        return super().step(action)


def test_a_missing_model_leaves_no_run_folder(tmp_path):
    """Guards `runs/<x>/` holding only config.yaml after `model.name=<a path that is not there>` (train and sft)."""
    missing = tmp_path / "no-such-model"
    for command in ("train", "sft"):
        run = tmp_path / command
        r = _run(command, "--env", "tests.test_cli:ParityEnv", *TINY_RUN, f"model.name={missing}",
                 f"trainer.run_dir={run}")
        assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
        assert f"unknown model '{missing}'" in r.stderr
        assert not run.exists(), sorted(p.name for p in run.iterdir())


def test_sigterm_during_start_up_leaves_no_run_folder_and_says_so(tmp_path):
    """Guards `runs/<x>/` holding only config.yaml after a SIGTERM during start-up (here: while the warm start
    collects its expert episodes, after config.yaml was written): the folder is removed and the line says so."""
    run, log = tmp_path / "run", tmp_path / "stderr.txt"
    argv = [sys.executable, "-m", "agentrl", "train", "--env", "tests.test_cli_runs:SlowExpertEnv", *TINY_RUN,
            "sft.episodes=4", f"trainer.run_dir={run}"]
    with open(log, "w") as err:
        proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=err, cwd=REPO,
                                env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 300
        while proc.poll() is None and time.monotonic() < deadline:
            if (run / "config.yaml").is_file() and "sft 1/1 expert" in log.read_text():
                break
            time.sleep(0.05)
        assert proc.poll() is None, log.read_text()
        assert (run / "config.yaml").is_file() and not (run / "sft_metrics.jsonl").exists()
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    err = log.read_text()
    assert proc.returncode == 143, err
    assert f"agentrl train: terminated (SIGTERM); run {run}: no checkpoint was written yet, so there is nothing " \
           "to resume (the run's empty folder was removed)" in err, err
    assert "Traceback" not in err and not run.exists(), err


def test_plot_says_what_a_folder_without_metrics_is(tmp_path):
    """Guards 'metrics.jsonl does not exist: is X an agentrl run directory?' for folders a user does have: a
    warm-start-only run, a run stopped before its first step (an older agentrl left those), the runs/ folder."""
    runs = tmp_path / "runs"
    sft = runs / "sft-parity"
    r = _run("sft", "--env", "tests.test_cli:ParityEnv", *TINY_RUN, "--episodes", "2", "sft.epochs=1",
             f"trainer.run_dir={sft}")
    assert r.returncode == 0, r.stderr
    r = _run("plot", str(sft))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"nothing to plot: {sft} is a warm-start-only run (agentrl sft, or trainer.steps=0): it took no GRPO " \
           f"step; its loss per epoch is in {sft / 'sft_metrics.jsonl'}" in r.stderr, r.stderr

    stopped = runs / "stopped"
    stopped.mkdir()
    (stopped / "config.yaml").write_text((sft / "config.yaml").read_text())
    r = _run("plot", str(stopped))
    assert r.returncode == 2 and f"nothing to plot: {stopped} is a run that has not finished a step (still " \
                                  "starting, or stopped before its first step; it holds config.yaml)" in r.stderr, r.stderr

    r = _run("plot", str(runs))
    assert r.returncode == 2 and f"{runs} is a folder of 2 run(s), not a run; plot one of them, e.g. agentrl plot " \
                                  f"{stopped}" in r.stderr, r.stderr
    r = _run("plot", str(tmp_path / "typo"))
    assert r.returncode == 2 and f"nothing to plot: {tmp_path / 'typo'} does not exist" in r.stderr, r.stderr
