"""Numeric precision: the dtype the trainer computes in and the embedded engine runs in, picked from the hardware.

Training keeps fp32 master weights and AdamW state and runs the transformer body's forward and backward under
`torch.autocast` in the compute dtype; the LM head, the log-softmax and the loss stay fp32
(`agentrl.trainer.update.policy_logprobs`). The embedded engine in bfloat16 holds a bf16 copy of the body
(KV cache in bf16 too) and an fp32 LM head, so sampling and behaviour logprobs come from fp32 logits
(`inference_copy`); weight sync converts the trainer's fp32 weights once per update.

bfloat16 pays only where the hardware has bf16 matrix units: on x86 CPUs the `amx_bf16` tiles or the
`avx512_bf16` dot-product instructions. Without them PyTorch emulates bf16 matmuls by conversion, which is
slower than fp32 (bench/trainer_step.py and bench/engine_throughput.py print both on the machine they run on).
`auto` therefore picks bf16 on a CPU that reports either flag and on a CUDA device with bf16 support, and fp32
everywhere else. The detection reads /proc/cpuinfo; $AGENTRL_CPU_FLAGS (a space-separated flag list, possibly
empty) replaces it, so tests and CI get the same choice on every machine.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass

import torch
from torch import nn

BF16_CPU_FLAGS = ("amx_bf16", "avx512_bf16")
DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
FLAGS_ENV = "AGENTRL_CPU_FLAGS"
UNTIED_HEAD = "agentrl_untied_fp32_head"  # config attribute of an inference copy whose fp32 head was tied before


@dataclass(frozen=True)
class Precision:
    """A resolved compute dtype and the reason it was picked (for the start-up line)."""

    name: str  # "float32" | "bfloat16"
    reason: str

    @property
    def dtype(self) -> torch.dtype:
        """The torch dtype."""
        return DTYPES[self.name]

    def describe(self) -> str:
        """`bfloat16 (this CPU has amx_bf16)`: what was picked and why."""
        return f"{self.name} ({self.reason})"


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags ($AGENTRL_CPU_FLAGS if set, else /proc/cpuinfo; empty where neither says)."""
    forced = os.environ.get(FLAGS_ENV)
    if forced is not None:
        return frozenset(forced.split())
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith(("flags", "Features")):
                    return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return frozenset()


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo's first `model name`, else platform.processor()), for every figure's
    record of the machine it was measured on."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or "unknown CPU"


def bf16_flags(flags: frozenset[str] | None = None) -> list[str]:
    """The bf16 matrix-unit flags this CPU reports (of BF16_CPU_FLAGS; `flags` replaces the detection)."""
    flags = cpu_flags() if flags is None else flags
    return [f for f in BF16_CPU_FLAGS if f in flags]


def _auto(device: str, flags: frozenset[str] | None) -> Precision:
    """What `auto` picks on `device`."""
    if device.startswith("cuda"):
        if torch.cuda.is_available() and torch.cuda.is_bf16_supported():
            return Precision("bfloat16", "the CUDA device supports bf16")
        return Precision("float32", "the CUDA device has no bf16 support")
    have = bf16_flags(flags)
    if have:
        return Precision("bfloat16", f"this CPU has {' and '.join(have)}")
    return Precision("float32", f"this CPU has no {' or '.join(BF16_CPU_FLAGS)}: bf16 would be emulated, slower than fp32")


def resolve(setting: str, device: str = "cpu", *, flags: frozenset[str] | None = None) -> Precision:
    """Resolve a config value (auto | float32 | bfloat16) on `device`; an explicit bf16 on a CPU without bf16
    units is honoured, and the reason says it is emulated."""
    if setting == "auto":
        return _auto(device, flags)
    if setting not in DTYPES:
        raise ValueError(f"unknown precision {setting!r}; use auto, float32 or bfloat16")
    if setting == "bfloat16" and _auto(device, flags).name != "bfloat16":
        return Precision(setting, "set in the config; emulated on this hardware, slower than fp32")
    return Precision(setting, "set in the config")


def matmul_gflops(dtype: torch.dtype, n: int = 2048, reps: int = 5) -> float:
    """Best-of-reps n×n matmul throughput in `dtype` on the default device's CPU threads: the hardware ceiling
    the benches report their rates against."""
    import time

    a, b = torch.randn(n, n, dtype=dtype), torch.randn(n, n, dtype=dtype)
    a @ b
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t)
    return 2 * n**3 / best / 1e9


def autocast(dtype: torch.dtype, device_type: str = "cpu"):
    """A context that runs the enclosed forward in `dtype` (torch.autocast for half precision; nothing for fp32)."""
    if dtype in (torch.bfloat16, torch.float16):
        return torch.autocast(device_type, dtype=dtype)
    return contextlib.nullcontext()


class Fp32Head(nn.Linear):
    """An output projection kept in fp32 inside a half-precision model: its input is upcast, so the logits
    (and everything sampled or scored from them) are fp32."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (any float dtype) → fp32 logits."""
        return nn.functional.linear(x.to(self.weight.dtype), self.weight, self.bias)


def inference_copy(model: nn.Module, dtype: torch.dtype) -> nn.Module:
    """A copy of `model` for generation in `dtype`: every parameter cast, except the output embedding, which gets
    its own fp32 weight (untied from the input embedding) in an `Fp32Head`; buffers (the rotary frequencies) keep
    their dtype. The given model is left as it was. fp32 gives a plain deep copy."""
    import copy

    out = copy.deepcopy(model)
    if dtype == torch.float32:
        return out.eval()
    head = model.get_output_embeddings()
    out.to(dtype)
    originals = dict(model.named_buffers())
    for name, buf in out.named_buffers():  # rotary frequencies rounded to bf16 would shift every position's angle
        if name in originals:
            buf.data = originals[name].detach().clone()
    if head is not None:
        fp32 = Fp32Head(head.in_features, head.out_features, bias=head.bias is not None, device=head.weight.device,
                        dtype=torch.float32)
        with torch.no_grad():
            fp32.weight.copy_(head.weight)
            if head.bias is not None:
                fp32.bias.copy_(head.bias)
        tied = head.weight is getattr(model.get_input_embeddings(), "weight", None)
        out.set_output_embeddings(fp32)
        out.config.tie_word_embeddings = False  # keep a later tie_weights() from sharing the bf16 embedding again
        setattr(out.config, UNTIED_HEAD, tied)  # weights without the head fill it from the input embedding
    return out.eval()


def param_dtype(model: nn.Module) -> torch.dtype:
    """The dtype of the model's first parameter (the body's dtype)."""
    return next(model.parameters()).dtype
