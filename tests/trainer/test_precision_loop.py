"""Mixed precision through the training loop: `auto` follows the CPU's flags, the checkpoint records the dtypes,
and a resumed run keeps them on hardware that would pick otherwise."""

from __future__ import annotations

import io
import json
import math

import pytest
from rich.console import Console

from agentrl import precision
from agentrl.trainer.checkpoint import list_checkpoints
from agentrl.trainer.loop import train
from tests.trainer.test_loop import _cfg


def _state(run_dir, step):
    return json.loads((run_dir / "checkpoints" / f"step_{step:06d}" / "state.json").read_text())


@pytest.mark.slow
def test_auto_trains_in_bf16_on_a_bf16_cpu_and_resume_keeps_bf16_where_auto_would_pick_fp32(tmp_path, monkeypatch):
    monkeypatch.setenv(precision.FLAGS_ENV, "avx512f amx_tile amx_bf16")
    out = io.StringIO()
    cfg = _cfg(tmp_path, "test_parity", "trainer.steps=1", "trainer.checkpoint_every=1")
    first = train(cfg, console=Console(file=out, width=200))
    assert "precision: trainer bfloat16 (this CPU has amx_bf16), engine bfloat16 (as the trainer)" in out.getvalue()
    assert _state(first.run_dir, 1)["precision"] == {"compute": "bfloat16", "engine": "bfloat16"}
    row = json.loads(first.metrics.read_text().splitlines()[0])
    # a bf16 engine against the bf16-autocast trainer: a real but small mismatch, and the step trained
    assert 0 < row["mismatch/logprob_abs_diff_max"] < 1.0 and math.isfinite(row["actor/grad_norm"])

    monkeypatch.setenv(precision.FLAGS_ENV, "avx512f")  # the same run continued on a CPU without bf16 units
    assert precision.resolve("auto").name == "float32"
    out = io.StringIO()
    again = train(_cfg(tmp_path, "test_parity", "trainer.steps=2", "trainer.checkpoint_every=1"),
                  resume=str(first.run_dir), console=Console(file=out, width=200))
    assert ("precision: trainer bfloat16, engine bfloat16 (as the resumed checkpoint records; emulated on this "
            "hardware)") in out.getvalue()
    assert [c.name for c in list_checkpoints(again.run_dir)][-1] == "step_000002"
    assert _state(again.run_dir, 2)["precision"] == {"compute": "bfloat16", "engine": "bfloat16"}


@pytest.mark.slow
def test_an_explicit_engine_dtype_runs_a_bf16_engine_beside_an_fp32_trainer(tmp_path):
    out = io.StringIO()
    cfg = _cfg(tmp_path, "test_parity", "rollout.engine_dtype=bfloat16")
    result = train(cfg, console=Console(file=out, width=200))
    assert "precision: trainer float32 (this CPU has no amx_bf16 or avx512_bf16" in out.getvalue()
    assert "engine bfloat16 (set in the config; emulated" in out.getvalue()
    row = json.loads(result.metrics.read_text().splitlines()[0])
    assert 0 < row["mismatch/logprob_abs_diff_max"] < 1.0
