"""Shared-prefix training forwards: a prompt several rows start with runs once, with the plain path's values and
gradients (agentrl.trainer.prefix)."""

from __future__ import annotations

import pytest
import torch

from agentrl.models import load_model
from agentrl.trainer.batch import build_minibatch, microbatches
from agentrl.trainer.loop import enable_gradient_checkpointing
from agentrl.trainer.prefix import stats
from agentrl.trainer.prefix_plan import MIN_PREFIX, plan_shared_prefixes
from agentrl.trainer.update import policy_logprobs
from agentrl.types import Segment, Trajectory


def _traj(i: int, segments: list[list[int]], g: torch.Generator) -> Trajectory:
    """A trajectory whose tokens are the prompt of each segment; every third token (by a random draw) is the
    policy's, with a made-up behaviour logprob."""
    t = Trajectory(id=f"t{i}", group_id="g", env_id="e", task_id="k")
    for tokens in segments:
        s = Segment()
        for tok in tokens:
            if int(torch.randint(0, 3, (1,), generator=g)) == 0:
                s.append_sampled([tok], [-0.5], [3])
            else:
                s.append_prompt([tok])
        t.segments.append(s)
    return t


def _shared_prefix_batch():
    """Rows of a micro-batch: group A (prompt of 40 tokens, 3 rows, one of them the prompt plus one token) and
    group B (prompt of 70 tokens, 2 rows; one of them has a second, unrelated segment) interleaved, a lone row,
    and a row that shares fewer than MIN_PREFIX tokens with group A."""
    g = torch.Generator().manual_seed(3)

    def rand(n: int) -> list[int]:
        return torch.randint(1, 500, (n,), generator=g).tolist()

    a, b = rand(40), rand(70)
    rows = [
        [a + rand(9)],
        [b + rand(5)],
        [a + rand(1)],  # the prefix plus one token
        [rand(23)],  # lone
        [b + rand(12), rand(17)],  # a second segment, in a row of its own
        [a[:MIN_PREFIX - 4] + rand(30)],  # shares too little with group A to be worth it
        [a + rand(14)],
    ]
    trajs = [_traj(i, segs, g) for i, segs in enumerate(rows)]
    mb = build_minibatch(trajs, [1.0, -0.5, 0.25, -1.0, 0.75, 0.5, -0.25])
    (micro,) = microbatches(mb, token_budget=4096)
    return mb, micro


def _run(model, micro, mb, share_prefix: bool):
    """Logprobs, entropy and parameter gradients of an advantage-weighted masked loss."""
    model.zero_grad(set_to_none=True)
    lp, ent = policy_logprobs(model, micro, mb.targets, temperature=0.7, chunk=16, entropy=True, actions_only=True,
                              share_prefix=share_prefix)
    (lp * mb.advantages * mb.loss_mask).sum().backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    return lp.detach(), ent, grads


def test_plan_groups_rows_by_longest_common_prefix_and_leaves_short_overlaps_alone():
    mb, micro = _shared_prefix_batch()
    lengths = micro.valid.sum(1).tolist()
    groups = plan_shared_prefixes(micro.input_ids, lengths)
    assert sorted(groups) == [([0, 2, 7], 40), ([1, 4], 70)]  # row 5 is the second segment of trajectory 4
    # three rows share 40 tokens, two of them 100: the pair skips 100 tokens, the trio 2·40 = 80
    g = torch.Generator().manual_seed(0)
    p, q = torch.randint(1, 500, (40,), generator=g), torch.randint(1, 500, (60,), generator=g)
    ids = torch.stack([torch.cat([p, q, torch.randint(1, 500, (5,), generator=g)]) for _ in range(2)]
                      + [torch.cat([p, torch.randint(1, 500, (65,), generator=g)])])
    assert plan_shared_prefixes(ids, [105, 105, 105]) == [([0, 1], 100)]
    assert plan_shared_prefixes(ids, [105, 105, 105], min_prefix=101) == []


