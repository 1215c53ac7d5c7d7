"""Without a terminal (a log file, a pipe, CI) the run still says where it is: plain progress lines."""

from __future__ import annotations

import io

from rich.console import Console

from agentrl.trainer import monitor as monitor_mod
from agentrl.trainer.monitor import Monitor


def test_a_run_logged_to_a_file_prints_plain_progress_lines(tmp_path, monkeypatch):
    out = io.StringIO()
    console = Console(file=out, force_terminal=False, width=200)
    monkeypatch.setattr(monitor_mod, "PLAIN_EVERY_S", 0.0)
    with Monitor(tmp_path, total_steps=3, tensorboard=False, console=console) as m:
        m.begin_step(1, 4, label="sft", steps=1)
        with m.phase("expert"):
            m.episodes_done(1)
            m.episodes_done(3)
    lines = out.getvalue().splitlines()
    assert "sft 1/1 rollout: 0/4 episodes, 0s" in lines
    assert any(line.startswith("sft 1/1 expert: 1/4 episodes") for line in lines)
    assert any(line.startswith("sft 1/1 expert: 4/4 episodes") for line in lines)


def test_plain_lines_are_rate_limited_but_the_last_episode_always_shows(tmp_path):
    out = io.StringIO()
    with Monitor(tmp_path, total_steps=1, tensorboard=False, console=Console(file=out, force_terminal=False)) as m:
        m.begin_step(1, 50)
        for _ in range(50):
            m.episodes_done(1)
    lines = [line for line in out.getvalue().splitlines() if line.startswith("step 1/1 rollout:")]
    assert lines[0].startswith("step 1/1 rollout: 0/50") and lines[-1].startswith("step 1/1 rollout: 50/50")
    assert len(lines) == 2  # the 48 in between fall inside PLAIN_EVERY_S


def test_a_terminal_gets_the_live_bar_only(tmp_path):
    out = io.StringIO()
    with Monitor(tmp_path, total_steps=1, tensorboard=False, console=Console(file=out, force_terminal=True)) as m:
        m.begin_step(1, 2)
        m.episodes_done(2)
    assert "rollout: 2/2 episodes" not in out.getvalue()
