"""Mixed precision: what `auto` picks, the bf16 autocast trainer path against fp32, the bf16 engine's copy and its
weight sync. bf16 runs on every CPU (emulated where it has no bf16 units), so these tests run everywhere."""

from __future__ import annotations

import asyncio

import pytest
import torch

from agentrl import precision
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.engine.protocol import SamplingParams
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.batch import build_minibatch, microbatches
from agentrl.trainer.update import policy_logprobs
from agentrl.types import Segment, Trajectory


@pytest.mark.parametrize(("flags", "want"), [
    ("", "float32"), ("avx512f avx512bw", "float32"), ("avx512f amx_tile amx_bf16", "bfloat16"),
    ("avx512_bf16", "bfloat16"),
])
def test_auto_picks_bf16_only_where_the_cpu_has_bf16_units(monkeypatch, flags, want):
    monkeypatch.setenv(precision.FLAGS_ENV, flags)
    got = precision.resolve("auto", "cpu")
    assert got.name == want
    assert ("emulated" in got.reason) == (want == "float32")


def test_explicit_settings_are_honoured_and_an_emulated_bf16_says_so(monkeypatch):
    monkeypatch.setenv(precision.FLAGS_ENV, "avx512f")
    assert precision.resolve("float32").name == "float32"
    bf16 = precision.resolve("bfloat16")
    assert bf16.name == "bfloat16" and "emulated" in bf16.reason
    assert "emulated" not in precision.resolve("bfloat16", flags=frozenset({"amx_bf16"})).reason
    with pytest.raises(ValueError, match="unknown precision"):
        precision.resolve("fp8")


def test_cpu_flags_read_proc_cpuinfo_without_the_override(monkeypatch):
    monkeypatch.delenv(precision.FLAGS_ENV)
    flags = precision.cpu_flags()
    with open("/proc/cpuinfo") as f:
        line = next(x for x in f if x.startswith("flags"))
    assert flags == frozenset(line.split(":", 1)[1].split())


def _batch(tokenizer, n=3):
    """Trajectories with prompt and action tokens, for logprob and gradient comparisons."""
    trajs = []
    for i in range(n):
        prompt = tokenizer.encode(f"question {i}: what is {i} + {i}?")
        action = tokenizer.encode(f" the answer is {2 * i}, I think so")
        n_all = len(prompt) + len(action)
        seg = Segment(token_ids=prompt + action, loss_mask=[0] * len(prompt) + [1] * len(action),
                      behaviour_logprobs=[0.0] * n_all, versions=[-1] * len(prompt) + [0] * len(action))
        trajs.append(Trajectory(id=str(i), group_id="g", env_id="test", task_id=str(i), segments=[seg]))
    return build_minibatch(trajs, [0.0] * n)


def _logprobs_and_grads(model, mb, compute_dtype):
    model.zero_grad(set_to_none=True)
    (micro,) = microbatches(mb, 4096, share_prefix=False)
    lp, _ = policy_logprobs(model, micro, mb.targets, temperature=1.0, chunk=64, actions_only=True,
                            share_prefix=False, compute_dtype=compute_dtype)
    (lp * mb.loss_mask).sum().backward()
    grads = torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])
    return lp.detach(), grads


def test_autocast_path_matches_fp32_within_bf16_tolerance_on_logprobs_and_gradients():
    """The bf16 path must really run in bf16 (it differs from fp32) and stay within bf16 rounding of it; the
    master weights stay fp32 and the logprobs come out fp32."""
    tok = load_tokenizer("tiny")
    model = load_model("tiny").train()
    mb = _batch(tok)
    lp32, g32 = _logprobs_and_grads(model, mb, "float32")
    lp16, g16 = _logprobs_and_grads(model, mb, "bfloat16")
    assert lp16.dtype == torch.float32 and precision.param_dtype(model) == torch.float32
    action = mb.loss_mask > 0
    diff = (lp16 - lp32)[action].abs()
    assert 0 < diff.max() < 0.05, diff.max()
    cos = torch.nn.functional.cosine_similarity(g16, g32, dim=0)
    assert cos > 0.99, cos
    assert not torch.equal(g16, g32)


