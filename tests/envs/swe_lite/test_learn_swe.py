"""bench/learn_swe.py runs end to end on a tiny budget (--quick, the tiny model): every phase is evaluated on
the same held-out level-0 tasks, and summary.json and the dashboard are written."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docker, pytest.mark.timeout(1800)]
BENCH = Path(__file__).resolve().parents[3] / "bench" / "learn_swe.py"


def test_quick_run_writes_summary_and_dashboard(tmp_path, docker_backend):
    main = runpy.run_path(str(BENCH))["main"]
    main(["--quick", "--model", "tiny", "--out", str(tmp_path), f"env.kwargs.backend={docker_backend}"])
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert [r["phase"] for r in summary["rows"]] == ["base model", "warm start", "GRPO", "control"]
    tasks = summary["held_out_tasks"]["0"]
    assert len(tasks) == 2 and all(r["n"] + r["masked"] == 2 and r["level"] == 0 for r in summary["rows"])
    held_out_modules = {t.split("-")[0] for t in tasks}
    trained = [json.loads(x)["task_id"] for x in (tmp_path / "grpo" / "trajectories.jsonl").read_text().splitlines()]
    assert trained and not {t.split("-")[0] for t in trained} & held_out_modules  # split by module
    assert set(summary["paired_grpo_vs_warm_start"]["0"]) == {"gained", "lost", "p_value"}
    assert set(summary["paired_grpo_vs_control"]["0"]) == {"gained", "lost", "p_value"}
    control = summary["control"]  # rft from the warm start for GRPO's training wall time
    assert control["kind"] == "rft" and control["rounds"] >= 1 and control["wall_s"] >= control["budget_s"] > 0
    assert control["budget_s"] == round(json.loads((tmp_path / "clock.json").read_text())["grpo"]["s"], 1)
    assert (tmp_path / "dashboard.png").stat().st_size > 0 and Path(summary["checkpoints"]["grpo"]).is_dir()
    for phase in ("warm_start", "GRPO", "control"):  # each phase's result is stored with what it was measured on
        stored = json.loads((tmp_path / f"heldout_{phase}_level0.json").read_text())
        assert stored["tasks"] == tasks and stored["n"] + stored["masked"] == 2

    # --reeval --reuse: unchanged checkpoints are not evaluated again; a rewritten one is
    episodes = tmp_path / "episodes_GRPO_level0.txt"
    episodes.unlink()
    again = main(["--quick", "--model", "tiny", "--out", str(tmp_path), "--reeval", "--reuse",
                  f"env.kwargs.backend={docker_backend}"])
    assert not episodes.exists()
    assert json.loads(json.dumps(again["paired_grpo_vs_warm_start"])) == summary["paired_grpo_vs_warm_start"]
    weights = next(Path(summary["checkpoints"]["grpo"], "model").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes())  # same path, a new file: could be a retrained checkpoint
    main(["--quick", "--model", "tiny", "--out", str(tmp_path), "--reeval", "--reuse",
          f"env.kwargs.backend={docker_backend}"])
    assert episodes.exists()


def test_reuse_needs_reeval(tmp_path):
    main = runpy.run_path(str(BENCH))["main"]
    with pytest.raises(SystemExit):
        main(["--quick", "--reuse", "--out", str(tmp_path)])
