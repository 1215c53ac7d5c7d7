"""Evaluation jobs: unbiased pass@k, the summary, resumable JSONL, and oracle runs through the real grader."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agentrl.evaluation import load_done, pass_at_k, summarize

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def docker_backend() -> str:
    """'docker', or skip where no Docker engine answers."""
    try:
        from agentrl.sandboxes.docker_backend import docker_client

        docker_client(ping_timeout=3.0)
    except Exception as e:
        pytest.skip(f"needs Docker: {e}")
    return "docker"


def test_pass_at_k_matches_the_definition():
    # 1 - C(n-c, k) / C(n, k): n=5, c=2, k=2 -> 1 - 3/10
    assert pass_at_k(5, 2, 2) == pytest.approx(0.7)
    assert pass_at_k(5, 0, 3) == 0.0 and pass_at_k(5, 4, 2) == 1.0
    assert pass_at_k(10, 3, 1) == pytest.approx(0.3)
    # the unbiased estimator is the probability that k draws without replacement contain a success
    n, c, k = 7, 2, 3
    assert pass_at_k(n, c, k) == pytest.approx(1 - math.prod((n - c - i) / (n - i) for i in range(k)))
    with pytest.raises(ValueError, match="needs at least 4 samples"):
        pass_at_k(3, 1, 4)


def rec(iid, sample, resolved, infra=False, turns=4, fmt=1):
    return {"instance_id": iid, "sample": sample, "resolved": resolved, "infra_error": infra, "turns": turns,
            "n_format_errors": fmt, "timings": {"episode_s": 2.0}}


def test_summary_masks_infra_errors():
    records = [rec("a", 0, True), rec("a", 1, False), rec("b", 0, False), rec("b", 1, False, infra=True)]
    s = summarize(records, samples=2)
    assert s["resolved_rate"] == pytest.approx(1 / 3) and s["infra_errors"] == 1
    assert s["pass@1"] == pytest.approx((0.5 + 0.0) / 2) and s["pass@2"] == pytest.approx(1.0)  # b has 1 sample
    assert s["format_error_rate"] == pytest.approx(3 / 12) and s["mean_turns"] == 4


def test_load_done_drops_a_torn_last_line(tmp_path):
    path = tmp_path / "r.jsonl"
    good = json.dumps(rec("a", 0, True)) + "\n" + json.dumps(rec("a", 1, False)) + "\n"
    path.write_text(good + '{"instance_id": "b", "sam')
    assert set(load_done(path)) == {("a", 0), ("a", 1)}
    assert path.read_text() == good


# `agentrl eval` once cli.COMMANDS lists it; until then the same module through a two-line runner
_RUNNER = ("import argparse, sys; from agentrl.commands import eval as m; p = argparse.ArgumentParser(); "
           "m.add_arguments(p); sys.exit(m.run(p.parse_args(sys.argv[1:])))")


def _eval_cmd(out: Path, *extra: str) -> list[str]:
    from agentrl.cli import COMMANDS

    head = [sys.executable, "-m", "agentrl", "eval"] if "eval" in COMMANDS else [sys.executable, "-c", _RUNNER]
    return [*head, "--env", "swe_lite", "--split", "test", "--backend", "docker", "--concurrency", "1",
            "--out", str(out), "--quiet", *extra]


def oracle_sample():
    """The last task of every module of the test split: 8 modules, fixes of one line and of several, none of them in
    the corpus self-check's sample (each module's first task, tests/envs/swe_lite/test_corpus.py)."""
    from agentrl.envs.swe.tasks import load_tasks

    last = {t.repo: t for t in load_tasks(split="test")}
    return list(last.values())


@pytest.mark.docker
@pytest.mark.slow
@pytest.mark.parametrize("oracle,expected", [("gold", 1.0), ("empty", 0.0)])
def test_oracle_eval(tmp_path, docker_backend, oracle, expected):
    """Guards the eval job's path from an oracle's action to the summary through the real grader, on a shared pool
    of 2 sandboxes that each serve several episodes: a gold fix that does not resolve (the action, the agent's
    sandbox, the grade) or an empty patch that does, an infrastructure error, a record lost or written twice.
    One task per module of the test split (the whole split, 123 tasks, took 3 and 2 minutes and proved nothing
    more about this path; every shipped task's gold and empty grades are the corpus self-check's:
    `python -m agentrl.envs.swe.lite.generate --self-check`)."""
    import asyncio

    from agentrl.envs.swe.tasks import write_tasks

    from agentrl.evaluation import EvalConfig, run_eval

    sample = oracle_sample()
    n = len(sample)
    assert len({t.difficulty for t in sample}) == 2  # one-line fixes and longer ones
    write_tasks(sample, tmp_path / "tasks.jsonl")
    lines = []
    cfg = EvalConfig(out=str(tmp_path / "r.jsonl"), tasks_path=str(tmp_path / "tasks.jsonl"), split="test",
                     oracle=oracle, concurrency=2, backend=docker_backend)
    records = asyncio.run(run_eval(cfg, progress=False, log=lines.append))
    assert sorted(r["instance_id"] for r in records) == sorted(t.instance_id for t in sample)
    assert len(records) == n and all(not r["infra_error"] for r in records)
    assert summarize(records, 1)["resolved_rate"] == expected, [r for r in records if r["resolved"] != bool(expected)]
    assert "resolved rate" in lines[-1] and len((tmp_path / "r.jsonl").read_text().splitlines()) == n


@pytest.mark.docker
@pytest.mark.slow
def test_interrupted_eval_resumes_without_rerunning(tmp_path, docker_backend):
    """Guards the resume contract: SIGINT mid-job keeps finished lines; a re-run only runs the missing ones.
    The job gets SIGINT's default disposition: a runner started in the background by a shell without job
    control ignores SIGINT, its children inherit that, and the job would run to the end."""
    out = tmp_path / "r.jsonl"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(_eval_cmd(out, "--oracle", "gold", "--limit", "3"), cwd=REPO, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not out.exists() or not out.read_text().count("\n")):
        time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    proc.communicate(timeout=60)
    first = out.read_text().splitlines()
    assert 1 <= len(first) < 3, "the job should have been interrupted after its first episode"
    again = subprocess.run(_eval_cmd(out, "--oracle", "gold", "--limit", "3"), cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr
    assert f"resuming {out}: {len(first)} episodes done, {3 - len(first)} to run" in again.stdout + again.stderr
    final = out.read_text().splitlines()
    assert final[: len(first)] == first and len(final) == 3
    assert len({(json.loads(x)["instance_id"], json.loads(x)["sample"]) for x in final}) == 3


def test_eval_command_refuses_bad_combinations(tmp_path):
    import argparse

    from agentrl.commands import eval as command
    from agentrl.errors import AgentRLError

    parser = argparse.ArgumentParser()
    command.add_arguments(parser)
    for argv, message in [(["--env", "swe_lite", "--oracle", "gold", "--model", "tiny"], "either --model or --oracle"),
                          (["--env", "calc", "--oracle", "gold"], "--oracle gold is not offered by env 'calc'"),
                          (["--env", "calc", "--env-kwargs", '{"difficult": 2}', "--oracle", "expert"],
                           "--env-kwargs.difficult is not an argument of CalcEnv"),
                          (["--env", "swe_lite", "--samples", "0"], "--samples must be at least 1"),
                          (["--env", "swe_lite", "--snapshots", "x"], "--snapshots needs --tasks")]:
        with pytest.raises(AgentRLError, match=message):
            command.run(parser.parse_args([*argv, "--out", str(tmp_path / "x.jsonl")]))


@pytest.mark.docker
@pytest.mark.slow
def test_model_eval_with_embedded_engine_and_over_sglang_http(tmp_path, docker_backend):
    """The model path end to end with the tiny model: in process, then through `agentrl serve`'s HTTP API."""
    import asyncio

    from agentrl.engine.embedded import EmbeddedEngine
    from agentrl.engine.serve import start_server
    from agentrl.engine.sglang_client import SGLangClient
    from agentrl.evaluation import EvalConfig, run_eval
    from agentrl.models import load_tokenizer

    async def main():
        tokenizer = load_tokenizer("tiny")
        engine = EmbeddedEngine("tiny", tokenizer, seed=0)
        common = dict(split="dev", limit=1, max_turns=2, max_new_tokens=16, backend=docker_backend)
        local = await run_eval(EvalConfig(out=str(tmp_path / "a.jsonl"), model="tiny", **common), engine, tokenizer,
                               progress=False, log=lambda *_: None)
        runner, url = await start_server(engine, "127.0.0.1", 0)
        client = SGLangClient(url)
        try:
            remote = await run_eval(EvalConfig(out=str(tmp_path / "b.jsonl"), model=url, **common), client, tokenizer,
                                    progress=False, log=lambda *_: None)
        finally:
            await client.close()
            await runner.cleanup()
            await engine.close()
        return local, remote

    local, remote = asyncio.run(main())
    for records in (local, remote):
        assert len(records) == 1 and not records[0]["infra_error"], records
        assert [m["role"] for m in records[0]["transcript"][:1]] == ["assistant"], "the model's words are kept"
        assert 1 <= records[0]["turns"] <= 2 and records[0]["termination"] in ("max_turns", "format_errors", "done")
    assert remote[0]["policy"].startswith("http://127.0.0.1:")


