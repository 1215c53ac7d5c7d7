"""Logits processing: truncation, renormalisation, greedy, per-row generators (no model needed)."""
# ruff: noqa: F811  (pytest fixtures imported from engine_fixtures are redefined as test arguments)

from __future__ import annotations

import math
import re

import pytest
import torch

from agentrl.engine.errors import EngineRequestError
from agentrl.engine.protocol import SamplingParams
from agentrl.engine.sampling import (
    inverse_cdf,
    make_generator,
    params_tensors,
    sample,
    sampling_logprobs,
    validate,
)


def _lp(logits, temperature=1.0, top_k=-1, top_p=1.0):
    t, k, p = params_tensors([SamplingParams(temperature=temperature, top_k=top_k, top_p=top_p)], "cpu")
    return sampling_logprobs(torch.tensor([logits], dtype=torch.float32), t, k, p)[0]


def test_temperature_scales_before_log_softmax():
    logits = [2.0, 1.0, 0.0]
    got = _lp(logits, temperature=0.5)
    torch.testing.assert_close(got, torch.log_softmax(torch.tensor(logits) / 0.5, -1))


def test_greedy_reports_the_unscaled_distribution():
    logits = [2.0, 1.0, 0.0]
    torch.testing.assert_close(_lp(logits, temperature=0.0), torch.log_softmax(torch.tensor(logits), -1))


def test_top_k_keeps_k_tokens_and_renormalises():
    got = _lp([3.0, 1.0, 2.0, 0.0], top_k=2)
    assert torch.isinf(got[[1, 3]]).all()
    assert math.isclose(torch.logsumexp(got, -1).item(), 0.0, abs_tol=1e-6)
    assert math.isclose(got[0].item(), math.log(math.e**3 / (math.e**3 + math.e**2)), rel_tol=1e-6)


def test_top_p_keeps_the_smallest_prefix_reaching_p():
    logits = torch.log(torch.tensor([0.5, 0.3, 0.2])).tolist()
    got = _lp(logits, top_p=0.7)  # 0.5 < 0.7 so the second token is needed; the third is not
    assert torch.isfinite(got[:2]).all() and torch.isinf(got[2])
    assert math.isclose(got[0].item(), math.log(0.5 / 0.8), rel_tol=1e-5)
    only_first = _lp(logits, top_p=0.5)  # the most likely token alone already reaches p
    assert torch.isfinite(only_first[0]) and torch.isinf(only_first[1:]).all()


def test_rows_do_not_influence_each_other():
    torch.manual_seed(0)
    logits = torch.randn(3, 50)
    params = [SamplingParams(temperature=0.7, top_k=5), SamplingParams(temperature=0.0),
              SamplingParams(temperature=1.3, top_p=0.6)]
    batched = sampling_logprobs(logits, *params_tensors(params, "cpu"))
    for row, p in enumerate(params):
        alone = sampling_logprobs(logits[row : row + 1], *params_tensors([p], "cpu"))[0]
        torch.testing.assert_close(batched[row], alone)


def test_fixed_seed_reproduces_and_seeds_differ():
    logits = torch.zeros(1, 1000)  # uniform: collisions between different seeds are unlikely over 5 draws
    t, k, p = params_tensors([SamplingParams()], "cpu")

    def draws(seed):
        g = make_generator(seed)
        return [sample(logits, t, k, p, [g])[0].item() for _ in range(5)]

    assert draws(7) == draws(7)
    assert draws(7) != draws(8)


def test_sampled_logprob_is_gathered_from_the_sampling_distribution():
    torch.manual_seed(1)
    logits = torch.randn(4, 30)
    params = [SamplingParams(temperature=0.8, top_k=4)] * 4
    t, k, p = params_tensors(params, "cpu")
    tokens, lps = sample(logits, t, k, p, [make_generator(i) for i in range(4)])
    full = sampling_logprobs(logits, t, k, p)
    torch.testing.assert_close(lps, full.gather(-1, tokens[:, None])[:, 0])
    assert torch.isfinite(lps).all()  # never a token outside the support


@pytest.mark.parametrize(
    ("params", "message"),
    [
        (SamplingParams(temperature=-1), "temperature must be a finite number >= 0"),
        (SamplingParams(temperature=float("nan")), "temperature must be a finite number >= 0"),
        (SamplingParams(top_p=0.0), "top_p must be in (0, 1]"),
        (SamplingParams(top_k=0), "top_k must be -1 (disabled) or at least 1"),
        (SamplingParams(max_new_tokens=-2), "max_new_tokens must be at least 0"),
        (SamplingParams(stop=["x"] * 33), "at most 32 stop strings"),
    ],
)
def test_validate_refuses_what_sglang_refuses(params, message):
    with pytest.raises(EngineRequestError, match=re.escape(message)):
        validate(params)


def test_inverse_cdf_matches_a_full_cumsum_and_skips_zero_probability_tokens():
    torch.manual_seed(2)
    probs = torch.softmax(torch.randn(6, 3000), -1)
    probs[:, 2048:] = 0  # a truncated tail, and whole empty blocks
    probs /= probs.sum(-1, keepdim=True)
    u = torch.tensor([0.0, 0.1, 0.5, 0.9, 0.999999, 1 - 1e-9])
    got = inverse_cdf(probs, u, block=512)
    want = torch.searchsorted(probs.double().cumsum(-1), (u.double() * probs.double().sum(-1))[:, None], right=True)
    assert (got - want[:, 0].clamp(max=2047)).abs().max() <= 1  # float32 vs float64 rounding at a boundary
    assert (probs.gather(-1, got[:, None]) > 0).all()


def test_sampled_frequencies_follow_the_distribution():
    probs = torch.tensor([0.1, 0.0, 0.6, 0.3])
    g = make_generator(0)
    u = torch.rand(20000, generator=g)
    counts = torch.bincount(inverse_cdf(probs.expand(20000, 4), u, block=2), minlength=4).float() / 20000
    torch.testing.assert_close(counts, probs, atol=0.015, rtol=0)
