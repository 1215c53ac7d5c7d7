"""bench/learn_swe.py runs end to end on a tiny budget (--quick, the tiny model): every phase is evaluated on
the same held-out level-0 tasks, greedy and with K paired samples per task, summary.json, record.json and the
dashboard are written, and a stopped evaluation, the pilot and --reeval --reuse go on from the same state
directory. Its resume after real signals is test_learn_swe_resume.py's."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[3] / "bench" / "learn_swe.py"
K = 2  # samples per held-out task


def episodes(out: Path, stem: str) -> list[dict]:
    return [json.loads(x) for x in (out / f"episodes_{stem}.jsonl").read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.docker
@pytest.mark.timeout(1800)
def test_quick_run_evaluates_every_phase_greedy_and_sampled_resumes_and_pilots(tmp_path, docker_backend):
    """The bench end to end on its smallest budget, one state directory for every check (each full run of the
    pipeline costs about two minutes here, so the checks share one). Guards: a phase evaluated on other tasks than
    the rest, held-out modules leaking into GRPO's training tasks, a missing paired test or control row, the
    sampled evaluation drawing other seeds for the same (task, j) in another phase (the comparison stops being
    paired), a resumed sampled evaluation that runs kept episodes again or drops them, the pilot not reusing the
    warm start's family-0 episodes or drawing family 1 from the same seeds, and --reeval --reuse evaluating an
    unchanged checkpoint again or skipping a rewritten one."""
    main = runpy.run_path(str(BENCH))["main"]
    args = ["--quick", "--model", "tiny", "--samples", str(K), "--out", str(tmp_path),
            f"env.kwargs.backend={docker_backend}"]
    main(args)
    summary = json.loads((tmp_path / "summary.json").read_text())

    # greedy: every phase on the same held-out tasks, split from training by module, with the paired sign tests
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

    # sampled (--samples K): the same seeds for each (task, j) in every phase, the paired statistics in record.json
    record = json.loads((tmp_path / "record.json").read_text())
    assert [r["phase"] for r in record["rows"]] == ["base model", "warm start", "GRPO", "control"]
    assert record["sampled"] == summary["sampled"]
    sampled = record["sampled"]
    assert [r["phase"] for r in sampled["rows"]] == ["base model", "warm start", "GRPO", "control"]
    assert all(r["episodes"] == 2 * K and r["min_samples"] == K and r["n"] == 2 for r in sampled["rows"])
    assert sampled["samples"] == K and sampled["temperature"] == 1.0 and "name_seed" in sampled["seeds"]
    paired = sampled["paired"]["GRPO vs warm start"]["0"]
    assert set(paired) == {"tasks", "mean_diff", "ci95", "p_permutation", "gained", "lost", "p_sign", "clusters",
                           "p_clustered"}
    assert paired["tasks"] == 2 and paired["clusters"] == 2  # --quick's two tasks come from two modules
    assert sampled["paired"]["GRPO vs control"]["0"]["tasks"] == 2
    seeds = {stem: {(r["instance_id"], r["sample"]): r["sampling_seed"] for r in episodes(tmp_path, stem)}
             for stem in (f"{p}_level0_k{K}" for p in ("base_model", "warm_start", "GRPO", "control"))}
    assert len(seeds[f"GRPO_level0_k{K}"]) == 2 * K
    assert len({tuple(sorted(s.items())) for s in seeds.values()}) == 1

    # an evaluation stopped after its first episode: the rerun keeps it (verbatim, first) and runs the other three
    stem = f"GRPO_level0_k{K}"
    lines = (tmp_path / f"episodes_{stem}.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / f"episodes_{stem}.jsonl").write_text(lines[0])
    (tmp_path / f"heldout_{stem}.json").unlink()
    main(args)
    now = (tmp_path / f"episodes_{stem}.jsonl").read_text().splitlines(keepends=True)
    assert now[0] == lines[0] and len(now) == 2 * K
    assert len({(json.loads(x)["instance_id"], json.loads(x)["sample"]) for x in now}) == 2 * K

    # the pilot in the same directory: the warm start's family-0 evaluation is reused, family 1 draws other seeds
    pilot = main([*args, "--pilot"])
    level = pilot["levels"][0]
    assert level["tasks"] == 2 and set(level["detectable"]) == {"seeds", "copies"}
    warm = seeds[f"warm_start_level0_k{K}"]
    family1 = {(r["instance_id"], r["sample"]): r["sampling_seed"]
               for r in episodes(tmp_path, f"warm_start_level0_k{K}_seeds1")}
    assert family1.keys() == warm.keys() and not set(family1.values()) & set(warm.values())
    assert (tmp_path / "sft_copy").is_dir() and len(episodes(tmp_path, f"warm_start_copy_level0_k{K}")) == 2 * K
    again = main(args)
    assert again["sampled"]["pilot"] == json.loads((tmp_path / "pilot.json").read_text())

    # --reeval --reuse: unchanged checkpoints are not evaluated again; a rewritten one is
    greedy_episodes = tmp_path / "episodes_GRPO_level0.txt"
    greedy_episodes.unlink()
    again = main([*args, "--reeval", "--reuse"])
    assert not greedy_episodes.exists()
    assert json.loads(json.dumps(again["paired_grpo_vs_warm_start"])) == summary["paired_grpo_vs_warm_start"]
    weights = next(Path(summary["checkpoints"]["grpo"], "model").glob("*.safetensors"))
    weights.write_bytes(weights.read_bytes())  # same path, a new file: could be a retrained checkpoint
    main([*args, "--reeval", "--reuse"])
    assert greedy_episodes.exists()


def test_reuse_needs_reeval(tmp_path):
    main = runpy.run_path(str(BENCH))["main"]
    with pytest.raises(SystemExit):
        main(["--quick", "--reuse", "--out", str(tmp_path)])