# ---- any env, fail fast, infra retried, nulls, task validation ---------------------------------------------

import agentrl  # noqa: E402
from agentrl.types import user  # noqa: E402


class CoinEnv(agentrl.AgentEnv):
    """Reward 1 for seeds whose task is "heads"; `crash=True` makes every step raise (an env fault)."""

    def __init__(self, crash: bool = False):
        self.crash = crash

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.heads = bool(self.np_random.integers(2))
        return [user("Call it.")], {}

    def step(self, action):
        if self.crash:
            raise RuntimeError("simulated env fault")
        return [], float(self.heads), True, False, {}

    def expert_action(self):
        return "heads"


def _cli(tmp_path, *argv):
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    return subprocess.run([sys.executable, "-m", "agentrl", "eval", "--quiet", *argv], capture_output=True, text=True,
                          timeout=300, cwd=tmp_path, env=env)


@pytest.mark.slow
def test_eval_runs_any_env_with_seeds_as_tasks_and_null_for_what_nobody_graded(tmp_path):
    """Guards `agentrl eval` refusing every env but swe_lite, and p2p_pass: 0.0 for an ungraded episode."""
    out = tmp_path / "calc.jsonl"
    r = _cli(tmp_path, "--env", "calc", "--oracle", "expert", "--num-tasks", "3", "--samples", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(records) == 6 and len({x["instance_id"] for x in records}) == 3
    assert all(x["resolved"] and x["reward"] == 1.0 and not x["infra_error"] for x in records)
    assert not any({"p2p_pass", "f2p_pass", "patch"} & set(x) for x in records), "swe_lite's fields are its hook's"
    assert all(x["transcript"][0]["role"] == "assistant" and "<tool_call>" in x["transcript"][0]["content"]
               for x in records)
    assert "resolved rate      100.0%" in r.stdout


def test_a_record_holds_the_hooks_fields_where_graded_and_null_elsewhere_never_0():
    """Guards p2p_pass: 0.0 for an episode nobody graded (and scores for an infrastructure failure): the fields
    an env's hook declares are null unless the env graded the episode, and the failure table decides infra."""
    from agentrl.evaluation import EvalTask, make_record
    from agentrl.types import TerminationReason, Trajectory

    def record(termination, info, reward=0.0):
        traj = Trajectory(id="t", group_id="g", env_id="e", task_id="x", reward=reward, reward_info=info,
                          termination=TerminationReason(termination), termination_detail="why")
        return make_record(EvalTask(id="x", seed=1), 0, "m", traj, fields=("p2p_pass", "patch"), transcripts=False)

    graded = record("done", {"resolved": True, "p2p_pass": 1.0, "patch": "diff"}, reward=1.0)
    assert graded["resolved"] and graded["p2p_pass"] == 1.0 and graded["patch"] == "diff" and not graded["infra_error"]
    ungraded = record("max_tokens", {"p2p_pass": 0.0})
    assert ungraded["p2p_pass"] is None and ungraded["patch"] is None and ungraded["reward"] == 0.0
    assert not ungraded["infra_error"] and ungraded["error"] == ""
    infra = record("sandbox_error", {"resolved": False, "p2p_pass": 0.0})
    assert infra["infra_error"] and infra["reward"] is None and infra["p2p_pass"] is None and infra["error"] == "why"


@pytest.mark.slow
@pytest.mark.parametrize("env", ["calc", "examples.custom_env:GuessEnv"])
def test_an_untrained_model_scores_0_with_the_training_budget_and_the_summary_says_why(tmp_path, env):
    """Guards eval masking a weak model: with no format-error budget and a context larger than the model's, the
    tiny model babbled until the context overflowed, every episode became a masked engine_error, and the job
    exited 1 ("rerun to retry"). Eval now has training's episode budget, so each episode is scored 0 as
    format_errors after rollout.max_format_errors (3) unparseable actions in a row, and the job exits 0."""
    out = tmp_path / "r.jsonl"
    r = _cli(tmp_path, "--env", env, "--model", "tiny", "--num-tasks", "2", "--out", str(out))
    assert r.returncode == 0, r.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(records) == 2 and not any(x["infra_error"] for x in records), records
    assert all(x["reward"] == 0.0 and not x["resolved"] for x in records)
    assert all(x["termination"] == "format_errors" and x["turns"] == x["n_format_errors"] == 3 for x in records)
    assert "infra errors       0" in r.stdout and "mean reward        0.000" in r.stdout
    assert "endings            2 format_errors (actions that never parsed as a tool call)" in r.stdout, r.stdout


@pytest.mark.slow
def test_infra_errors_fail_the_job_and_are_retried_on_rerun(tmp_path):
    """Guards a job of only infra errors exiting 0 with 'resolved rate 0.0%' and never retrying them."""
    out = tmp_path / "r.jsonl"
    env = ["--env", "tests.test_evaluation:CoinEnv", "--oracle", "expert", "--num-tasks", "4", "--out", str(out)]
    r = _cli(tmp_path, *env, "--env-kwargs", '{"crash": true}')
    assert r.returncode == 1, r.stderr
    assert "no episode could be scored: 4 infra error(s), first: RuntimeError: simulated env fault" in r.stderr
    r = _cli(tmp_path, *env)
    assert r.returncode == 0, r.stderr
    records = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["infra_error"] for x in records] == [True] * 4 + [False] * 4, "the rerun retried the 4 infra errors"
    assert load_done(out).keys() == {(x["instance_id"], 0) for x in records[4:]}
    r = _cli(tmp_path, *env)
    assert r.returncode == 0 and len(out.read_text().splitlines()) == 8, "a third run has nothing left to do"


