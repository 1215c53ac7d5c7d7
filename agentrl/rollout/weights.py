"""Loading new weights into a live model: from a state dict or an HF directory, checked before copying."""

from __future__ import annotations

from pathlib import Path

import torch

from agentrl.rollout.engine_errors import EngineRequestError


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
