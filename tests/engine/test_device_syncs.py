"""The embedded engine on an accelerator reads the device at most once per decode step.

On a GPU every read of device data on the host (.item(), .tolist(), bool(tensor), nonzero, ...) waits for the
device to drain; a decode loop that reads per row or per branch spends its time waiting (issue 44 measured the
engine at 0.6–0.8× HF generate on an H200). CI has no GPU, so the engine runs on the stand-in device of
tests/trainer/fake_device.py (CPU data reporting device `meta`, host/device mixes refused, device reads counted):
its worker thread enters the stand-in, and the reads it counts must be one per forward (prefill or decode step),
the same tokens as the host engine given.
"""

from __future__ import annotations

import asyncio

import torch

from agentrl.engine.embedded import EmbeddedEngine
from agentrl.engine.protocol import SamplingParams
from agentrl.models import load_model, load_tokenizer
from tests.trainer.fake_device import DEVICE, FakeDevice

from .engine_fixtures import chat_prompt


class _OnFakeDevice(EmbeddedEngine):
    """The engine with its worker thread inside the stand-in device (modes are per thread)."""

    guard: FakeDevice

    def _run(self) -> None:
        with self.guard:
            super()._run()


def _requests(tok):
    """Three prompts × three samples with mixed settings (temperature, top-k, top-p, greedy, stop tokens,
    lengths), so rows finish at different steps and leave the batch."""
    prompts = [chat_prompt(tok, q) for q in ("What is 2 + 3?", "Name a colour.", "Count to three.")]
    settings = [SamplingParams(temperature=1.0, max_new_tokens=12, seed=1),
                SamplingParams(temperature=0.7, top_k=20, max_new_tokens=9, seed=2),
                SamplingParams(temperature=1.3, top_p=0.8, max_new_tokens=16, seed=3),
                SamplingParams(temperature=0.0, max_new_tokens=7, seed=4)]
    return [(p, s) for i, p in enumerate(prompts) for s in settings[i % 2 : i % 2 + 3]]


def _generate(engine, requests):
    async def go():
        try:
            return await asyncio.gather(*(engine.generate(p, s) for p, s in requests))
        finally:
            await engine.close()

    return asyncio.run(go())


def test_a_decode_step_reads_the_device_once_and_samples_what_the_host_samples():
    tok = load_tokenizer("tiny")
    requests = _requests(tok)
    host = _generate(EmbeddedEngine(load_model("tiny"), tok, seed=0, batch_window_s=0.2), requests)

    model = load_model("tiny")
    with FakeDevice() as setup:
        setup.to_device(model)
    _OnFakeDevice.guard = FakeDevice()
    engine = _OnFakeDevice(model, tok, seed=0, batch_window_s=0.2)
    assert engine.device == DEVICE
    device = _generate(engine, requests)

    syncs = _OnFakeDevice.guard.syncs
    steps, prefills = engine.stats["decode_steps"], engine.stats["batches"]
    assert steps >= 15 and prefills >= 1
    sampled = [s for s in syncs if "_sample_and_record" in s]
    assert len(sampled) == engine.stats["host_reads"] == steps + prefills, "\n".join(syncs)
    # the rest: transformers' padding check of the 2-D mask of a prefill forward (one per prefill chunk,
    # masking_utils._ignore_causal_mask_sdpa); none in a decode step
    others = [s for s in syncs if "_sample_and_record" not in s]
    assert all("_prefill_rows" in s for s in others), "\n".join(others)
    for h, d in zip(host, device, strict=True):
        assert d.output_ids == h.output_ids and d.finish_reason == h.finish_reason
        torch.testing.assert_close(torch.tensor(d.logprobs), torch.tensor(h.logprobs), atol=1e-5, rtol=0)
    assert len({len(g.output_ids) for g in host}) > 2, "rows must leave the batch at different steps"
