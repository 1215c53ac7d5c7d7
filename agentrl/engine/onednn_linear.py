"""Decode-time linear layers whose weights are pre-packed for oneDNN (CPU, float32 or bfloat16).

`F.linear` on CPU calls MKL sgemm, which re-packs the weight matrix into its blocked layout on every call.
During decode a step multiplies a few rows by every weight of the model, so the packing is a large share of the
step: for SmolLM2-135M's 49152 × 576 LM head at 32 rows it is most of the multiply. oneDNN's linear takes a
weight packed once (`mkldnn::_reorder_linear_weight`) and reuses it. `bench/engine_throughput.py` measures the
effect on the peer workload (the engine against the same engine with packed_weights=False; docs/results.md).

The engine runs a structural copy of the model it is given (`packed_view`; `engine.model` is that copy) whose
`nn.Linear` modules are `PackedLinear`s over the very same weight tensors, so the given model (the trainer's,
in sync mode) is never modified. The packed copies follow the weights: a layer packs again when its weight's
version counter or address changed (any in-place update through the parameter: an optimizer step,
load_state_dict), and the engine repacks after every weight update in any case (writes through `.data` bypass
the counter). The packed path is a different kernel, so logits differ from `F.linear`'s by float rounding
(~1e-6); behaviour logprobs are those of the logits the engine sampled from, as always.
"""

from __future__ import annotations

import copy
import functools
import itertools

import torch
from torch import nn

from agentrl.precision import Fp32Head

_PACKABLE = (torch.float32, torch.bfloat16)


def packing_supported(model: nn.Module) -> bool:
    """True if oneDNN's packed linear can run this model: float32 or bfloat16 weights on the CPU, oneDNN built in,
    and this CPU's oneDNN able to pack that dtype (its bf16 path needs avx512bw/vl/dq or avx_ne_convert: an AVX2-only
    CPU such as AMD Zen 3 refuses it, and the engine then runs plain `F.linear`)."""
    try:
        p = next(model.parameters())
    except StopIteration:
        return False
    return (p.device.type == "cpu" and p.dtype in _PACKABLE and torch.backends.mkldnn.is_available()
            and _cpu_packs(p.dtype))


@functools.cache
def _cpu_packs(dtype: torch.dtype) -> bool:
    """Whether this CPU's oneDNN packs and runs a linear in `dtype` (probed once per process on a 16 × 16 weight)."""
    try:
        with torch.no_grad():
            w = torch.zeros(16, 16, dtype=dtype)
            packed = torch.ops.mkldnn._reorder_linear_weight(w, None)
            torch.ops.mkldnn._linear_pointwise(torch.zeros(1, 16, dtype=dtype), packed, None, "none", [], "")
    except RuntimeError:
        return False
    return True


class PackedLinear(nn.Module):
    """nn.Linear's forward with the weight pre-packed for oneDNN (inference only: no autograd through it). The
    input is cast to the weight's dtype first (an fp32 head after a bf16 body: agentrl.precision.Fp32Head)."""

    def __init__(self, linear: nn.Linear):
        """Wrap `linear` (its weight and bias tensors are shared, not copied) and pack its weight."""
        super().__init__()
        self.in_features, self.out_features = linear.in_features, linear.out_features
        self.weight = linear.weight
        self.bias = linear.bias
        self.repack()  # sets self.packed

    def repack(self) -> None:
        """Pack the current weight values again (after they changed in place)."""
        with torch.no_grad():
            self.packed = torch.ops.mkldnn._reorder_linear_weight(self.weight.detach(), None)
        self._packed_for = self._weight_key()

    def _weight_key(self) -> tuple[int, int]:
        """(version counter, address) of the weight: in-place updates through the parameter bump the counter."""
        return self.weight._version, self.weight.data_ptr()

    def __deepcopy__(self, memo: dict) -> PackedLinear:
        """A copy packs its own (copied) weight: oneDNN's packed tensors have no storage to copy."""
        shell = nn.Linear(self.in_features, self.out_features, bias=self.bias is not None, device="meta")
        shell.weight, shell.bias = copy.deepcopy(self.weight, memo), copy.deepcopy(self.bias, memo)
        memo[id(self)] = new = PackedLinear(shell)
        return new

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x @ weight.T + bias, on the packed weight (packed again first if the weight changed since)."""
        if self._weight_key() != self._packed_for:
            self.repack()
        if x.dtype != self.weight.dtype:
            x = x.to(self.weight.dtype)
        return torch.ops.mkldnn._linear_pointwise(x, self.packed, self.bias, "none", [], "")


def shared_copy(model: nn.Module) -> nn.Module:
    """A copy of model's module structure whose parameters and buffers ARE model's tensors (nothing is copied
    but the modules): for a module that runs the same weights differently (own train/eval flag, own layers)."""
    return copy.deepcopy(model, {id(t): t for t in itertools.chain(model.parameters(), model.buffers())})


def packed_layers(model: nn.Module) -> list[PackedLinear]:
    """The packed layers of a model (call `repack` on each after its weights change)."""
    return [m for m in model.modules() if isinstance(m, PackedLinear)]


def packed_view(model: nn.Module) -> nn.Module:
    """A copy of `model` sharing every parameter and buffer, with its nn.Linear modules packed: the module the
    engine runs, so that the model it was given (e.g. the trainer's, which needs autograd) stays as it was."""
    view = shared_copy(model)
    for module in list(view.modules()):
        for child_name, child in list(module.named_children()):
            if type(child) in (nn.Linear, Fp32Head) and child.weight.dtype in _PACKABLE:
                setattr(module, child_name, PackedLinear(child))
    return view.eval()
