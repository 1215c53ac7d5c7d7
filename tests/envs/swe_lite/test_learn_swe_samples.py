"""The k-sample held-out evaluation (issue 54 item 2): K episodes per task at the recipe's temperature, sample j of
a task drawing with the same seeds whichever checkpoint runs it, per-task means over the K, and a resume that keeps
every finished (task, sample) episode. Guards the paired design against its quiet failures: seeds that differ
between phases (the comparison stops being paired), a task mean over fewer samples than it says, a resumed
evaluation that runs kept samples again or never runs the missing ones."""

from __future__ import annotations

import asyncio
import runpy
from pathlib import Path

import agentrl.envs.swe.expert as expert
import pytest
from agentrl.envs.swe.grading.grader import REPO
from agentrl.envs.swe_lite.benchmark import held_out_tasks, resolved_rate, sampling_seed

from agentrl.config import load_config
from agentrl.engine.protocol import Generation
from agentrl.models import load_tokenizer
from agentrl.rollout.chat import ChatRenderer
from agentrl.rollout.seeds import turn_seed

BENCH = Path(__file__).resolve().parents[3] / "bench" / "learn_swe.py"
K = 2


class SeedReader:
    """An engine that plays the expert's plan in an episode whose first turn's seed has parity `solve_parity`, else
    submits at once (unresolved), and records per episode the task and every (seed, temperature) it was asked
    to sample with. Two of them with opposite parities are two checkpoints that differ on every episode."""

    version = 0

    def __init__(self, tokenizer, tasks, solve_parity: int):
        self.tokenizer, self.renderer, self.tasks = tokenizer, ChatRenderer(tokenizer), tasks
        self.plans = {t.instance_id: expert.plan(t, REPO, level=0) for t in tasks}
        self.parity = solve_parity
        self.episodes: dict[str, dict] = {}  # session id -> {"task", "solve", "seeds", "temperatures"}

    async def generate(self, input_ids, sampling, *, session_id=None):
        if session_id not in self.episodes:
            text = self.tokenizer.decode(input_ids)
            task = next(t.instance_id for t in self.tasks if t.problem_statement[:60] in text)
            self.episodes[session_id] = {"task": task, "solve": sampling.seed % 2 == self.parity, "seeds": [],
                                         "temperatures": []}
        ep = self.episodes[session_id]
        ep["seeds"].append(sampling.seed)
        ep["temperatures"].append(sampling.temperature)
        plan = self.plans[ep["task"]]
        ids = self.renderer.action_ids(plan[len(ep["seeds"]) - 1] if ep["solve"] else plan[-1])
        return Generation(ids, [-0.1] * len(ids), "stop", [0] * len(ids))

    def by_first_seed(self) -> dict[int, dict]:
        return {ep["seeds"][0]: ep for ep in self.episodes.values()}


@pytest.mark.docker
def test_k_samples_are_paired_by_seed_averaged_per_task_and_resumed_by_task_and_sample(docker_backend):
    tasks = held_out_tasks("test", 0, 2)
    cfg = load_config("swe_lite", None, overrides=[f"env.kwargs.backend={docker_backend}", "env.kwargs.command_timeout_s=20",
                                                   "rollout.temperature=0.7"])
    tokenizer = load_tokenizer("smollm2-135m-instruct")

    def evaluate(engine, done=None):
        records = []
        held = asyncio.run(resolved_rate(cfg, engine, tokenizer, tasks, 0, samples=K, done=done,
                                         on_record=records.append))
        return held, records

    # phase A resumes an evaluation that kept sample 0 of the first task (a resolved episode); phase B runs afresh
    t0 = tasks[0].instance_id
    kept = {(t0, 0): {"instance_id": t0, "sample": 0, "resolved": True, "infra_error": False,
                      "sampling_seed": sampling_seed(t0, 0), "kept": True}}
    first, second = SeedReader(tokenizer, tasks, 0), SeedReader(tokenizer, tasks, 1)
    held_a, recs_a = evaluate(first, done=kept)
    held_b, recs_b = evaluate(second)

    # every (task, sample) once (phase A: all but the kept one), its recorded seed the one derived from (task, j)
    everything = sorted((t.instance_id, j) for t in tasks for j in range(K))
    assert sorted((r["instance_id"], r["sample"]) for r in recs_b) == everything
    assert sorted((r["instance_id"], r["sample"]) for r in recs_a) == [x for x in everything if x != (t0, 0)]
    for r in recs_a + recs_b:
        assert r["sampling_seed"] == sampling_seed(r["instance_id"], r["sample"]) and not r["infra_error"]
    assert len({r["sampling_seed"] for r in recs_b}) == len(recs_b)  # samples of a task differ

    # the engine was asked for exactly those seeds (turn k: turn_seed(episode seed, k)), at the recipe's temperature,
    # and never for the kept episode
    for engine, recs in ((first, recs_a), (second, recs_b)):
        episodes = engine.by_first_seed()
        assert len(episodes) == len(recs)
        for r in recs:
            ep = episodes[turn_seed(r["sampling_seed"], 0)]
            assert ep["task"] == r["instance_id"]
            assert ep["seeds"] == [turn_seed(r["sampling_seed"], k) for k in range(len(ep["seeds"]))]
            assert set(ep["temperatures"]) == {0.7}
            assert r["resolved"] == ep["solve"]  # the expert's plan fixes the bug; a bare submit does not
    # paired: each (task, sample) of phase A recorded and was asked for the seeds phase B was
    seeds_b = {(r["instance_id"], r["sample"]): r["sampling_seed"] for r in recs_b}
    assert all(seeds_b[r["instance_id"], r["sample"]] == r["sampling_seed"] for r in recs_a)
    assert first.by_first_seed().keys() < second.by_first_seed().keys()
    assert {ep["solve"] for ep in second.episodes.values()} == {True, False}  # the means below mean something

    # a task's outcome is its mean over its K samples, the kept one included
    for held, recs in ((held_a, [*kept.values(), *recs_a]), (held_b, recs_b)):
        assert held.n == len(tasks)
        for t in tasks:
            mine = [r["resolved"] for r in recs if r["instance_id"] == t.instance_id]
            assert len(mine) == K and held.per_task[t.instance_id] == pytest.approx(sum(mine) / K)
    t1 = tasks[1].instance_id  # no kept episode: the two phases solve complementary samples
    assert held_a.per_task[t1] + held_b.per_task[t1] == pytest.approx(1.0)


def test_pilot_and_no_greedy_need_samples(tmp_path):
    main = runpy.run_path(str(BENCH))["main"]
    for flag in ("--pilot", "--no-greedy"):
        with pytest.raises(SystemExit):
            main(["--quick", flag, "--out", str(tmp_path)])
    assert not any(tmp_path.iterdir())
