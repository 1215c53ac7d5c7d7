"""Sharded training with PyTorch's FSDP2 (`torch.distributed.fsdp.fully_shard`) and its checkpoints (DCP).

`shard` makes every decoder layer an FSDP unit, then the root (embeddings, final norm, LM head): each rank keeps
1/N of every parameter, of its gradient and (the optimizer being built after sharding, over the shards) of
AdamW's moments; a layer's full weights exist only while its forward or backward runs. Nothing here shards
anything itself: FSDP2 does, and torch.distributed.checkpoint (DCP) writes and reads the shards.

- Mixed precision: with compute dtype bfloat16 the layers run on bf16 copies gathered from fp32 shards
  (MixedPrecisionPolicy param_dtype), and their gradients are reduced in fp32 into the fp32 master shards
  (reduce_dtype); the root stays fp32, as the LM head and loss do in one process (agentrl.precision). The layers'
  inputs are not cast (cast_forward_inputs=False): the residual stream and RoPE's cos/sin stay fp32 and autocast
  picks each op's dtype, as in one process.
- Gradients are SUMMED over ranks (gradient divide factor 1, sum-only collectives), not averaged as FSDP does by
  default: each rank's loss already is its part of the whole batch's loss (global denominators:
  agentrl.trainer.distributed), so the sum is the single-process gradient.
- The training forward (update.policy_logprobs: the body through model.base_model, then the LM head on chosen
  rows) is not the model's forward. It is registered as an FSDP forward method of the root (ROOT_FORWARD), so
  the root's parameters are gathered around it and its gradients reduced after the backward.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from types import MethodType
from typing import Any

import torch

from agentrl import precision

ROOT_FORWARD = "agentrl_policy_logprobs"
"""The root's registered forward method: update.py calls policy_logprobs through it when a model has it."""


def decoder_layers(model) -> torch.nn.ModuleList:
    """The transformer blocks of an HF causal LM (model.base_model.layers), each one FSDP unit."""
    layers = getattr(model.base_model, "layers", None)
    if not isinstance(layers, torch.nn.ModuleList):
        raise TypeError(f"trainer.strategy=fsdp: {type(model).__name__} has no base_model.layers to shard "
                        "(decoder-only models in the Llama/Qwen/Mistral layout are supported)")
    return layers


def shard(model, world, *, compute_dtype: str, forward: Callable | None = None):
    """Shard `model` in place over the world's ranks with FSDP2 (see the module docstring); `forward(model, ...)`
    becomes its ROOT_FORWARD method. Returns the model."""
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard, register_fsdp_forward_method

    mesh = init_device_mesh(world.device.type, (world.size,))
    low = precision.DTYPES[compute_dtype]
    # cast_forward_inputs=False: FSDP's default casts each layer's inputs (the residual stream, RoPE's cos/sin) to
    # bf16; the update's autocast (agentrl.precision) already runs the matmuls in bf16 and keeps those in fp32, as
    # in one process (docs/distributed.md states both errors against fp32).
    body = (MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32, cast_forward_inputs=False)
            if low != torch.float32 else None)
    for layer in decoder_layers(model):
        fully_shard(layer, mesh=mesh, **({"mp_policy": body} if body else {}))
    fully_shard(model, mesh=mesh)
    for module in model.modules():
        if hasattr(module, "set_force_sum_reduction_for_comms"):  # every FSDP unit: sum, never average
            module.set_gradient_divide_factor(1.0)
            module.set_force_sum_reduction_for_comms(True)
    if forward is not None:
        setattr(model, ROOT_FORWARD, MethodType(lambda self, *a, **k: forward(self, *a, **k), model))
        register_fsdp_forward_method(model, ROOT_FORWARD)
    return model


def is_sharded(model) -> bool:
    """True if model is an FSDP2 root."""
    from torch.distributed.fsdp import FSDPModule

    return isinstance(model, FSDPModule)


def full_state_dict(model) -> dict[str, torch.Tensor]:
    """The whole model's weights gathered onto rank 0's host (a collective: every rank calls it; the others get
    an empty dict)."""
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))


class GatheredWeights:
    """A full state dict in the shape engines take weights in (Engine.push_weights): `state_dict()` for the
    embedded engine's in-place copy, `save_pretrained(dir)` for SGLang's update_weights_from_disk. Floating
    tensors are cast to `dtype` (the engine's) once, here."""

    def __init__(self, model, state_dict: dict[str, torch.Tensor], dtype: torch.dtype):
        self._model = model
        self._state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state_dict.items()}

    def state_dict(self) -> dict[str, torch.Tensor]:
        """The gathered weights by parameter name."""
        return self._state

    def parameters(self):
        """None of the engine's tensors are shared with these (engine.embedded.shares_weights then copies)."""
        return iter(())

    def save_pretrained(self, path, safe_serialization: bool = True) -> None:
        """Write an HF model directory (config, generation config, safetensors) of these weights."""
        save_hf(self._model, self._state, Path(path))


def save_hf(model, state_dict: dict[str, torch.Tensor], path: Path) -> None:
    """An HF model directory of `state_dict` with `model`'s config: what `agentrl eval --model`, `agentrl serve`,
    `--init-from` and SGLang's --model-path read. A tied output embedding is left out (the loader ties it again),
    as save_pretrained does for an unsharded model, whatever the number of ranks that gathered it."""
    state = dict(state_dict)  # save_pretrained empties a state dict it is given
    if getattr(model.config, "tie_word_embeddings", False):
        head = model.get_output_embeddings()
        state.pop(next((f"{n}.weight" for n, m in model.named_modules() if m is head), ""), None)
    model.save_pretrained(path, state_dict=state, safe_serialization=True)


# ---- sharded checkpoints (torch.distributed.checkpoint) ----

SHARDS = "sharded"
"""Checkpoint subdirectory of the DCP shards (model and optimizer state of every rank, and DCP's .metadata)."""


def save_shards(ckpt: Path, model, optimizer, group) -> None:
    """Every rank writes its shards of the model and the optimizer state into ckpt/sharded (a collective)."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict

    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(ckpt / SHARDS), process_group=group)


def load_shards(ckpt: Path, model, optimizer, group) -> None:
    """Read ckpt/sharded into the sharded model and optimizer (a collective). DCP re-shards on load, so the
    checkpoint may have been written by another number of ranks."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(ckpt / SHARDS), process_group=group)
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def has_shards(ckpt: Path) -> bool:
    """True if ckpt holds DCP shards (written by trainer.strategy=fsdp)."""
    return (ckpt / SHARDS / ".metadata").is_file()


def recorded_world(ckpt: Path) -> dict[str, Any]:
    """The strategy and world size a checkpoint was written with (state.json; absent keys: one process)."""
    state = json.loads((ckpt / "state.json").read_text())
    return {"strategy": state.get("strategy", "single"), "world_size": int(state.get("world_size", 1))}