@pytest.mark.parametrize("mode", ["sdpa", "checkpointing", "eager"])
def test_shared_prefix_forward_equals_the_plain_path_in_logprobs_entropy_and_gradients(mode):
    """The bug this guards: suffix rows that do not see their prefix (a cache dropped by checkpointed layers,
    wrong positions, a mask off by one or of the wrong kind for eager attention, which adds it to the scores) or
    a prefix whose gradient counts one row only."""
    mb, micro = _shared_prefix_batch()
    action = mb.loss_mask > 0
    model = load_model("tiny").train()
    if mode == "eager":
        model.set_attn_implementation("eager")
    if mode == "checkpointing":
        enable_gradient_checkpointing(model)  # as the trainer does (trainer.gradient_checkpointing, the default)
    stats.reset()
    lp_plain, ent_plain, g_plain = _run(model, micro, mb, share_prefix=False)
    assert stats.forwards == 0
    lp, ent, g = _run(model, micro, mb, share_prefix=True)
    assert stats.forwards == 1 and stats.groups == 2 and stats.shared_rows == 5
    torch.testing.assert_close(lp[action], lp_plain[action], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(ent[action], ent_plain[action], atol=1e-5, rtol=1e-5)
    assert g.keys() == g_plain.keys() and len(g) == len(list(model.parameters()))
    for name in g:
        # fp32 sums over differently shaped forwards: equal up to rounding (~1e-6 of the largest entry)
        torch.testing.assert_close(g[name], g_plain[name], atol=2e-5, rtol=1e-4, msg=name)


def test_eval_forward_is_the_same_with_and_without_sharing():
    """π_old / π_ref recomputes run under no_grad in eval mode: the same values."""
    mb, micro = _shared_prefix_batch()
    model = load_model("tiny")
    with torch.no_grad():
        plain, _ = policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=64, share_prefix=False)
        shared, _ = policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=64)
    torch.testing.assert_close(shared, plain, atol=1e-5, rtol=1e-5)


def test_each_shared_prefix_is_computed_once():
    """Count the positions the embedding layer sees: each group's prefix once, each member's suffix, the rest."""
    mb, micro = _shared_prefix_batch()
    model = load_model("tiny")
    seen: list[tuple[int, int]] = []
    hook = model.base_model.embed_tokens.register_forward_hook(lambda m, args, out: seen.append(tuple(args[0].shape)))
    lengths = micro.valid.sum(1).tolist()
    try:
        with torch.no_grad():
            policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=64, share_prefix=False)
            assert seen == [tuple(micro.input_ids.shape)]  # today: every row in full
            seen.clear()
            stats.reset()
            policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=64)
    finally:
        hook.remove()
    lone = [lengths[3], lengths[5], lengths[6]]
    suffixes = [lengths[r] - 40 for r in (0, 2, 7)] + [lengths[r] - 70 for r in (1, 4)]
    assert seen == [(3, max(lone)), (2, 70), (5, max(suffixes))]  # lone rows, the 2 prefixes, the suffixes
    assert stats.prefix_tokens == 40 + 70 and stats.skipped_tokens == 2 * 40 + 70


@pytest.mark.slow
def test_shared_prefix_gradients_are_bitwise_reproducible():
    """Two identical updates must give identical weights (tests/trainer/test_update.py compares them with atol=0):
    the gradients a shared prefix sums over its rows must be added in a fixed order. Advanced indexing's backward
    (index_put_ with accumulate, sorted in parallel) did not: on this GRPO-shaped batch (3 groups × 4 rows) about
    one run in three differed in the last bit."""
    g = torch.Generator().manual_seed(5)
    prompts = [torch.randint(1, 500, (40,), generator=g).tolist() for _ in range(3)]
    trajs = [_traj(i, [p + torch.randint(1, 500, (12,), generator=g).tolist()], g)
             for i, p in enumerate(p for p in prompts for _ in range(4))]
    mb = build_minibatch(trajs, torch.randn(12, generator=g).tolist())
    (micro,) = microbatches(mb, token_budget=4096)
    first = None
    for _ in range(10):
        _, _, grads = _run(load_model("tiny").train(), micro, mb, share_prefix=True)
        first = first or grads
        assert all(torch.equal(grads[n], first[n]) for n in first)


