"""Logs written to a file or a pipe (`agentrl train ... > log 2>&1`, CI, nohup): whole lines, no progress bars."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_cli import TINY_RUN

REPO = Path(__file__).resolve().parents[1]
PROGRESS = re.compile(r"^(step|sft) \d+/\d+ \w+: \d+/\d+ episodes, \d+s")
"""A plain progress line: `step 1/2 rollout: 4/8 episodes, 3s (…)`."""


def _logged(tmp_path: Path, *argv: str) -> list[str]:
    """Run `agentrl ARGV` with stdout and stderr both going to a file, as `> log 2>&1` does; the file's lines."""
    log = tmp_path / "log.txt"
    with open(log, "w") as f:
        r = subprocess.run([sys.executable, "-m", "agentrl", *argv], stdout=f, stderr=subprocess.STDOUT, cwd=REPO,
                           timeout=600)
    text = log.read_text()
    assert r.returncode == 0, text
    assert "━" not in text and "\r" not in text, text  # no bar, no carriage-return redraws
    return text.splitlines()


@pytest.mark.slow
def test_train_and_its_warm_start_logged_to_a_file_write_whole_lines(tmp_path):
    """Guards step summaries wrapped at 80 columns (so `grep '^step'` lost the rest of each) and the progress
    bar's last frame left in the file as a fragment ('step 2… episodes … (4 → 8 episodes: … (dynami…')."""
    run = tmp_path / "run"
    lines = _logged(tmp_path, "train", "--env", "tests.test_cli:ParityEnv", *TINY_RUN, "sft.episodes=2",
                    "sft.epochs=1", f"trainer.run_dir={run}")
    summaries = [line for line in lines if re.match(r"^step \d+: reward ", line)]
    assert len(summaries) == 2, lines
    for line in summaries:  # the whole summary, its timings at the end included, on one line
        assert re.search(r"kept \d+/\d+ groups .+ \|  rollout \d+\.\ds", line), line
    assert any(line.startswith("2 tasks × 2 samples = 4 trajectories/step, ≤ 1 turns and ≤ 128 tokens each; 2 "
                               "steps; micro-batches of ≤ ") for line in lines), lines
    for line in lines:  # every line that starts like progress is a whole progress line, a summary or sft's own
        if line.startswith(("step ", "sft ")):
            assert PROGRESS.match(line) or re.match(r"^step \d+: reward |^sft epoch \d+/\d+: mean loss", line), line
    assert any(PROGRESS.match(line) and line.startswith("sft 1/1") for line in lines), lines


@pytest.mark.slow
def test_eval_logged_to_a_file_writes_a_line_per_episode_and_the_summary(tmp_path):
    lines = _logged(tmp_path, "eval", "--env", "tests.test_cli:ParityEnv", "--model", "tiny", "--num-tasks", "3",
                    "--max-new-tokens", "8", "--out", str(tmp_path / "r.jsonl"))
    episodes = [line for line in lines if re.match(r"^\[\d/3\] ", line)]
    assert len(episodes) == 3 and all(re.search(r"— resolved \d/\d$", line) for line in episodes), lines
    assert any(line.startswith("episodes ") for line in lines) and lines[-1].startswith("wall time"), lines