def test_a_dead_model_server_fails_fast_with_exit_2(tmp_path):
    """Guards 60 s of retries and then exit 0 with 'resolved rate 0.0%' for a server that is not there."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = _cli(tmp_path, "--env", "swe_lite", "--limit", "1", "--model", f"http://127.0.0.1:{port}",
             "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2, r.stderr
    assert f"cannot reach model server http://127.0.0.1:{port}" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "r.jsonl").exists()


@pytest.mark.parametrize("breakage,message", [
    ("patch", "the gold patch does not apply to the snapshot"),
    ("f2p", "FAIL_TO_PASS names test(s) the test patch does not create: tests/test_nope.py::test_missing"),
])
def test_broken_tasks_are_refused_at_load_with_one_line(tmp_path, breakage, message):
    """Guards a raw PatchError traceback (gold patch does not apply) and a silent 0 % (an F2P test nobody creates)."""
    from agentrl.envs.swe.tasks import load_tasks, write_tasks

    task = load_tasks(split="test")[0]
    if breakage == "patch":
        task.patch = task.patch.replace("\n-", "\n-this line is not in the file ", 1)
    else:
        task.FAIL_TO_PASS = [*task.FAIL_TO_PASS, "tests/test_nope.py::test_missing"]
    write_tasks([task], tmp_path / "tasks.jsonl")
    r = _cli(tmp_path, "--env", "swe_lite", "--oracle", "gold", "--tasks", str(tmp_path / "tasks.jsonl"),
             "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2 and message in r.stderr and r.stderr.count("\n") == 1, r.stderr
    assert f"task {task.instance_id}" in r.stderr


class SlowStepEnv(CoinEnv):
    """Every step takes far longer than the job's wall-clock budget."""

    def step(self, action):
        time.sleep(4)
        return super().step(action)


