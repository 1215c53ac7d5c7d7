"""Packing: flat alignment to predicted tokens, budgeted contiguous micro-batches, no cross-segment attention."""

from __future__ import annotations

import torch

from agentrl.models import load_model
from agentrl.trainer.batch import build_minibatch, microbatches
from agentrl.types import Segment, Trajectory


def _traj(i: int, segments: list[list[tuple[int, int]]]) -> Trajectory:
    t = Trajectory(id=f"t{i}", group_id="g", env_id="e", task_id="k")
    for seg in segments:
        s = Segment()
        for tok, m in seg:
            if m:
                s.append_sampled([tok], [-0.5], [3])
            else:
                s.append_prompt([tok])
        t.segments.append(s)
    return t


def test_minibatch_targets_are_next_tokens_with_their_masks():
    t = _traj(0, [[(10, 0), (11, 0), (12, 1), (13, 1), (14, 0)], [(20, 0), (21, 1)]])
    mb = build_minibatch([t], [0.5])
    assert mb.input_ids.tolist() == [10, 11, 12, 13, 14, 20, 21]
    assert mb.targets.tolist() == [11, 12, 13, 14, 0, 21, 0]
    assert mb.loss_mask.tolist() == [0, 1, 1, 0, 0, 1, 0]
    assert mb.behaviour_logprobs.tolist() == [0, -0.5, -0.5, 0, 0, -0.5, 0]
    assert mb.versions.tolist() == [-1, 3, 3, -1, -1, 3, -1]
    assert mb.segment_bounds == [(0, 5), (5, 7)]
    assert mb.advantages.tolist() == [0.5] * 7


def test_row_layout_forward_equals_separate_forwards_and_plans_padded_area():
    """Guards against attention leaking across trajectories (a silent loss corruption): one right-padded row per
    segment, no mask (fused causal attention); the real tokens' outputs equal separate forwards, and the budget
    bounds rows × longest row, a longer segment getting a block of its own."""
    from agentrl.trainer.batch import plan_rows
    from agentrl.trainer.update import policy_logprobs

    bounds = [(0, 3), (3, 9), (9, 10), (10, 30), (30, 32)]
    assert plan_rows(bounds, 12) == [(0, 9), (9, 10), (10, 30), (30, 32)]  # 2 rows × 6 fit; 3 × 6 do not
    assert plan_rows(bounds, 1000) == [(0, 32)]
    model = load_model("tiny")
    g = torch.Generator().manual_seed(0)
    trajs = [
        _traj(i, [[(int(x), int(x) % 2) for x in torch.randint(1, 500, (n,), generator=g)]])
        for i, n in enumerate([7, 5, 9])
    ]
    mb = build_minibatch(trajs, [1.0, -1.0, 0.0])
    (micro,) = microbatches(mb, token_budget=64)
    assert micro.input_ids.shape == (3, 9) and int(micro.valid.sum()) == 21
    with torch.no_grad():
        lp_rows, _ = policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=8)
        for s, e in mb.segment_bounds:
            alone = torch.log_softmax(model(mb.input_ids[s:e][None]).logits[0], -1)
            ref = alone.gather(-1, mb.targets[s:e, None])[:, 0]
            torch.testing.assert_close(lp_rows[s:e], ref, atol=1e-5, rtol=1e-5)


def test_masked_logprobs_run_the_lm_head_on_policy_tokens_only_with_the_same_values_and_gradients():
    """policy_logprobs(actions_only=True) equals the full computation on the policy's tokens (values and gradients) and
    reads 0 elsewhere, where every consumer multiplies by the loss mask anyway."""
    from agentrl.trainer.update import policy_logprobs

    g = torch.Generator().manual_seed(1)
    trajs = [
        _traj(i, [[(int(x), int(x) % 3 == 0) for x in torch.randint(1, 500, (n,), generator=g)]])
        for i, n in enumerate([11, 6, 9])
    ]
    mb = build_minibatch(trajs, [1.0, -1.0, 0.5])
    (micro,) = microbatches(mb, token_budget=64)
    action = mb.loss_mask > 0
    assert 0 < int(action.sum()) < mb.num_tokens
    grads = []
    for mask in (None, mb.loss_mask):
        model = load_model("tiny")
        lp, ent = policy_logprobs(model, micro, mb.targets, temperature=0.7, chunk=4, entropy=True, actions_only=mask is not None)
        (lp * mb.advantages * mb.loss_mask).sum().backward()
        grads.append({n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None})
        if mask is None:
            full_lp, full_ent = lp.detach(), ent
        else:
            torch.testing.assert_close(lp.detach()[action], full_lp[action], atol=1e-6, rtol=1e-5)
            torch.testing.assert_close(ent[action], full_ent[action], atol=1e-6, rtol=1e-5)
            assert bool((lp.detach()[~action] == 0).all()) and bool((ent[~action] == 0).all())
    assert grads[0].keys() == grads[1].keys()
    for name in grads[0]:
        # fp32 sums over differently chunked rows: equal up to rounding (~1e-6 of the largest entry)
        torch.testing.assert_close(grads[1][name], grads[0][name], atol=2e-5, rtol=1e-4, msg=name)
