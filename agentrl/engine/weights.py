"""Loading new weights into a live model: from a state dict or an HF directory, checked before copying."""

from __future__ import annotations

from pathlib import Path

import torch

from agentrl.engine.errors import EngineRequestError
from agentrl.precision import UNTIED_HEAD


def load_state_dict_dir(path: str | Path) -> dict[str, torch.Tensor]:
    """Read the weights of an HF model directory (*.safetensors, else pytorch_model*.bin) into a state dict."""
    path = Path(path)
    files = sorted(path.glob("*.safetensors"))
    if files:
        from safetensors.torch import load_file

        return {k: v for f in files for k, v in load_file(str(f)).items()}
    files = sorted(path.glob("pytorch_model*.bin"))
    if files:
        return {k: v for f in files for k, v in torch.load(f, map_location="cpu", weights_only=True).items()}
    raise EngineRequestError(f"{path} holds no weights (*.safetensors or pytorch_model*.bin)")


def load_weights(model, state_dict: dict[str, torch.Tensor]) -> None:
    """Copy a state dict into the model after checking names and shapes (nothing is copied on a mismatch)."""
    state_dict = _with_untied_head(model, state_dict)
    own = model.state_dict()
    unexpected = sorted(set(state_dict) - set(own))
    storage = {t.data_ptr() for k, t in own.items() if k in state_dict}
    missing = sorted(k for k in set(own) - set(state_dict) if own[k].data_ptr() not in storage)  # tied ok
    wrong = sorted(k for k, v in state_dict.items() if k in own and tuple(v.shape) != tuple(own[k].shape))
    if unexpected or missing or wrong:
        raise EngineRequestError(
            "weights do not fit the model: "
            + "; ".join(
                f"{label}: {', '.join(keys[:5])}{' …' if len(keys) > 5 else ''}"
                for label, keys in (("unexpected", unexpected), ("missing", missing), ("wrong shape", wrong))
                if keys
            )
        )
    model.load_state_dict(state_dict, strict=False)


def _with_untied_head(model, state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Weights of a model with tied embeddings may omit the output embedding (save_pretrained drops it); an
    inference copy in bf16 holds its own fp32 head (agentrl.precision.inference_copy): fill it from the input
    embedding."""
    head, embed = model.get_output_embeddings(), model.get_input_embeddings()
    if not getattr(model.config, UNTIED_HEAD, False) or head is None or embed is None:
        return state_dict
    names = {id(p): n for n, p in model.named_parameters(remove_duplicate=False)}
    head_key, embed_key = names.get(id(head.weight)), names.get(id(embed.weight))
    if head_key in state_dict or embed_key not in state_dict:
        return state_dict
    return {**state_dict, head_key: state_dict[embed_key]}
