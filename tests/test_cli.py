"""The `agentrl` command: help on every subcommand, one-line errors with exit code 2."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agentrl.cli import COMMANDS, main


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "agentrl", *args], capture_output=True, text=True, timeout=120)


def test_top_level_help_lists_every_subcommand():
    r = _run("--help")
    assert r.returncode == 0
    for name in COMMANDS:
        assert name in r.stdout


@pytest.mark.parametrize("name", list(COMMANDS), ids=str)
def test_every_subcommand_has_help(name, capsys):
    with pytest.raises(SystemExit) as e:
        main([name, "--help"])
    assert e.value.code == 0
    assert "usage: agentrl " + name in capsys.readouterr().out


def test_unknown_subcommand_is_one_line_and_exit_2():
    r = _run("trian")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "invalid choice: 'trian'" in lines[0], r.stderr


def test_unknown_option_is_one_line_and_exit_2():
    r = _run("envs", "--bogus")
    assert r.returncode == 2
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "--bogus" in lines[0], r.stderr


def test_no_subcommand_prints_help_and_exits_2(capsys):
    assert main([]) == 2
    assert "COMMAND" in capsys.readouterr().out


# ---- runs you can trust: resume, preflight, env naming -----------------------------------------------------

import json  # noqa: E402
import shutil  # noqa: E402

import agentrl  # noqa: E402
from agentrl.types import user  # noqa: E402


class ParityEnv(agentrl.AgentEnv):
    """One turn: reward 1 for an even-length reply (the tiny random model gets both outcomes)."""

    def __init__(self, prefix: str = "Say anything"):
        self.prefix = prefix

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"{self.prefix} ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], float(len(action) % 2 == 0), True, False, {}

    def expert_action(self):
        return "ok"


agentrl.register("test_cli_parity", ParityEnv, description="test env with reward variance")


class BrokenResetEnv(ParityEnv):
    """Builds fine, fails at reset: every episode would be a masked env error."""

    def reset(self, *, seed=None, options=None):
        raise FileNotFoundError("tasks.jsonl")


TINY_RUN = ["model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=8",
            "rollout.max_context_tokens=128", "rollout.max_turns=1", "trainer.tensorboard=false", "trainer.lr=1e-3",
            "trainer.steps=2", "trainer.checkpoint_every=1", "trainer.keep_checkpoints=3", "rollout.max_batch_size=1",
            "trainer.sample_every=0"]


def _rows(run, step):
    rows = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    return sorted((r["task_id"], r["segments"][0]["token_ids"]) for r in rows if r["metrics"]["train/step"] == step)


def test_bare_resume_continues_the_run_with_its_own_config(tmp_path, capsys):
    """Guards resume ignoring config.yaml (it trained the preset env with default settings, and keep-2 pruned
    the run's checkpoints): `agentrl train --resume RUN` alone must reproduce the uninterrupted step."""
    full = tmp_path / "full"
    assert main(["train", "--env", "test_cli_parity", *TINY_RUN, f"trainer.run_dir={full}"]) == 0
    run = tmp_path / "resumed"
    shutil.copytree(full, run)
    shutil.rmtree(run / "checkpoints" / "step_000002")
    lines = (full / "trajectories.jsonl").read_text().splitlines()
    (run / "trajectories.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["metrics"]["train/step"] == 0))
    saved = (run / "config.yaml").read_text()
    capsys.readouterr()

    assert main(["train", "--resume", str(run)]) == 0
    assert "agentrl train test_cli_parity" in capsys.readouterr().err
    assert _rows(run, 1) == _rows(full, 1) and _rows(run, 1) != _rows(run, 0)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    assert (run / "config.yaml").read_text() == saved


def test_a_time_budget_stops_train_with_a_resume_line_and_resume_finishes(tmp_path, capsys):
    """The README's `trainer.max_train_s` flow as typed: the run stops early (exit 0) at a checkpoint, says how to
    continue, and `--resume RUN trainer.max_train_s=null` trains the remaining step."""
    run = tmp_path / "run"
    assert main(["train", "--env", "test_cli_parity", *TINY_RUN, f"trainer.run_dir={run}",
                 "trainer.max_train_s=0.001"]) == 0
    err = " ".join(capsys.readouterr().err.split())  # the console wraps long lines
    assert "trainer.max_train_s=0.001 spent" in err and "stopped after step 1 of 2" in err and f"--resume {run}" in err
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000001"]
    assert main(["train", "--resume", str(run), "trainer.max_train_s=null"]) == 0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    assert main(["train", "--env", "calc", "trainer.max_train_s=0", "--print-config"]) == 2
    assert "trainer.max_train_s" in capsys.readouterr().err


def test_resume_refuses_unsafe_overrides_naming_the_key(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("env:\n  name: calc\ntrainer:\n  lr: 1.0e-06\n")
    assert main(["train", "--resume", str(run), "trainer.lr=1e-3", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "trainer.lr cannot change on resume" in err and "trainer.steps" in err
    assert main(["train", "--resume", str(run), "trainer.steps=20", "--print-config"]) == 0
    out = capsys.readouterr().out
    assert "steps: 20" in out and "name: calc" in out
    assert main(["train", "--resume", str(run), "--env", "swe_lite"]) == 2
    assert "trains env 'calc', not --env 'swe_lite'" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "expected"), [
    (["--env", "swe_lite", "env.kwargs.taks=1"], 'env.kwargs.taks is not an argument of SweLiteEnv (did you mean "tasks"?)'),
    (["--env", "tests.test_cli:ParityEnv", "env.kwargs.prefx=hi"], 'env.kwargs.prefx is not an argument of ParityEnv'),
    (["--env", "tests.test_cli:BrokenResetEnv"], "env.kwargs: env 'tests.test_cli:BrokenResetEnv' failed at reset"),
])
def test_train_preflight_stops_a_run_whose_env_cannot_run(tmp_path, capsys, argv, expected):
    """Guards runs that 'trained' on 100% masked env errors and exited 0: the env is built, reset and stepped
    once before any model is loaded, and a failure is one line naming the key (exit 2, no run directory)."""
    assert main(["train", *argv, *TINY_RUN, f"trainer.run_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_unknown_env_says_both_ways_to_make_it_known(capsys):
    assert main(["train", "--env", "my_env", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert '"my_env" is not registered' in err and "module:Class" in err and 'entry point in group "agentrl.envs"' in err
    assert main(["eval", "--env", "swe_lte", "--oracle", "gold"]) == 2
    assert 'Did you mean "swe_lite"?' in capsys.readouterr().err


def test_override_errors_are_blamed_on_the_command_line(capsys):
    """Guards '…/configs/calc.yaml: 1 problem: trainer.lr=-1' (the preset's absolute path blamed for an override)."""
    assert main(["train", "--env", "calc", "trainer.lr=-1", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agentrl train: error: command line: 1 problem: trainer.lr=-1"), err


class SlowEnv(ParityEnv):
    """Each step takes a while, so a SIGINT lands mid-run."""

    def step(self, action):
        import time

        time.sleep(0.5)
        return super().step(action)


def test_ctrl_c_during_train_says_how_to_resume(tmp_path):
    import os
    import signal
    import time
    from pathlib import Path

    run = tmp_path / "run"
    repo = Path(__file__).resolve().parents[1]
    argv = [sys.executable, "-m", "agentrl", "train", "--env", "tests.test_cli:SlowEnv", *TINY_RUN,
            "trainer.steps=100", f"trainer.run_dir={run}"]
    env = {**os.environ, "PYTHONPATH": str(repo)}
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 240
        while not (run / "checkpoints" / "step_000001").exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert f"continue from its last checkpoint with: agentrl train --resume {run}" in err
