"""oneDNN-packed decode weights: the engine's packed view shares the model's tensors, leaves the model as it was,
matches F.linear to float rounding, and follows every weight update (loaded or shared and changed in place)."""

from __future__ import annotations

import asyncio
import copy

import pytest
import torch
from torch import nn

from agentrl.engine.embedded import EmbeddedEngine, engine_view
from agentrl.engine.onednn_linear import PackedLinear, packed_layers, packed_view, packing_supported
from agentrl.engine.protocol import SamplingParams
from agentrl.engine.sampling import recompute_logprobs
from agentrl.models import load_model, load_tokenizer

from .engine_fixtures import chat_prompt

pytestmark = pytest.mark.skipif(not torch.backends.mkldnn.is_available(), reason="torch built without oneDNN")


def run(coro):
    return asyncio.run(coro)


@pytest.fixture(scope="module")
def plain():
    """The tiny model as loaded: nn.Linear layers, F.linear kernels."""
    return load_model("tiny").eval()


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer("tiny")


@pytest.fixture(scope="module")
def prompts(tok):
    return [chat_prompt(tok, q) for q in ("What is 2 + 3?", "Name a colour.", "Say hi.")]


def _noisy(model, scale: float, seed: int = 0) -> dict[str, torch.Tensor]:
    """Every weight moved by relative noise: a different policy, the same shapes."""
    g = torch.Generator().manual_seed(seed)
    return {k: v + scale * v.abs().mean() * torch.randn(v.shape, generator=g) if v.is_floating_point() else v.clone()
            for k, v in model.state_dict().items()}


def _gap(model, prompt, gen, params) -> float:
    """Largest |engine logprob - full-sequence recompute on model|."""
    ref = recompute_logprobs(model, prompt, gen.output_ids, params)
    return max(abs(a - b) for a, b in zip(ref, gen.logprobs, strict=True))


def test_packed_view_shares_tensors_and_leaves_the_model_alone(plain):
    model = copy.deepcopy(plain)
    view = packed_view(model)
    linears = [m for m in model.modules() if type(m) is nn.Linear]
    assert len(packed_layers(view)) == len(linears) > 0
    assert not packed_layers(model)  # the caller's model is untouched
    assert [p.data_ptr() for p in view.parameters()] == [p.data_ptr() for p in model.parameters()]
    assert list(view.state_dict()) == list(model.state_dict())  # checkpoints and weight updates see the same keys
    ids = torch.tensor([[1, 5, 9, 200, 17, 3]])
    with torch.inference_mode():
        want, got = model(ids).logits, view(ids).logits
    assert got.abs().sum() > 0
    torch.testing.assert_close(got, want, atol=1e-4, rtol=1e-4)
    twin = copy.deepcopy(view)  # a copy packs its own copy of the weights
    assert twin.lm_head.packed is not view.lm_head.packed
    assert twin.lm_head.weight.data_ptr() != view.lm_head.weight.data_ptr()
    with torch.inference_mode():
        torch.testing.assert_close(twin(ids).logits, got, atol=0, rtol=0)


def _cpu_flags() -> set[str]:
    """This machine's CPU flags as the kernel lists them (empty where /proc/cpuinfo is absent)."""
    try:
        text = open("/proc/cpuinfo").read()
    except OSError:
        return set()
    return {f for line in text.splitlines() if line.startswith("flags") for f in line.split(":", 1)[1].split()}


def test_packing_is_only_offered_for_float32_and_bfloat16_on_cpu(plain, tok):
    """bf16 is offered only where this CPU's oneDNN packs it (avx512bw+vl+dq or avx_ne_convert): on an AVX2-only
    CPU (AMD Zen 3) the offer crashed the bf16 engine at its first layer (mkldnn_reorder_linear_weight)."""
    assert packing_supported(plain)
    flags = _cpu_flags()
    bf16_packs = {"avx512bw", "avx512vl", "avx512dq"} <= flags or "avx_ne_convert" in flags
    as_bf16 = copy.deepcopy(plain).to(torch.bfloat16)
    assert packing_supported(as_bf16) == bf16_packs, sorted(f for f in flags if f.startswith("avx"))
    bf16 = EmbeddedEngine(as_bf16, tok, seed=0)  # packed or not, it builds and decodes on every CPU
    try:
        out = run(bf16.generate([1, 2, 3], SamplingParams(max_new_tokens=2, temperature=1.0, seed=0)))
        assert len(out.output_ids) >= 1 and isinstance(bf16.model.lm_head, PackedLinear) == bf16_packs
    finally:
        run(bf16.close())
    assert not packing_supported(copy.deepcopy(plain).to(torch.float16))
    on = EmbeddedEngine(plain, tok, seed=0)
    off = EmbeddedEngine(plain, tok, seed=0, packed_weights=False)
    try:
        assert isinstance(on.model.lm_head, PackedLinear) and on.model is not plain  # the default decodes packed
        assert off.model is plain and not packed_layers(off.model)
    finally:
        run(on.close())
        run(off.close())


def test_packed_engine_samples_what_the_unpacked_one_does(plain, tok, prompts):
    params = [SamplingParams(temperature=1.0, max_new_tokens=16, seed=10 + i) for i in range(len(prompts))]
    on = EmbeddedEngine(plain, tok, seed=0)
    off = EmbeddedEngine(plain, tok, seed=0, packed_weights=False)

    async def both():
        try:
            a = await asyncio.gather(*(on.generate(p, s) for p, s in zip(prompts, params, strict=True)))
            b = await asyncio.gather(*(off.generate(p, s) for p, s in zip(prompts, params, strict=True)))
            return a, b
        finally:
            await on.close()
            await off.close()

    packed, unpacked = run(both())
    assert [g.output_ids for g in packed] == [g.output_ids for g in unpacked]
    assert max(_gap(plain, p, g, s) for p, s, g in zip(prompts, params, packed, strict=True)) < 1e-4  # vs F.linear


@pytest.mark.parametrize("how", ["loaded", "shared_in_place", "shared_through_data", "loaded_into_a_packed_copy"])
def test_packed_weights_follow_every_update(plain, tok, prompts, how):
    """A stale packed copy would keep sampling the old policy: after the update the engine's logprobs must be
    those of the new weights (F.linear recompute), and measurably not those of the old ones."""
    trainer = copy.deepcopy(plain)
    shared = how.startswith("shared")
    given = engine_view(trainer, share_weights=True) if shared else copy.deepcopy(trainer)
    if how == "loaded_into_a_packed_copy":
        given = copy.deepcopy(packed_view(given))
    eng = EmbeddedEngine(given, tok, seed=0)
    params = SamplingParams(temperature=1.0, max_new_tokens=12, seed=3)
    new = _noisy(trainer, scale=0.3)

    async def go():
        try:
            await eng.generate(prompts[1], params)  # decode once on the packed old weights
            if shared:  # the trainer changes the shared tensors in place, then announces the version
                with torch.no_grad():  # through .data, the version counters the layers watch do not move
                    for k, t in trainer.state_dict(keep_vars=True).items():
                        (t.data if how == "shared_through_data" else t).copy_(new[k])
                await eng.push_weights(trainer, version=1)
            else:
                await eng.update_weights(new, version=1)
            return await eng.generate(prompts[1], params)
        finally:
            await eng.close()

    after = run(go())
    reference = copy.deepcopy(plain)
    reference.load_state_dict(new)
    assert set(after.versions) == {1}
    gap, stale = _gap(reference, prompts[1], after, params), _gap(plain, prompts[1], after, params)
    assert gap < 1e-4 < 1e-2 < stale, (gap, stale)
