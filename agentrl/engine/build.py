"""The one place engines are built: training, `agentrl eval`, `agentrl gateway`, Ray rollout workers and the SWE
benchmarks all call `build_engine`, so a new engine option (a device, a dtype, a backend) is added once."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentrl import precision
from agentrl.engine.protocol import Engine
from agentrl.precision import Precision


def compute_precision(cfg) -> Precision:
    """The trainer's compute dtype (model.compute_dtype resolved on model.device) and why."""
    return precision.resolve(cfg.model.compute_dtype, cfg.model.device)


def engine_precision(cfg) -> Precision:
    """The embedded engine's dtype: rollout.engine_dtype, or the trainer's compute dtype when auto."""
    if cfg.rollout.engine_dtype == "auto":
        return Precision(compute_precision(cfg).name, "as the trainer")
    return precision.resolve(cfg.rollout.engine_dtype, cfg.model.device)


def build_engine(cfg, model: Any = None, tokenizer: Any = None, *, urls: Sequence[str] | None = None,
                 api_key: str | None = None, seed: int | None = None) -> Engine:
    """The engine the run config `cfg` (agentrl.config.Config) asks for.

    A client of SGLang servers when `urls` is given or rollout.engine is sglang (then rollout.urls; `api_key` is
    their bearer key). Otherwise the embedded engine in engine_precision(cfg) on model.device, seeded with `seed`
    (default rollout.seed), on `model`: a loaded module (the trainer's; in sync mode, where generation and
    training alternate, the engine runs on the trainer's own tensors when the dtypes match, else on a copy
    converted at every weight sync) or None for cfg.model.name, loaded here."""
    r = cfg.rollout
    if urls or r.engine == "sglang":
        from agentrl.engine.sglang_client import SGLangClient

        return SGLangClient(list(urls or r.urls), api_key=api_key)
    from agentrl.engine.embedded import EmbeddedEngine, engine_view

    dtype = engine_precision(cfg).name
    if model is None:
        model = cfg.model.name
    elif not isinstance(model, str) and precision.DTYPES[dtype] == precision.param_dtype(model):
        model = engine_view(model, share_weights=r.mode == "sync")
    return EmbeddedEngine(model, tokenizer, dtype=dtype, device=cfg.model.device,
                          seed=r.seed if seed is None else seed, max_batch_size=r.max_batch_size,
                          packed_weights=r.packed_weights)
