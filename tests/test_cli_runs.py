"""What a run leaves behind when it stops early, and what `agentrl plot` says about a folder it cannot plot."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

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


@pytest.mark.slow
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


@pytest.mark.slow
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


@pytest.mark.slow
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


class OnlyTheExpertEnv(ParityEnv):
    """Reward 1 only for the expert's exact answer: the tiny model, warm-started on two of them, still scores 0."""

    def step(self, action):
        return [], float(action.strip() == "the answer is 42"), True, False, {}

    def expert_action(self):
        return "the answer is 42"


@pytest.mark.slow
def test_a_first_run_in_which_every_episode_scored_0_names_the_choices_that_apply(tmp_path):
    """Guards 'error: no step trained … give the policy reward variance (an expert warm start with sft.episodes,
    …)' after a run whose warm start already ran: every group scored 0, and the line now says so and names the
    choices for this run: partial credit, easier tasks, more samples per group, and that the warm start ran and
    did not help. The exit stays 1 (docs/metrics.md: the checkpoint is the starting weights)."""
    run = tmp_path / "run"
    r = _run("train", "--env", "tests.test_cli_runs:OnlyTheExpertEnv", *TINY_RUN, "sft.episodes=2", "sft.epochs=1",
             "rollout.max_new_tokens=16", f"trainer.run_dir={run}")
    assert r.returncode == 1, r.stderr
    tail = r.stderr[r.stderr.index("agentrl train: no step trained"):].splitlines()
    assert tail[0] == "agentrl train: no step trained: all 2 steps were SKIPPED (2× no trainable group: 0 of 12 " \
                      "episodes masked, 6 groups sampled (100% dropped)).", tail
    assert tail[1] == "Every episode scored 0, so no group had a reward difference for GRPO to learn from. What " \
                      "can change that for this run:", tail
    assert tail[2] == "  - a model that can learn: model.name=tiny is randomly initialized (it exists for tests) and " \
                      "solves nothing in a few steps whatever the settings below; the default is " \
                      "model.name=smollm2-135m-instruct", tail
    tail = tail[:2] + tail[3:]
    # the tiny random model never stops by itself, so the run also knows that every action hit the token budget
    assert tail[2] == "  - a larger token budget per action: every action was cut at rollout.max_new_tokens=16 " \
                      "before it could finish", tail
    assert tail[3].startswith("  - partial credit in the env's reward: pay a share between 0 and 1"), tail
    assert tail[4] == "  - easier tasks: start from ones the policy already solves now and then", tail
    assert tail[5] == "  - more samples per group: rollout.group_size=4 (this run: 2), so a task solved once in 4 " \
                      "tries still gives a signal", tail
    assert tail[6] == "  - a warm start already ran and did not help (sft.episodes=2, sft.epochs=1): more expert " \
                      "episodes or epochs, or check that its expert solves the tasks (agentrl eval --oracle expert)"
    assert tail[7] == "Its checkpoint holds the weights the run started from (exit status 1: nothing was trained).", tail
    assert len(tail) == 8 and "agentrl train: error" not in r.stderr and (run / "sft_metrics.jsonl").is_file(), r.stderr


def test_the_advice_names_an_envs_own_partial_credit_and_level_arguments(tmp_path):
    """calc and swe_lite have arguments for partial credit and difficulty: the advice names them with the run's
    values; an --init-from start is the warm start that did not help; all-1 groups say the tasks are too easy."""
    from agentrl.config import load_config
    from agentrl.trainer.diagnose import explain

    skipped = ["no trainable group: 0 of 8 episodes masked, 2 groups sampled (100% dropped)"]
    rows = [{"rollout/zero_std_count_0.0": 2, "rollout/episodes": 8, "rollout/turns_mean": 2.0,
             "rollout/length_truncated_actions": 3, "rollout/format_ok_share": 0.5}]
    calc = explain(load_config("calc", None, ["env.kwargs.difficulty=3", "sft.episodes=0"]), tmp_path, rows, skipped,
                   init_from="runs/sft-calc/checkpoints/step_000000")
    assert "  - partial credit: env.kwargs.step_reward=0.1 (off in this run) pays for progress" in calc, calc
    assert "  - easier tasks (a lower env.kwargs.difficulty; this run used 3)" in calc, calc
    assert "  - a warm start already ran and did not help: this run started from --init-from " \
           "runs/sft-calc/checkpoints/step_000000; more expert episodes" in calc, calc
    assert "token budget" not in calc  # 3 of 16 actions were cut, not every one
    assert "model.name=tiny is randomly initialized" not in calc, calc  # the preset's model learns
    tiny = explain(load_config("calc", None, ["model.name=tiny"]), tmp_path, rows, skipped).splitlines()
    assert tiny[2].startswith("  - a model that can learn: model.name=tiny is randomly initialized"), tiny
    swe = explain(load_config("swe_lite", None, ["env.kwargs.level=2", "sft.episodes=0",
                                                 "env.kwargs.shaped_reward=false"]), tmp_path, rows, skipped)
    assert "env.kwargs.shaped_reward=true (off in this run)" in swe and "lower env.kwargs.level; this run used 2" in swe
    assert "  - an expert warm start, which this run did not have: sft.episodes=64" in swe, swe
    preset = explain(load_config("swe_lite", None, ["sft.episodes=0"]), tmp_path, rows, skipped)
    assert "partial credit" not in preset and "this run used 'auto'" in preset, preset  # the preset's credit is on
    easy = explain(load_config("calc", None, []), tmp_path, [{"rollout/zero_std_count_1.0": 2}], skipped)
    assert easy.endswith("Every episode scored 1, so no group had a reward difference to learn from: the tasks are "
                         "too easy for this policy. Give it harder ones (a higher env.kwargs.difficulty; this run "
                         "used 2)."), easy
    assert easy.startswith("no step trained: its one step was SKIPPED (1× no trainable group: 0 of 8"), easy
