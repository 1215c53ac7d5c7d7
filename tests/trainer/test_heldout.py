"""Held-out evaluation: Wilson intervals and a real greedy evaluation run on the tiny model."""

from __future__ import annotations

import asyncio

import pytest

from agentrl.models import load_model, load_tokenizer
from agentrl.rollout.embedded import EmbeddedEngine
from agentrl.trainer.heldout import evaluate, wilson
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
    assert first.low <= first.mean <= first.high
