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


class TextResetEnv(ParityEnv):
    """reset returns the prompt text instead of (messages, info): check_env refuses it, and so must a run."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed, options=options)
        return "What is 2 + 2?"


TINY_RUN = ["model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=2", "rollout.max_new_tokens=8",
            "rollout.max_context_tokens=128", "rollout.max_turns=1", "trainer.tensorboard=false", "trainer.lr=1e-3",
            "trainer.steps=2", "trainer.checkpoint_every=1", "trainer.keep_checkpoints=3", "rollout.max_batch_size=1",
            "trainer.sample_every=0"]


def _rows(run, step):
    rows = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    return sorted((r["task_id"], r["segments"][0]["token_ids"]) for r in rows if r["metrics"]["train/step"] == step)


@pytest.mark.slow
def test_bare_resume_continues_the_run_with_its_own_config(tmp_path, capsys):
    """Guards resume ignoring config.yaml (it trained the preset env with default settings, and keep-2 pruned
    the run's checkpoints): `agentrl train --resume RUN` alone must reproduce the uninterrupted step."""
    full = tmp_path / "full"
    assert main(["train", "--env", "test_cli_parity", *TINY_RUN, f"trainer.run_dir={full}"]) == 0
    run = tmp_path / "resumed"
    shutil.copytree(full, run)
    shutil.rmtree(run / "checkpoints" / "step_000002")
    lines = (full / "trajectories.jsonl").read_text().splitlines()
    (run / "trajectories.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["metrics"]["train/step"] == 1))
    saved = (run / "config.yaml").read_text()
    capsys.readouterr()

    assert main(["train", "--resume", str(run)]) == 0
    assert "agentrl train test_cli_parity" in capsys.readouterr().err
    assert _rows(run, 2) == _rows(full, 2) and _rows(run, 2) != _rows(run, 1)
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    assert (run / "config.yaml").read_text() == saved


@pytest.mark.slow
def test_a_stop_during_step_1_resumes_without_redoing_the_warm_start(tmp_path, capsys, monkeypatch):
    """Guards Ctrl-C during step 1 after the expert warm start saying "nothing to resume" (the swe_lite preset lost
    its 12-min warm start): the warm start is checkpointed as step 0, the stop names --resume, and the resume
    trains step 1 from the warm-started weights without running the warm start again."""
    import agentrl.trainer.loop as loop
    import agentrl.trainer.sft as sft

    async def stop(run, step):
        raise KeyboardInterrupt

    run = tmp_path / "run"
    monkeypatch.setattr(loop, "train_step", stop)
    argv = ["train", "--env", "test_cli_parity", *TINY_RUN, "trainer.steps=1", "sft.episodes=2", f"trainer.run_dir={run}"]
    assert main(argv) == 130
    err = capsys.readouterr().err
    assert f"continue from its last checkpoint with: agentrl train --resume {run}" in err, err
    assert [p.name for p in (run / "checkpoints").iterdir()] == ["step_000000"]
    warm = (run / "sft_metrics.jsonl").read_text()

    monkeypatch.undo()

    async def no_warm_start(*args, **kwargs):
        raise AssertionError("the warm start ran again on resume")

    monkeypatch.setattr(sft, "run_sft", no_warm_start)
    assert main(["train", "--resume", str(run)]) == 0
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000000", "step_000001"]
    assert [json.loads(x)["step"] for x in (run / "metrics.jsonl").read_text().splitlines()] == [1]
    assert (run / "sft_metrics.jsonl").read_text() == warm


@pytest.mark.slow
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
    (["--env", "tests.test_cli:BrokenResetEnv"], "env 'tests.test_cli:BrokenResetEnv' failed at reset: "
                                                 "FileNotFoundError: tasks.jsonl (raised at tests/test_cli.py:"),
])
def test_train_preflight_stops_a_run_whose_env_cannot_run(tmp_path, capsys, argv, expected):
    """Guards runs that 'trained' on 100% masked env errors and exited 0: the env is built, reset and stepped
    once before any model is loaded, and a failure is one line naming the key (exit 2, no run directory)."""
    assert main(["train", *argv, *TINY_RUN, f"trainer.run_dir={tmp_path / 'run'}"]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    assert not (tmp_path / "run").exists()


def test_a_launcher_with_several_ranks_and_strategy_single_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Guards `torchrun --nproc-per-node 2 -m agentrl train --env calc` (strategy single by default): two full copies
    wrote metrics rows twice into one run folder and one crashed in its checkpoint. Each rank sees WORLD_SIZE=2 and
    refuses in one line (exit 2) before a run folder or a model exists."""
    monkeypatch.setenv("WORLD_SIZE", "2")
    run = tmp_path / "run"
    for command in ("train", "sft"):
        assert main([command, "--env", "test_cli_parity", *TINY_RUN, f"trainer.run_dir={run}"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "WORLD_SIZE=2" in err and "trainer.strategy=fsdp" in err, err
        assert not run.exists()


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


@pytest.mark.slow
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


# ---- small traps a newcomer hit: each one line, exit 2, no traceback -------------------------------------

def test_print_config_says_what_it_prints_and_round_trips(tmp_path):
    """Guards bare YAML from --print-config: a header comment says what it is and how to use it, and the YAML
    under it, saved and passed back as --config, resolves to the same config."""
    r = _run("train", "--env", "calc", "trainer.steps=3", "--print-config")
    assert r.returncode == 0, r.stderr
    head = r.stdout.splitlines()[:2]
    assert head[0].startswith("# agentrl train: the resolved config of this command for env 'calc', from the "
                              "defaults < configs/calc.yaml < the command-line overrides"), head
    assert head[1].startswith("# Every key is documented in agentrl/config.py") and "--config FILE" in head[1]
    (tmp_path / "c.yaml").write_text(r.stdout)
    again = _run("train", "--config", str(tmp_path / "c.yaml"), "--print-config")
    assert again.returncode == 0, again.stderr
    assert again.stdout.splitlines()[2:] == r.stdout.splitlines()[2:]
    assert "steps: 3" in r.stdout


def test_eval_requires_env_instead_of_assuming_swe_lite():
    r = _run("eval", "--oracle", "gold")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "the following arguments are required: --env" in r.stderr


def test_train_without_env_is_refused_in_one_line_unless_a_config_file_sets_it(tmp_path, capsys):
    """Guards `agentrl train` with no --env training calc with the bare defaults (no preset, no warm start) for
    half an hour: like `agentrl eval`, train and sft refuse it (one line, exit 2, no run folder); a --config file
    that sets env.name names the env."""
    run = tmp_path / "run"
    for command in ("train", "sft"):
        assert main([command, *TINY_RUN, f"trainer.run_dir={run}"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "Traceback" not in err, err
        assert err.startswith(f"agentrl {command}: error: no env given") and "--env NAME" in err, err
        assert not run.exists()
    (tmp_path / "no_env.yaml").write_text("trainer: {steps: 1}\n")
    assert main(["train", "--config", str(tmp_path / "no_env.yaml"), "--print-config"]) == 2
    assert "no_env.yaml does not set env.name" in capsys.readouterr().err
    (tmp_path / "env.yaml").write_text("env: {name: test_cli_parity}\n")
    assert main(["train", "--config", str(tmp_path / "env.yaml"), "--print-config"]) == 0
    assert "name: test_cli_parity" in capsys.readouterr().out


def test_eval_num_tasks_on_an_env_with_a_task_list_points_at_limit(capsys):
    """Guards `agentrl eval --env swe_lite --num-tasks 3` running all 123 test tasks without a word: --num-tasks
    counts seed tasks, so an env with its own task list refuses it and names --limit; a misspelt option is one
    line with a did-you-mean."""
    assert main(["eval", "--env", "swe_lite", "--oracle", "gold", "--num-tasks", "3"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean --limit 3" in err, err
    with pytest.raises(SystemExit) as e:
        main(["eval", "--env", "swe_lite", "--oracle", "gold", "--limt", "3"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and err.count("\n") == 1, err
    assert "unrecognized arguments: --limt 3 (did you mean --limit?)" in err, err


@pytest.mark.slow
def test_an_envs_own_exception_in_preflight_is_the_envs_error_not_a_kwargs_problem(tmp_path):
    """Guards 'env.kwargs: env ... failed at reset' for an env whose own code raised (no kwargs were given): the
    line names the env, the stage, the exception and where it was raised, and blames no config key."""
    r = _run("train", "--env", "tests.test_cli:BrokenResetEnv", *TINY_RUN, f"trainer.run_dir={tmp_path / 'run'}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert "agentrl train: error: env 'tests.test_cli:BrokenResetEnv' failed at reset: FileNotFoundError: " \
           "tasks.jsonl (raised at tests/test_cli.py:" in r.stderr, r.stderr
    assert "in reset; the env's own error with env.kwargs={})" in r.stderr and "error: env.kwargs:" not in r.stderr
    r = _run("eval", "--env", "tests.test_cli:BrokenResetEnv", "--oracle", "expert", "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert r.stderr.startswith("agentrl eval: error: env 'tests.test_cli:BrokenResetEnv' failed at reset: "
                               "FileNotFoundError: tasks.jsonl (raised at tests/test_cli.py:"), r.stderr


def test_an_env_whose_reset_returns_text_is_refused_before_the_model_loads(tmp_path):
    """Guards a preflight that passed an env whose reset returns a str (issue 55 item 10): every episode would fail.
    train and eval refuse it in check_env's words, in one line, before a model is loaded."""
    r = _run("train", "--env", "tests.test_cli:TextResetEnv", *TINY_RUN, f"trainer.run_dir={tmp_path / 'run'}")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "Traceback" not in r.stderr, r.stderr
    assert ("agentrl train: error: env 'tests.test_cli:TextResetEnv' failed at reset: TextResetEnv.reset() returned "
            "str; expected (messages, info)") in r.stderr and "returns the prompt text itself" in r.stderr, r.stderr
    assert not (tmp_path / "run").exists()
    r = _run("eval", "--env", "tests.test_cli:TextResetEnv", "--oracle", "expert", "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert "failed at reset: TextResetEnv.reset() returned str" in r.stderr, r.stderr


def test_invalid_yaml_names_the_file_and_the_line(tmp_path):
    """Guards '<unicode string>' and a five-line PyYAML message for a config file with a syntax error."""
    bad = tmp_path / "bad.yaml"
    bad.write_text("trainer:\n  lr: [1e-6\n")
    r = _run("train", "--env", "calc", "--config", str(bad), "--print-config")
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"agentrl train: error: {bad}:3:1: not valid YAML: expected ',' or ']'" in r.stderr, r.stderr
    assert "<unicode string>" not in r.stderr


@pytest.mark.slow
def test_a_missing_init_from_path_is_said_to_be_missing(tmp_path):
    """Guards "unknown model '/x': not a local directory, not a hub id ..." for a mistyped checkpoint path."""
    missing = tmp_path / "runs" / "sft" / "checkpoints" / "step_000000"
    r = _run("train", "--env", "tests.test_cli:ParityEnv", *TINY_RUN, f"trainer.run_dir={tmp_path / 'run'}",
             "--init-from", str(missing))
    assert r.returncode == 2 and r.stderr.count("\n") == 1, r.stderr
    assert f"--init-from {missing}: {missing} does not exist" in r.stderr and "unknown model" not in r.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_check_env_says_what_passed(tmp_path):
    """Guards a silent check_env: the README's custom env, checked as the README says, prints one success line."""
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    code = "import agentrl, examples.custom_env; agentrl.check_env(agentrl.make('guess'))"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=repo)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("check_env: GuessEnv passed: tools, reset/step shapes, gymnasium's checker, "
                               "a format-error step, areset/astep, close twice; the scripted expert finished an "
                               "episode in "), r.stdout


class ConstantEnv(ParityEnv):
    """Every reply scores 1: every group's rewards are equal, so dynamic sampling drops and resamples each one."""

    def step(self, action):
        return [], 1.0, True, False, {}


@pytest.mark.slow
def test_a_run_in_which_no_step_trained_exits_1_and_says_why_its_episodes_grew(tmp_path):
    """Guards exit 0 with 'done' and a checkpoint of the initial weights when every step was SKIPPED, and the
    progress total growing 4 → 12 episodes (dynamic sampling's resamples) without a word."""
    run = tmp_path / "run"
    r = _run("train", "--env", "tests.test_cli:ConstantEnv", *TINY_RUN, f"trainer.run_dir={run}")
    err = " ".join(r.stderr.split())  # the console wraps long lines
    assert r.returncode == 1, r.stderr
    assert "agentrl train: no step trained: all 2 steps were SKIPPED (2× no trainable group: 0 of 12 episodes " \
           "masked, 6 groups sampled (100% dropped)). Every episode scored 1, so no group had a reward difference " \
           "to learn from: the tasks are too easy for this policy. Give it harder ones." in err, err
    assert "Its checkpoint holds the weights the run started from (exit status 1: nothing was trained)" in err
    assert "nothing trained: checkpoint" in err and "done:" not in err and "Traceback" not in err
    assert "(4 → 12 episodes: resampled groups with equal rewards (dynamic sampling))" in err, err
    assert "step 2/2 rollout: 12/12 episodes" in err, err
    first = next(line for line in r.stderr.splitlines() if line.startswith("step 1/2 rollout:"))
    assert first.startswith("step 1/2 rollout: 0/4 episodes") and "→" not in first, first  # no note before a resample


class FlakyToolEnv(ParityEnv):
    """ParityEnv whose tool fails on replies of a length divisible by 3: those episodes end as masked env errors."""

    def step(self, action):
        if len(action) % 3 == 0:
            raise RuntimeError("flaky tool")
        return super().step(action)


@pytest.mark.slow
def test_steps_are_numbered_from_1_in_every_output(tmp_path):
    """Guards step 1 in the console, dashboard and checkpoints being step 0 in metrics.jsonl, TensorBoard,
    samples/ and trajectories.jsonl: one run, every place it writes a step number."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    from agentrl.trainer.plot import panel_series, read_metrics

    run = tmp_path / "run"
    r = _run("train", "--env", "tests.test_cli:FlakyToolEnv", *TINY_RUN, f"trainer.run_dir={run}",
             "trainer.tensorboard=true", "trainer.sample_every=1", "trainer.max_masked_frac=1")
    assert r.returncode == 0, r.stderr
    summaries = [line.split(":")[0] for line in r.stderr.splitlines() if line.startswith("step ") and ": reward" in line]
    assert summaries == ["step 1", "step 2"], r.stderr
    assert [row["step"] for row in read_metrics(run)] == [1, 2]
    tb = EventAccumulator(str(run / "tb"))
    tb.Reload()
    assert {e.step for e in tb.Scalars("rollout/reward_mean")} == {1, 2}
    assert sorted(p.name for p in (run / "samples").iterdir()) == ["step_000001.txt", "step_000002.txt"]
    assert sorted(p.name for p in (run / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    trajs = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    assert {t["metrics"]["train/step"] for t in trajs} == {1, 2}
    panels = dict(panel_series(read_metrics(run)))
    assert panels["reward"]["rollout/reward_mean"][0] == [1, 2]
    # the dashboard's masked-share panel: per step, the share of its episodes that ended masked
    share = [sum(t["termination"] == "env_error" for t in trajs if t["metrics"]["train/step"] == n)
             / sum(t["metrics"]["train/step"] == n for t in trajs) for n in (1, 2)]
    assert 0 < max(share) < 1, share
    assert panels["masked share (episodes not trained on)"]["rollout/masked_share"] == ([1, 2], share)
    plot = _run("plot", str(run))
    assert plot.returncode == 0 and (run / "dashboard.png").stat().st_size > 0, plot.stderr


@pytest.mark.slow
def test_serve_on_a_busy_port_is_one_line_and_exit_2():
    """Guards a 25-line OSError traceback with exit 1 from `agentrl serve --port <busy>` (`agentrl gateway` said
    it in one line with exit 2), said before the model loads (this model does not exist)."""
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        r = _run("serve", "--model", "/nonexistent/model", "--port", str(port))
    assert r.returncode == 2, r.stderr
    assert r.stderr == f"agentrl serve: error: cannot listen on 127.0.0.1:{port}: address already in use; pick " \
                       "another --port (0 = any free port)\n", r.stderr


def test_overrides_may_follow_an_option(capsys):
    """Guards 'unrecognized arguments: trainer.lr=1e-6' for `agentrl train --env calc a=1 --print-config b=2`
    (argparse takes the positional overrides only once); an unknown option is still one line, exit 2."""
    assert main(["train", "--env", "calc", "trainer.steps=3", "--print-config", "trainer.lr=1e-6"]) == 0
    out = capsys.readouterr().out
    assert "  steps: 3\n" in out and "  lr: 1.0e-06\n" in out, out
    with pytest.raises(SystemExit) as e:
        main(["train", "--env", "calc", "--print-config", "--bogus", "trainer.lr=1e-6"])
    assert e.value.code == 2 and "unrecognized arguments: --bogus" in capsys.readouterr().err


def test_every_env_agentrl_envs_lists_has_a_row_in_the_docs_table():
    """Guards docs/envs.md's built-in table without swe_real, which `agentrl envs` lists."""
    from pathlib import Path

    from agentrl.envs import BUILTIN_ENVS

    listed = [line.split()[0] for line in _run("envs").stdout.splitlines() if line.strip()]
    built_in = [name for name in listed if name in BUILTIN_ENVS]  # plug-ins installed here have docs of their own
    table = (Path(__file__).resolve().parents[1] / "docs" / "envs.md").read_text()
    assert "swe_real" in built_in and [name for name in built_in if f"| `{name}` |" not in table] == [], listed


def test_agentrl_envs_and_train_help_name_the_external_agent_forms():
    """Guards `external:` agents being absent from `agentrl envs` and `train --help` (issue 55 item 10): a user who
    brings their own agent finds the two forms where they look for what --env takes."""
    for out in (_run("envs").stdout, _run("train", "--help").stdout):
        assert "external:my_agent.py:run" in out and "external:cmd:python my_agent.py" in out, out
