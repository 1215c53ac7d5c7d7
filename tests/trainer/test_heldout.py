"""Held-out evaluation: Wilson intervals and a real greedy evaluation run on the tiny model."""

from __future__ import annotations

import asyncio

import pytest

from agentrl.models import load_model, load_tokenizer
from agentrl.rollout.embedded import EmbeddedEngine
from agentrl.trainer.heldout import HeldOut, evaluate, paired_sign_test, wilson
from tests.trainer.test_loop import _cfg  # registers the test envs


@pytest.mark.parametrize(("k", "n", "low", "high"), [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0)])
def test_wilson_interval_matches_known_values(k, n, low, high):
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_greedy_evaluation_is_deterministic_and_counts_every_episode(tmp_path):
    cfg = _cfg(tmp_path, "test_parity")
    tok = load_tokenizer("tiny")

    async def run():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        try:
            return [await evaluate(cfg, engine, tok, 6) for _ in range(2)]
        finally:
            await engine.close()

    first, second = asyncio.run(run())
    assert first.n == 6 and first.masked == 0
    assert first.mean == second.mean, "greedy held-out evaluation must not depend on the run"
    assert len(first.per_task) == 6 and first.per_task == second.per_task
    assert sum(first.per_task.values()) / 6 == pytest.approx(first.mean)
    assert first.low <= first.mean <= first.high


def _outcomes(solved: dict[int, bool]) -> HeldOut:
    return HeldOut(mean=0.0, low=0.0, high=1.0, n=len(solved), masked=0,
                   per_task={seed: float(ok) for seed, ok in solved.items()})


def test_paired_sign_test_counts_discordant_tasks_and_gives_the_exact_p_value():
    before = _outcomes({i: i < 10 for i in range(20)})  # solves tasks 0-9
    after = _outcomes({i: i == 0 or 2 <= i < 18 for i in range(20)})  # loses task 1, gains 10-17
    gained, lost, p = paired_sign_test(before, after)
    assert (gained, lost) == (8, 1)
    assert p == pytest.approx(2 * (1 + 9) / 2**9)  # two-sided exact binomial, n = 9 discordant, k = 1
    assert paired_sign_test(before, before) == (0, 0, 1.0)
    # tasks only one side scored (masked on the other) are left out
    assert paired_sign_test(before, _outcomes({100: True})) == (0, 0, 1.0)
