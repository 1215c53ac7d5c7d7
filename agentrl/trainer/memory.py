"""Give freed memory back to the OS between steps.

Training on CPU allocates tensors of a different shape every micro-batch (packed lengths vary), and glibc's
allocator keeps the freed pages in its arenas: resident memory then creeps up step after step although
nothing is leaked. malloc_trim returns
them; it is a no-op where glibc is absent.

Within one step, glibc's *dynamic* mmap threshold is the larger cost: after a large block is freed, blocks up to
32 MB are served from the heap, where the backward's and the optimizer's temporaries fragment it, and the step's
peak RSS holds freed memory. `fix_mmap_threshold` pins the threshold (trainer.mmap_threshold), so
every large tensor is its own mapping, returned to the OS when freed; the price is page faults (zeroed pages)
each time such a tensor is allocated again. bench/malloc_mmap.py measures both against the dynamic threshold
(docs/results.md).

The optimizer is the other large resident: AdamW keeps two fp32 moments per parameter (8 bytes/param, 1.1 GB
for the 135M model). `build_optimizer` offers bfloat16 moments (trainer.optimizer_state=bfloat16): half of
that, with the update itself computed in fp32 from the rounded moments.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import os

import torch


@functools.cache
def _libc():
    name = ctypes.util.find_library("c")
    try:
        lib = ctypes.CDLL(name) if name else None
    except OSError:
        return None
    return lib if lib is not None and hasattr(lib, "malloc_trim") else None


M_MMAP_THRESHOLD = -3  # glibc <malloc.h>


def fix_mmap_threshold(nbytes: int) -> bool:
    """Serve allocations of ≥ nbytes by mmap and stop glibc raising that threshold (mallopt M_MMAP_THRESHOLD), so
    freed large tensors leave the process at once; 0 keeps glibc's dynamic threshold. A MALLOC_MMAP_THRESHOLD_
    in the environment wins (glibc read it at start-up). True if the threshold was set here."""
    lib = _libc()
    if nbytes <= 0 or lib is None or "MALLOC_MMAP_THRESHOLD_" in os.environ or not hasattr(lib, "mallopt"):
        return False
    return bool(lib.mallopt(M_MMAP_THRESHOLD, int(nbytes)))


def release_memory() -> None:
    """Return freed heap pages to the OS (glibc malloc_trim); call after each optimizer step."""
    lib = _libc()
    if lib is not None:
        lib.malloc_trim(0)



class LowPrecisionAdamW(torch.optim.Optimizer):
    """AdamW (decoupled weight decay, bias-corrected) whose moment estimates are stored in `state_dtype`.

    Each step upcasts a parameter's moments to fp32, updates them with the fp32 gradient, stores them back
    rounded, and applies the update from the fp32 values; the parameters keep their own dtype.
    """

    def __init__(self, params, lr: float = 1e-3, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8,
                 weight_decay: float = 0.0, state_dtype: torch.dtype = torch.bfloat16):
        super().__init__(params, {"lr": lr, "betas": betas, "eps": eps, "weight_decay": weight_decay})
        self.state_dtype = state_dtype

    @torch.no_grad()
    def step(self, closure=None):
        """One AdamW update of every parameter that has a gradient."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            b1, b2 = group["betas"]
            lr, eps, wd = group["lr"], group["eps"], group["weight_decay"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                st = self.state[p]
                if not st:
                    st["step"] = torch.tensor(0.0, device="cpu")  # a host counter, as torch's AdamW keeps it
                    st["exp_avg"] = torch.zeros_like(p, dtype=self.state_dtype)
                    st["exp_avg_sq"] = torch.zeros_like(p, dtype=self.state_dtype)
                for key in ("exp_avg", "exp_avg_sq"):  # load_state_dict casts states to the parameter dtype
                    if st[key].dtype != self.state_dtype:
                        st[key] = st[key].to(self.state_dtype)
                st["step"] += 1
                step = float(st["step"])
                g = p.grad.float()
                m = st["exp_avg"].float().mul_(b1).add_(g, alpha=1 - b1)
                v = st["exp_avg_sq"].float().mul_(b2).addcmul_(g, g, value=1 - b2)
                st["exp_avg"].copy_(m)
                st["exp_avg_sq"].copy_(v)
                denom = (v / (1 - b2**step)).sqrt_().add_(eps)
                update = (m / (1 - b1**step)).div_(denom)
                if wd:
                    p.mul_(1 - lr * wd)
                p.add_(update.to(p.dtype), alpha=-lr)
        return loss


def build_optimizer(model, trainer_cfg) -> torch.optim.Optimizer:
    """The trainer's AdamW per the trainer config section: fp32 moments (torch's AdamW) or bfloat16 moments
    (LowPrecisionAdamW) when trainer.optimizer_state=bfloat16."""
    params = [p for p in model.parameters() if p.requires_grad]
    if trainer_cfg.optimizer_state == "bfloat16":
        return LowPrecisionAdamW(params, lr=trainer_cfg.lr, weight_decay=trainer_cfg.weight_decay)
    return torch.optim.AdamW(params, lr=trainer_cfg.lr, weight_decay=trainer_cfg.weight_decay)
