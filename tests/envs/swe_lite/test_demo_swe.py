"""`make demo`'s last lines: its own before/after table, then GRPO's own share as bench/learn_swe.py measured it
(figure, sign test, command, commit, date) from the committed record, or a plain statement that it cannot show
it. Rendered from records, without the 15-minute run."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DEMO = runpy.run_path(str(ROOT / "scripts" / "demo_swe.py"))


def row(phase: str, solved: int, n: int, level: int = 0) -> dict:
    return {"phase": phase, "level": level, "resolved": solved / n, "ci95": [0.0, 1.0], "n": n, "solved": solved,
            "masked": 0, "train_s": 1.0, "eval_s": 1.0}


MEASURED = {"status": "measured", "env": "swe_lite", "model": "smollm2-135m-instruct", "split": "dev,test",
            "rows": [row("base model", 0, 75), row("warm start", 30, 154), row("GRPO", 41, 154)],
            "paired": {"0": {"gained": 17, "lost": 6, "p_value": 0.034}},
            "audit": {"0": {"resolved": 41, "flagged": 0}},
            "command": ".venv/bin/python bench/learn_swe.py --levels 0 --out /work/learn_state", "commit": "abc1234",
            "started": "2026-12-05 08:04:03 +0000", "finished": "2026-12-05 13:00:00 +0000",
            "cpu": "Intel(R) Xeon(R) Processor", "precision": {"trainer": "bfloat16", "engine": "bfloat16",
                                                              "evaluation": "float32"},
            "grader": "the judge", "total_s": 17000.0}


def test_a_finished_measurement_is_quoted_with_its_figure_test_command_commit_and_date():
    text = "\n".join(DEMO["measured_lines"](json.loads(json.dumps(MEASURED))))
    assert "warm start 30/154 → GRPO 41/154" in text
    assert "solves 17 the warm start does not, loses 6 (exact sign test p = 0.034)" in text
    assert "0 of 41 resolved GRPO episodes flagged by the non-fix audit" in text
    assert MEASURED["command"] in text and "abc1234, 2026-12-05 13:00:00" in text and "the judge" in text
    assert "rerun" not in text
    respelled = dict(MEASURED, rerun=".venv/bin/python bench/learn_swe.py --levels 0 --out runs/learn_swe")
    assert "rerun     .venv/bin/python bench/learn_swe.py --levels 0 --out runs/learn_swe" in "\n".join(
        DEMO["measured_lines"](respelled))


def test_the_committed_record_renders_whichever_state_it_is_in():
    committed = DEMO["load_record"]()  # docs/learn_swe.json as shipped
    assert committed is not None, "docs/learn_swe.json is missing or unreadable"
    text = "\n".join(DEMO["measured_lines"](committed))
    if committed.get("status") == "measured":  # once the run is published, the quote renders from it
        assert committed["commit"] in text and "exact sign test p =" in text and committed["command"] in text
    else:
        assert "cannot show it" in text and committed["command"] in text and committed["commit"] in text
        assert "28/152" not in text.replace(committed["note"], "")  # the old figure only as the note labels it
    assert "cannot show it" in "\n".join(DEMO["measured_lines"](None))


def test_the_demo_table_names_each_phase_and_the_verdict():
    summary = {"rows": [row("base model", 0, 12), row("warm start", 3, 12), row("GRPO", 4, 12)],
               "paired_grpo_vs_warm_start": {0: {"gained": 1, "lost": 0, "p_value": 1.0}}}
    text = "\n".join(DEMO["demo_table"](summary))
    assert "before: base model" in text and "3/12" in text and "4/12" in text
    assert "The warm start accounts for the gain (+0.25); GRPO's own change (+0.08, p = 1) is not significant" in text