class NoResetEnv(CoinEnv):
    def reset(self, *, seed=None, options=None):
        raise ValueError("tasks file has no 'prompt' column")


@pytest.mark.slow
def test_wall_clock_budget_ends_the_episode_or_the_record_says_why(tmp_path):
    """Guards --episode-timeout-s (then --wall-clock-s) 60 taking 97 s silently: the loop's deadline is the budget itself (it was budget +
    300 s), and an episode that still runs over by more than 10 % carries the reason in its record."""
    out = tmp_path / "r.jsonl"
    r = _cli(tmp_path, "--env", "tests.test_evaluation:SlowStepEnv", "--model", "tiny", "--num-tasks", "1",
             "--episode-timeout-s", "1", "--max-new-tokens", "4", "--out", str(out))
    assert r.returncode == 0, r.stderr
    rec = json.loads(out.read_text())
    assert rec["termination"] == "timeout", rec
    assert rec["timings"]["episode_s"] <= 1.1 or "budget" in rec.get("over_budget", ""), rec


def test_an_env_that_cannot_reset_stops_the_job_before_any_episode(tmp_path):
    r = _cli(tmp_path, "--env", "tests.test_evaluation:NoResetEnv", "--oracle", "expert", "--out", str(tmp_path / "r.jsonl"))
    assert r.returncode == 2, r.stderr
    assert "env 'tests.test_evaluation:NoResetEnv' failed at reset: ValueError: tasks file has no 'prompt' column" in r.stderr
    assert r.stderr.count("\n") == 1
