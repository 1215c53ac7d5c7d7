"""Without a terminal (a log file, a pipe, CI) the run still says where it is: plain progress lines."""

from __future__ import annotations

import io
import time

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


def test_a_phase_with_no_event_still_says_where_the_run_is(tmp_path, monkeypatch):
    """Guards a silent log through a 133-s rollout and a 2.5-min warm-start epoch (issue 55 item 9): with no episode
    finishing, a plain line still comes every PLAIN_EVERY_S, its elapsed time growing."""
    out = io.StringIO()
    monkeypatch.setattr(monitor_mod, "PLAIN_EVERY_S", 1.0)
    with Monitor(tmp_path, total_steps=1, tensorboard=False, console=Console(file=out, force_terminal=False)) as m:
        m.begin_step(1, 4)
        with m.phase("rollout"):
            time.sleep(3.4)  # nothing happens: no episode finishes
    lines = [line for line in out.getvalue().splitlines() if line.startswith("step 1/1 rollout: 0/4 episodes")]
    assert len(lines) >= 3 and lines[-1] != lines[0], lines  # the start, then heartbeats as time goes on


def test_the_step_line_shows_the_trained_reward_beside_the_envs_when_they_differ():
    """Guards 'reward 0.000' as the whole story of a step that trained on a format reward (issue 55 item 10)."""
    from agentrl.trainer.monitor import summary_line

    shaped = summary_line(3, {"rollout/reward_mean": 0.0, "rollout/reward_trained_mean": 0.05})
    assert shaped.startswith("step 3: reward 0.000 (trained on 0.050)  "), shaped
    plain = summary_line(3, {"rollout/reward_mean": 0.25, "rollout/reward_trained_mean": 0.25})
    assert plain.startswith("step 3: reward 0.250  kept"), plain


def test_a_terminal_gets_the_live_bar_only(tmp_path):
    out = io.StringIO()
    with Monitor(tmp_path, total_steps=1, tensorboard=False, console=Console(file=out, force_terminal=True)) as m:
        m.begin_step(1, 2)
        m.episodes_done(2)
    assert "rollout: 2/2 episodes" not in out.getvalue()


# ---- flagged episodes: the console's hack warning (the CLI run with planted flags: tests/test_cli_flagged.py) ----

from agentrl.trainer.monitor import FlaggedWatch  # noqa: E402

CLEAN = {"grading_valid": True}
SUSPICIOUS = {"grading_valid": True, "suspicious": True}
REFUSED = {"grading_valid": False, "grading_reason": "refused", "grading_refused": "forged answer"}


def test_the_warning_needs_more_than_2_percent_of_graded_episodes():
    """1 of 50 graded episodes is 2%: no warning; a second flagged episode passes it. Ungraded episodes (an env
    whose grader reports nothing) are no part of the share."""
    watch = FlaggedWatch(share=0.02, window=5)
    assert watch.observe(1, [SUSPICIOUS] + [CLEAN] * 49 + [{}] * 100) is None
    line = watch.observe(2, [REFUSED] + [CLEAN] * 24)
    assert line == ("warning: 2 of 75 graded episodes of steps 1–2 (2.7%) were flagged by the grader (1 suspicious: "
                    "rollout/suspicious_share; 1 refused by the judge: rollout/refused_share), over 2%: the reward "
                    "may be rising from hacks, not fixes"), line


def test_the_warning_repeats_once_per_window_while_the_share_stays_high():
    watch = FlaggedWatch(share=0.02, window=3)
    said = [step for step in range(1, 10) if watch.observe(step, [SUSPICIOUS, CLEAN]) is not None]
    assert said == [1, 4, 7]
    both = {**SUSPICIOUS, "grading_refused": "forged"}  # one episode, two flags: counted once
    assert "1 of 1 graded episodes of step 1 (100.0%)" in FlaggedWatch().observe(1, [both])


def test_a_window_that_falls_back_under_the_share_is_quiet():
    watch = FlaggedWatch(share=0.02, window=2)
    assert watch.observe(1, [SUSPICIOUS] + [CLEAN] * 9) is not None
    assert [watch.observe(s, [CLEAN] * 10) for s in (2, 3, 4)] == [None, None, None]


def test_each_step_line_says_how_long_the_rest_of_the_run_takes_at_its_pace(tmp_path, monkeypatch):
    """Guards a 2.5-h headline run that never said how long it would take (issue 55 item 9): every step line but
    the last ends with the time left at the pace of the steps this process ran, a resumed run counting from its
    restart."""
    clock = [100.0]
    monkeypatch.setattr(monitor_mod.time, "monotonic", lambda: clock[0])
    out = io.StringIO()
    with Monitor(tmp_path, total_steps=40, tensorboard=False, console=Console(file=out, force_terminal=False,
                                                                              width=300)) as m:
        for step in (11, 12):  # resumed at step 11: 30 s a step here
            m.begin_step(step, 4)
            clock[0] += 30.0
            m.log(step, {"rollout/reward_mean": 0.5})
        steps = [line for line in out.getvalue().splitlines() if line.startswith(("step 11:", "step 12:"))]
    assert steps[0].endswith("clip 0.000  |  ~14 min left"), steps  # 29 steps × 30 s
    assert steps[1].endswith("clip 0.000  |  ~14 min left"), steps  # 28 × 30 s
    assert m.time_left(40) == "" and monitor_mod.duration(9000) == "2.5 h" and monitor_mod.duration(42) == "42 s"
