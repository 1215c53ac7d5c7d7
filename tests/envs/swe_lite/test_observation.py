"""Observation text: returncode/output format, head+tail truncation, ANSI stripping."""

from __future__ import annotations

from agentrl.envs.swe.observation import EMPTY, bash_observation, clean, clip, head_tail


def test_format_and_ansi_stripping():
    obs = bash_observation(1, "\x1b[31mred\x1b[0m\r\nline2\n")
    assert obs == "<returncode>1</returncode>\n<output>\nred\nline2\n</output>"


def test_empty_output_says_so():
    assert EMPTY in bash_observation(0, "")


def test_timeout_is_124_with_a_note():
    obs = bash_observation(137, "partial", timed_out=True, timeout=30)
    assert obs.startswith("<returncode>124</returncode>") and "timed out after 30s" in obs and "partial" in obs


def test_head_tail_keeps_both_ends():
    text = "1" * 6000 + "2" * 20000 + "3" * 6000
    out = head_tail(text)
    assert out.count("1") == 5000 and out.count("3") == 5000
    assert "2" not in out.replace("22000 characters elided", "")
    assert "22000 characters elided" in out
    assert head_tail("short") == "short"


def test_control_characters_and_clip():
    assert clean("a\x00b\x07c\td") == "abc\td"
    clipped = clip("x" * 20000)
    assert clipped.startswith("x" * 16000) and "<response clipped>" in clipped