def test_inference_copy_casts_the_body_keeps_an_fp32_untied_head_and_leaves_the_model_alone():
    model = load_model("tiny")
    before = {k: v.clone() for k, v in model.state_dict().items()}
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    copy = precision.inference_copy(model, torch.bfloat16)
    assert copy.get_input_embeddings().weight.dtype == torch.bfloat16
    assert isinstance(copy.get_output_embeddings(), precision.Fp32Head)
    assert copy.get_output_embeddings().weight.dtype == torch.float32
    assert copy.get_output_embeddings().weight is not copy.get_input_embeddings().weight
    assert (model.get_output_embeddings().weight is model.get_input_embeddings().weight) == tied
    for k, v in model.state_dict().items():
        assert v.dtype == torch.float32 and torch.equal(v, before[k]), k
    buffers = dict(model.named_buffers())
    for name, buf in copy.named_buffers():  # the rotary frequencies stay exact
        assert buf.dtype == torch.float32 and torch.equal(buf, buffers[name]), name
    ids = torch.tensor([[1, 2, 3, 4, 5]])
    with torch.no_grad():
        logits16, logits32 = copy(ids).logits, model(ids).logits
    assert logits16.dtype == torch.float32
    assert 0 < (logits16 - logits32).abs().max() < 0.05


@pytest.mark.parametrize("packed", [True, False])
def test_bf16_engine_samples_from_fp32_logits_and_follows_weight_updates(packed):
    """Its logprobs are within bf16 rounding of the fp32 engine's on the same tokens; after the trainer's weights
    change, a weight sync (converted on load, a tied head filled from the embedding) moves the engine with them."""
    tok = load_tokenizer("tiny")
    model = load_model("tiny")
    params = SamplingParams(max_new_tokens=6, temperature=1.0, seed=3)

    async def run():
        e32 = EmbeddedEngine(model, tok, seed=0, packed_weights=packed)
        e16 = EmbeddedEngine(model, tok, seed=0, packed_weights=packed, dtype="bfloat16")
        try:
            assert e16.dtype == torch.bfloat16 and precision.param_dtype(e16.model) == torch.bfloat16
            a, b = await e32.generate([1, 2, 3], params), await e16.generate([1, 2, 3], params)
            n = next((i for i, (x, y) in enumerate(zip(a.output_ids, b.output_ids, strict=False)) if x != y), min(len(a.output_ids), len(b.output_ids)))
            assert n >= 1
            assert max(abs(x - y) for x, y in zip(a.logprobs[:n], b.logprobs[:n], strict=True)) < 0.05
            with torch.no_grad():
                for p in model.parameters():
                    p.mul_(-1.0)
            sd = {k: v for k, v in model.state_dict().items() if k != "lm_head.weight"}
            await e16.update_weights(sd, version=1)
            await e32.update_weights(model.state_dict(), version=1)
            c, d = await e32.generate([1, 2, 3], params), await e16.generate([1, 2, 3], params)
            assert d.versions == [1] * len(d.output_ids)
            assert abs(c.logprobs[0] - d.logprobs[0]) < 0.05 and c.output_ids[0] == d.output_ids[0]
            assert abs(c.logprobs[0] - a.logprobs[0]) > 0.05 or c.output_ids[0] != a.output_ids[0]
        finally:
            await e32.close()
            await e16.close()

    asyncio.run(run())


def test_an_engine_dtype_for_an_sglang_engine_is_refused_naming_the_key():
    from agentrl.config import load_config
    from agentrl.errors import ConfigError

    with pytest.raises(ConfigError, match="rollout.engine_dtype=bfloat16 is used only by rollout.engine=embedded"):
        load_config(None, overrides=["rollout.engine=sglang", "rollout.urls=[http://127.0.0.1:1]",
                                     "rollout.engine_dtype=bfloat16"])
    with pytest.raises(ConfigError, match="model.compute_dtype"):
        load_config(None, overrides=["model.compute_dtype=fp16"])
