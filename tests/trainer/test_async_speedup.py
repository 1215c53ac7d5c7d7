"""bench/async_speedup.py builds a config the loader accepts in each of its modes: sync refuses a
rollout.max_staleness, and the bench once passed one to all three, so it stopped before measuring anything."""

from __future__ import annotations

import runpy
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parents[2] / "bench" / "async_speedup.py"


def test_every_mode_has_a_valid_config(tmp_path):
    bench = runpy.run_path(str(BENCH))
    args = SimpleNamespace(model="tiny", staleness=2, tasks=4, group=4, concurrency=None, steps=8, eval=16)
    cfgs = {mode: bench["bench_config"](mode, args, tmp_path) for mode in bench["MODES"]}
    assert list(cfgs) == ["sync", "one_step_off", "async"]
    assert {m: c.rollout.mode for m, c in cfgs.items()} == {m: m for m in cfgs}
    assert cfgs["async"].rollout.max_staleness == 2 and cfgs["one_step_off"].rollout.max_staleness == 1
    assert {c.rollout.concurrency for c in cfgs.values()} == {(2 + 1) * 4 * 4}  # every mode admits the same
    assert all(c.trainer.run_dir == str(tmp_path / m) for m, c in cfgs.items())
