"""bench/learn_calc.py end to end on the tiny model and a tiny budget: GRPO variants from one warm start are each
trained in their own folder, evaluated on the same held-out tasks and paired with the warm start and the first."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]
BENCH = Path(__file__).resolve().parents[2] / "bench" / "learn_calc.py"
BUDGET = ["--model", "tiny", "--sft-episodes", "2", "--grpo-steps", "1", "--eval", "4",
          "rollout.tasks_per_step=1", "rollout.group_size=2", "rollout.max_turns=2"]
TINY = [*BUDGET, "--skip-base"]


def test_variants_train_apart_and_pair_on_the_same_tasks(tmp_path):
    main = runpy.run_path(str(BENCH))["main"]
    summary = main(["--out", str(tmp_path), *TINY, "--variant", "fp32:",
                    "--variant", "bf16 moments: trainer.optimizer_state=bfloat16"])
    assert list(summary["phases"]) == ["after SFT", "fp32", "bf16 moments"]
    assert summary["variants"]["bf16 moments"]["overrides"][-1] == "trainer.optimizer_state=bfloat16"
    for name, folder in (("fp32", "grpo_fp32"), ("bf16 moments", "grpo_bf16_moments")):
        config = (tmp_path / folder / "config.yaml").read_text()
        assert ("optimizer_state: bfloat16" in config) == (name == "bf16 moments")
        assert summary["phases"][name]["n"] + summary["phases"][name]["masked"] == 4
    assert set(summary["paired"]["bf16 moments"]) == {"vs_sft", "vs_fp32"}
    assert set(summary["paired"]["fp32"]) == {"vs_sft"}
    assert json.loads((tmp_path / "summary.json").read_text())["paired"] == summary["paired"]


@pytest.mark.parametrize("bad", ["no colon here", "after SFT: trainer.lr=1e-5", "x: trainer.lr_sched=1"])
def test_a_bad_variant_stops_before_any_training(tmp_path, bad):
    main = runpy.run_path(str(BENCH))["main"]
    with pytest.raises(SystemExit):
        main(["--out", str(tmp_path), *BUDGET, "--variant", bad])  # before the base model's evaluation, too
    assert not (tmp_path / "sft").exists()


def test_equal_time_gives_later_variants_the_first_ones_wall_time(tmp_path):
    main = runpy.run_path(str(BENCH))["main"]
    summary = main(["--out", str(tmp_path), *TINY, "--equal-time", "--variant", "1 epoch:",
                    "--variant", "2 epochs: trainer.ppo_epochs=2"])
    import yaml

    first = yaml.safe_load((tmp_path / "grpo_1_epoch" / "config.yaml").read_text())["trainer"]
    second = yaml.safe_load((tmp_path / "grpo_2_epochs" / "config.yaml").read_text())["trainer"]
    assert first["max_train_s"] is None and first["steps"] == 1
    assert second["max_train_s"] == pytest.approx(summary["phases"]["1 epoch"]["train_s"], abs=0.1)
    assert second["steps"] == 10 and second["ppo_epochs"] == 2
    assert summary["variants"]["1 epoch"]["steps"] == 1 and 1 <= summary["variants"]["2 epochs"]["steps"] <= 10
