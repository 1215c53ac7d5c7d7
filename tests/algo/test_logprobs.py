"""Chunked logprobs/entropy against a direct full-vocabulary log_softmax (values and gradients)."""

from __future__ import annotations

import pytest
import torch

from agentrl.algo.logprobs import token_logprobs_from_hidden, token_logprobs_from_logits

F64 = torch.float64


def _direct(logits, targets, temperature):
    logp = torch.log_softmax(logits / temperature, dim=-1)
    lp = logp.gather(-1, targets[..., None]).squeeze(-1)
    ent = -(logp.exp() * logp).sum(-1)
    return lp, ent


@pytest.mark.parametrize("chunk", [1, 3, 64])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logits_path_matches_log_softmax(chunk, temperature):
    g = torch.Generator().manual_seed(0)
    logits = torch.randn(2, 5, 11, generator=g, dtype=F64) * 3
    targets = torch.randint(0, 11, (2, 5), generator=g)
    weights = torch.randn(2, 5, generator=g, dtype=F64)
    a = logits.clone().requires_grad_(True)
    lp, ent = token_logprobs_from_logits(a, targets, temperature=temperature, chunk=chunk, entropy=True)
    (lp * weights).sum().backward()
    b = logits.clone().requires_grad_(True)
    lp_ref, ent_ref = _direct(b, targets, temperature)
    (lp_ref * weights).sum().backward()
    torch.testing.assert_close(lp, lp_ref.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(ent, ent_ref.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(a.grad, b.grad, atol=1e-10, rtol=0)
    assert lp.shape == targets.shape and not ent.requires_grad


def test_half_precision_logits_are_upcast_per_chunk():
    g = torch.Generator().manual_seed(1)
    logits = (torch.randn(7, 13, generator=g) * 4).to(torch.bfloat16)
    targets = torch.randint(0, 13, (7,), generator=g)
    lp, _ = token_logprobs_from_logits(logits, targets, chunk=2)
    assert lp.dtype == torch.float32
    ref, _ = _direct(logits.float(), targets, 1.0)
    torch.testing.assert_close(lp, ref, atol=1e-5, rtol=0)


@pytest.mark.parametrize("chunk", [2, 100])
def test_hidden_path_matches_direct_and_gives_head_gradients(chunk):
    g = torch.Generator().manual_seed(2)
    hidden = torch.randn(3, 4, 6, generator=g, dtype=F64)
    weight = torch.randn(9, 6, generator=g, dtype=F64)
    targets = torch.randint(0, 9, (3, 4), generator=g)
    coef = torch.randn(3, 4, generator=g, dtype=F64)
    h1, w1 = hidden.clone().requires_grad_(True), weight.clone().requires_grad_(True)
    lp, ent = token_logprobs_from_hidden(h1, w1, targets, temperature=0.8, chunk=chunk, entropy=True)
    (lp * coef).sum().backward()
    h2, w2 = hidden.clone().requires_grad_(True), weight.clone().requires_grad_(True)
    lp_ref, ent_ref = _direct(h2 @ w2.T, targets, 0.8)
    (lp_ref * coef).sum().backward()
    torch.testing.assert_close(lp, lp_ref.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(ent, ent_ref.detach(), atol=1e-10, rtol=0)
    torch.testing.assert_close(h1.grad, h2.grad, atol=1e-10, rtol=0)
    torch.testing.assert_close(w1.grad, w2.grad, atol=1e-10, rtol=0)


def test_gradcheck_logits_path():
    logits = torch.randn(4, 5, dtype=F64, requires_grad=True)
    targets = torch.tensor([0, 4, 2, 2])
    assert torch.autograd.gradcheck(
        lambda x: token_logprobs_from_logits(x, targets, temperature=1.3, chunk=3)[0], (logits,)
    )


def test_temperature_must_be_positive():
    with pytest.raises(ValueError, match="temperature"):
        token_logprobs_from_logits(torch.zeros(1, 2), torch.zeros(1, dtype=torch.long), temperature=0.0)