def _grpo_batch(groups: int, rows: int, prompt: int, tail: int, seed: int = 7):
    """groups × rows single-segment trajectories: one random prompt per group, then a random tail of its own."""
    g = torch.Generator().manual_seed(seed)
    heads = [torch.randint(1, 500, (prompt,), generator=g).tolist() for _ in range(groups)]
    trajs = [_traj(i, [h + torch.randint(1, 500, (tail + i % 3,), generator=g).tolist()], g)
             for i, h in enumerate(h for h in heads for _ in range(rows))]
    return build_minibatch(trajs, torch.randn(groups * rows, generator=g).tolist())


def test_planner_budget_counts_a_shared_prompt_once():
    """Rows of 80 + ~10 tokens: the plain budget of 200 fits 2 rows; counting each group's prompt once, a group of
    4 costs 80 + 4 × 12 and fits whole, so sharing has something to share (and the blocks stay contiguous)."""
    from agentrl.trainer.prefix_plan import shared_cost

    mb = _grpo_batch(groups=3, rows=4, prompt=80, tail=10)
    plain = microbatches(mb, token_budget=200)
    shared = microbatches(mb, token_budget=200, share_prefix=True)
    assert [m.input_ids.shape[0] for m in plain] == [2] * 6
    assert [m.input_ids.shape[0] for m in shared] == [4, 4, 4]
    assert [(m.start, m.end) for m in shared] == [(s, e) for s, e in zip(
        [plain[0].start, plain[2].start, plain[4].start], [plain[1].end, plain[3].end, plain[5].end], strict=True)]
    for m in shared:
        rows = [m.input_ids[r, :n].tolist() for r, n in enumerate(m.valid.sum(1).tolist())]
        assert shared_cost(rows) == 80 + 4 * max(len(r) - 80 for r in rows) <= 200
    assert shared_cost([[1] * 50, [2] * 70]) == 2 * 70  # nothing shared: rows × longest, as plan_rows counts


@pytest.mark.slow
@pytest.mark.parametrize("epochs", [1, 2])
def test_update_with_shared_prefixes_equals_the_plain_update(tmp_path, epochs):
    """train_on_minibatch end to end (π_old from the training forward, or recomputed for two epochs): the same
    weights with trainer.share_prefix on (fewer, shared micro-batches) and off."""
    import dataclasses

    from agentrl.config import load_config
    from agentrl.trainer.update import train_on_minibatch, update_config_from

    mb = _grpo_batch(groups=3, rows=4, prompt=80, tail=10)
    cfg = load_config(None, overrides=["model.name=tiny", "trainer.micro_batch_tokens=200",
                                       f"trainer.ppo_epochs={epochs}", f"trainer.run_dir={tmp_path}"])
    traj_adv = torch.tensor([float(mb.advantages[s]) for s, _ in mb.segment_bounds])  # one segment each
    weights, metrics = [], []
    for share in (False, True):
        ucfg = dataclasses.replace(update_config_from(cfg), share_prefix=share)
        model = load_model("tiny").train()
        opt = torch.optim.SGD(model.parameters(), lr=0.5)
        stats.reset()
        m = train_on_minibatch(model, opt, mb, ucfg, current_version=3, traj_advantages=traj_adv)
        assert (stats.forwards > 0) == share
        weights.append(model.state_dict())
        metrics.append(m)
    assert metrics[0]["trainer/micro_batches"] == 6 and metrics[1]["trainer/micro_batches"] == 3
    for name, w in weights[0].items():
        torch.testing.assert_close(weights[1][name], w, atol=1e-5, rtol=0, msg=name)
