"""The swe_lite presets' per-turn token budget fits every scripted-expert action of the split they warm-start
on, at the levels it trains at: a cut demonstration is dropped from the warm start, and a policy cut off
mid-`str_replace` never edits."""

from __future__ import annotations

import agentrl.envs.swe.expert as expert
import pytest
from agentrl.envs.swe.env import REPO
from agentrl.envs.swe.tasks import load_tasks

from agentrl.config import CONFIG_DIR, load_config
from agentrl.models import load_tokenizer
from agentrl.rollout.chat import ChatRenderer


@pytest.mark.parametrize("config_file", [None, CONFIG_DIR / "demo.yaml"], ids=["swe_lite", "demo"])
def test_preset_budget_fits_the_experts_longest_action(config_file):
    cfg = load_config("swe_lite", config_file)
    split = cfg.env.kwargs.get("split", "train")
    level = cfg.env.kwargs.get("level", 0)
    top = 2 if level == "auto" else int(level)  # the curriculum reaches level 2
    renderer = ChatRenderer(load_tokenizer("tiny"))
    longest = max(len(renderer.action_ids(a)) for t in load_tasks(split=split) if t.difficulty <= top
                  for a in expert.plan(t, REPO))
    assert longest > 64, longest  # a str_replace is long: the old demo budget (64) cut every episode
    assert longest <= cfg.rollout.max_new_tokens, (split, longest, cfg.rollout.max_new_tokens)
