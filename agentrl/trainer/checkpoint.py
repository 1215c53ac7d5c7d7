"""Atomic checkpoints: an HF model directory plus optimizer, scheduler, RNG and loop state.

Layout of run_dir/checkpoints/step_000010/:
    model/          HF format (config.json, model.safetensors, tokenizer): loadable by transformers, by
                    `agentrl train --init-from`, and by SGLang `--model-path`
    trainer.pt      optimizer and scheduler state
    sharded/        trainer.strategy=fsdp only: every rank's DCP shards of model and optimizer state (the optimizer
                    is then not in trainer.pt; agentrl.trainer.strategy)
    rng.pt          python, torch (and numpy if present) RNG states
    state.json      step, data cursor, policy version, anything the loop needs to resume exactly
    complete.json   written last: file sizes; a directory without a matching record is ignored

Everything is written to a temporary directory and renamed into place, so a `kill -9` at any moment leaves
either the previous checkpoints or a complete new one — never one that loads wrong.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

from agentrl.errors import ConfigError

_RECORD = "complete.json"


def _fsync_tree(root: Path) -> None:
    for p in sorted(root.rglob("*")):
        if p.is_file():
            with open(p, "rb") as f:
                os.fsync(f.fileno())


def _record_files(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_size for p in sorted(root.rglob("*")) if p.is_file()}


def is_complete(ckpt: Path) -> bool:
    """True if ckpt was fully written (its record exists and every file has the recorded size)."""
    try:
        files = json.loads((ckpt / _RECORD).read_text())["files"]
        return bool(files) and all((ckpt / n).is_file() and (ckpt / n).stat().st_size == s for n, s in files.items())
    except (OSError, ValueError, KeyError, TypeError):
        return False


def rng_state() -> dict[str, Any]:
    """Every RNG the loop draws from (the CUDA generators too, once CUDA is in use)."""
    state: dict[str, Any] = {"python": random.getstate(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    try:
        import numpy as np

        state["numpy"] = np.random.get_state()
    except ImportError:
        pass
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what rng_state() captured."""
    random.setstate(state["python"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available() and torch.cuda.device_count() == len(state["cuda"]):
        torch.cuda.set_rng_state_all(state["cuda"])  # a resume on other hardware keeps its own CUDA streams
    if "numpy" in state:
        import numpy as np

        np.random.set_state(state["numpy"])


def save_checkpoint(
    run_dir: str | Path,
    step: int,
    *,
    model,
    tokenizer=None,
    optimizer: torch.optim.Optimizer | None = None,
    scheduler=None,
    state: dict[str, Any] | None = None,
    keep: int = 2,
    write_model: Callable[[Path], None] | None = None,
) -> Path:
    """Write checkpoint `step` atomically under run_dir/checkpoints and prune to the `keep` newest.

    write_model(tmp) writes the model's part into the temporary directory instead of model.save_pretrained
    (a sharded run: every rank's shards and the gathered HF export; agentrl.trainer.strategy)."""
    root = Path(run_dir) / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    final = root / f"step_{step:06d}"
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-step_{step:06d}-", dir=root))
    try:
        if write_model is None:
            model.save_pretrained(tmp / "model", safe_serialization=True)
        else:
            write_model(tmp)
        if tokenizer is not None:
            tokenizer.save_pretrained(tmp / "model")
        torch.save(
            {
                "optimizer": optimizer.state_dict() if optimizer is not None else None,
                "scheduler": scheduler.state_dict() if scheduler is not None else None,
            },
            tmp / "trainer.pt",
        )
        torch.save(rng_state(), tmp / "rng.pt")
        (tmp / "state.json").write_text(json.dumps({"step": step, **(state or {})}, indent=2))
        _fsync_tree(tmp)
        (tmp / _RECORD).write_text(json.dumps({"step": step, "files": _record_files(tmp)}))
        _fsync_tree(tmp)
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    prune(root, keep)
    return final


def list_checkpoints(run_dir: str | Path) -> list[Path]:
    """Complete checkpoints of a run, oldest first (incomplete or temporary directories are skipped)."""
    root = Path(run_dir) / "checkpoints"
    if not root.is_dir():
        return []
    return sorted(p for p in root.glob("step_*") if p.is_dir() and is_complete(p))


def latest_checkpoint(run_dir: str | Path) -> Path | None:
    """The newest complete checkpoint, or None."""
    found = list_checkpoints(run_dir)
    return found[-1] if found else None


def prune(root: Path, keep: int) -> None:
    """Delete all but the `keep` newest complete checkpoints, and leftovers of interrupted writes."""
    for leftover in root.glob(".tmp-step_*"):
        shutil.rmtree(leftover, ignore_errors=True)
    complete = sorted(p for p in root.glob("step_*") if p.is_dir() and is_complete(p))
    for old in complete[:-keep] if keep > 0 else []:
        shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(ckpt: str | Path, *, optimizer=None, scheduler=None, restore_rng: bool = True) -> dict[str, Any]:
    """Restore optimizer, scheduler and RNG state from ckpt (the model is loaded from ckpt/model); returns state.json.

    Tensors are read onto the host whatever device wrote them (a GPU run resumes on a CPU-only machine and the
    other way round); the optimizer's load_state_dict moves its state to its parameters' device."""
    ckpt = Path(ckpt)
    if not is_complete(ckpt):
        raise FileNotFoundError(f"{ckpt} is not a complete agentrl checkpoint")
    trainer = torch.load(ckpt / "trainer.pt", weights_only=False, map_location="cpu")
    if optimizer is not None:
        if not isinstance(trainer, dict) or trainer.get("optimizer") is None:
            raise ConfigError(_no_optimizer_state(ckpt))
        optimizer.load_state_dict(trainer["optimizer"])
    if scheduler is not None and trainer["scheduler"] is not None:
        scheduler.load_state_dict(trainer["scheduler"])
    if restore_rng:
        set_rng_state(torch.load(ckpt / "rng.pt", weights_only=False, map_location="cpu"))
    return json.loads((ckpt / "state.json").read_text())


def _no_optimizer_state(ckpt: Path) -> str:
    """Why a checkpoint's trainer.pt cannot restore an optimizer, and what to do instead."""
    where = f"{ckpt / 'trainer.pt'} holds no optimizer state"
    if (ckpt / "sharded").is_dir():
        return (f"{where}: trainer.strategy=fsdp wrote it (the AdamW state is in its sharded/ folder); resume it with "
                f"trainer.strategy=fsdp, or start a new run from its weights with --init-from {ckpt}")
    return (f"{where}, so resuming would restart AdamW from zero; start a new run from its weights with "
            f"--init-from {ckpt}")


def model_dir(path: str | Path) -> Path:
    """Accept a checkpoint directory or its model/ subdirectory and return the HF model directory."""
    path = Path(path)
    return path / "model" if (path / "model" / "config.json").is_file() else path
