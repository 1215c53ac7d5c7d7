"""Held-out evaluation: Wilson intervals and a real greedy evaluation run on the tiny model."""

from __future__ import annotations

import asyncio

import pytest

import agentrl
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.evaluation import HELDOUT_STEP
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.collect import task_seed
from agentrl.trainer.heldout import HeldOut, evaluate, paired_sign_test, wilson
from agentrl.types import user


class SeedRewardEnv(agentrl.AgentEnv):
    """Reward depends only on the task seed (1 when seed % 3 == 0), whatever the model says, and a seed that is
    3 mod 7 crashes (an env fault, to be masked): the expected summary is known in advance."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.seed_ = seed or 0
        return [user("Say anything.")], {"task_id": str(seed)}

    def step(self, action):
        if self.seed_ % 7 == 3:
            raise RuntimeError("simulated env fault")
        return [], float(self.seed_ % 3 == 0), True, False, {}


agentrl.register("test_seed_reward", SeedRewardEnv, description="reward known from the seed")


def _cfg(tmp_path, *overrides):
    return load_config(None, overrides=["env.name=test_seed_reward", "model.name=tiny", "rollout.max_new_tokens=4",
                                        "rollout.max_context_tokens=128", "rollout.max_turns=1", "rollout.seed=5",
                                        f"trainer.run_dir={tmp_path / 'run'}", *overrides])


@pytest.mark.parametrize(("k", "n", "low", "high"), [(0, 10, 0.0, 0.2775), (5, 10, 0.2366, 0.7634), (10, 10, 0.7225, 1.0)])
def test_wilson_interval_matches_known_values(k, n, low, high):
    lo, hi = wilson(k, n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_heldout_scores_the_heldout_seeds_masks_env_faults_and_is_deterministic(tmp_path):
    """Guards which tasks held-out evaluation runs (seeds of the held-out namespace, from rollout.seed), how it
    averages (env faults masked, not scored 0) and that greedy decoding makes it repeatable."""
    cfg = _cfg(tmp_path)
    tok = load_tokenizer("tiny")
    episodes = 30
    seeds = [task_seed(5, HELDOUT_STEP, 0, i) for i in range(episodes)]
    scored = [s for s in seeds if s % 7 != 3]
    expected = sum(s % 3 == 0 for s in scored) / len(scored)
    assert 0 < expected < 1 and len(scored) < episodes, "the seeds must exercise both rewards and the masking"

    async def run():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        try:
            return [await evaluate(cfg, engine, tok, episodes) for _ in range(2)]
        finally:
            await engine.close()

    first, second = asyncio.run(run())
    assert first.n == len(scored) and first.masked == episodes - len(scored)
    assert first.mean == pytest.approx(expected)
    assert (first.low, first.high) == pytest.approx(wilson(expected * len(scored), len(scored)))
    assert first.per_task == {s: float(s % 3 == 0) for s in scored} == second.per_task


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
