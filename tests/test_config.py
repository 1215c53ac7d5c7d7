"""Config: presets, dotted overrides, and every problem reported at once with the key path."""

from __future__ import annotations

import re

import pytest
import yaml

from agentrl.config import CONFIG_DIR, Config, dump_config, load_config
from agentrl.errors import ConfigError


def test_overrides_win_over_preset_and_file(tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text("trainer:\n  lr: 5.0e-6\nrollout:\n  group_size: 6\n")
    cfg = load_config("calc", f, ["trainer.lr=1e-6", "env.kwargs.difficulty=3"])
    assert cfg.trainer.lr == 1e-6
    assert cfg.rollout.group_size == 6
    assert cfg.env.name == "calc" and cfg.env.kwargs["difficulty"] == 3


def test_all_problems_in_one_message_with_suggestion():
    with pytest.raises(ConfigError) as e:
        load_config("calc", overrides=["trainer.lr_sched=1", "rollout.group_size=1", "algo.loss=foo"])
    msg = str(e.value)
    assert "3 problems" in msg
    assert "trainer.lr_sched is not a key (did you mean trainer.lr?)" in msg
    assert "rollout.group_size=1 gives grpo no baseline (use 2 or more)" in msg
    assert re.search(r"algo.loss='foo': not a registered policy loss \(registered: ppo, ", msg)


def test_unknown_key_in_yaml_is_reported_with_path(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("rollout:\n  grup_size: 4\n")
    with pytest.raises(ConfigError, match=re.escape("rollout.grup_size is not a key (did you mean rollout.group_size?)")):
        load_config(config_file=f)


def test_impossible_combinations_name_both_keys():
    with pytest.raises(ConfigError, match="rollout.max_new_tokens=4096 must be below rollout.max_context_tokens=2048"):
        load_config(overrides=["rollout.max_new_tokens=4096", "rollout.max_context_tokens=2048"])
    with pytest.raises(ConfigError, match="rollout.engine=sglang needs rollout.urls"):
        load_config(overrides=["rollout.engine=sglang"])


def test_bad_files_and_overrides_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(config_file=tmp_path / "missing.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="expected a mapping"):
        load_config(config_file=tmp_path / "list.yaml")
    with pytest.raises(ConfigError, match="key.path=value"):
        load_config(overrides=["trainer.lr"])


def test_dump_round_trips():
    cfg = load_config("calc", overrides=["algo.trust_region=[geo,veto]", "algo.dual_clip_c=null"])
    again = Config.model_validate(yaml.safe_load(dump_config(cfg)))
    assert again == cfg
    assert again.algo.trust_region == ["geo", "veto"] and again.algo.dual_clip_c is None


@pytest.mark.parametrize("preset", sorted(p.name for p in CONFIG_DIR.glob("*.yaml")), ids=str)
def test_every_shipped_preset_validates(preset):
    data = yaml.safe_load((CONFIG_DIR / preset).read_text())
    Config.model_validate(data)


def test_bad_cluster_settings_are_reported_in_one_message():
    """Guards the cluster section's validation: a typo in the backend and a worker count of 0 come back
    together, each naming its key and what is allowed."""
    with pytest.raises(ConfigError) as e:
        load_config(None, overrides=["cluster.backend=rayy", "cluster.num_workers=0"])
    msg = str(e.value)
    assert msg.startswith("config: 2 problems: ")
    assert "cluster.backend='rayy' is not allowed (allowed: 'local' or 'ray')" in msg
    assert "cluster.num_workers=0: Input should be greater than or equal to 1" in msg


def test_ray_backend_without_ray_names_the_extra_to_install(monkeypatch):
    """Guards the optional extra: without Ray, backend=ray is a config error with the install command, not an
    ImportError traceback at start-up."""
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "ray" else find_spec(name, *a))
    with pytest.raises(ConfigError, match=re.escape("cluster.backend=ray needs Ray, which is not installed (pip install 'agentrl[ray]')")):
        load_config(None, overrides=["cluster.backend=ray"])


def test_worker_resources_take_dotted_keys():
    cfg = load_config(None, overrides=["cluster.backend=ray", "cluster.worker_resources.docker=1"])
    assert cfg.cluster.worker_resources == {"docker": 1.0}
    with pytest.raises(ConfigError, match=re.escape("cluster.worker_resources.CPU is not a custom resource")):
        load_config(None, overrides=["cluster.worker_resources.CPU=1"])


@pytest.mark.slow
def test_the_local_backend_does_not_import_ray():
    """Guards `cluster.backend=local needs no Ray`: the training loop and the backends import without it."""
    import subprocess
    import sys

    code = "import sys, agentrl.trainer.loop, agentrl.cluster; sys.exit('ray' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], timeout=120).returncode == 0


@pytest.mark.parametrize("overrides,message", [
    (["rollout.drop_staleness=2"], "rollout.drop_staleness bounds overlapped rollouts, which rollout.mode=sync"),
    (["rollout.max_staleness=3"], "rollout.max_staleness bounds overlapped rollouts, which rollout.mode=sync"),
    (["rollout.urls=[http://127.0.0.1:30000]"], "rollout.urls is used only by rollout.engine=sglang"),
    (["trainer.eval_every=2"], "trainer.eval_every=2 evaluates nothing with trainer.eval_episodes=0"),
    (["cluster.num_workers=4"], "cluster.num_workers is used only by cluster.backend=ray"),
    (["rollout.engine=sglang", "rollout.urls=[http://127.0.0.1:30000]", "rollout.top_p=0.9"],
     "rollout.top_p=0.9 / rollout.top_k=-1 with rollout.engine=sglang: SGLang reports full-vocabulary logprobs"),
    (["rollout.engine=sglang", "rollout.urls=[http://127.0.0.1:30000]", "rollout.top_k=20"],
     "rollout.top_k=20 with rollout.engine=sglang"),
])
def test_settings_the_run_would_ignore_are_refused_at_load(overrides, message):
    """Guards silent no-ops: a setting that the chosen mode never reads (a staleness bound without overlap, SGLang
    URLs for the embedded engine, an eval interval with no episodes, Ray settings on the local backend) must be
    refused at load, naming the key, instead of running as if it were honoured."""
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(None, overrides=overrides)


def test_the_same_settings_pass_where_they_are_read():
    load_config(None, overrides=["rollout.mode=async", "rollout.max_staleness=3", "rollout.drop_staleness=3"])
    load_config(None, overrides=["rollout.engine=sglang", "rollout.urls=[http://127.0.0.1:30000]"])
    load_config(None, overrides=["rollout.top_p=0.9", "rollout.top_k=20"])  # the embedded engine's logprobs are exact
    load_config(None, overrides=["trainer.eval_every=2", "trainer.eval_episodes=4"])


def test_episode_budgets_have_one_home():
    """Guards drifting defaults: LoopConfig (the agent loop's budgets) takes its defaults from the rollout section,
    so an episode run outside training (eval, examples) has the budgets `agentrl train` documents."""
    from agentrl.config import RolloutConfig
    from agentrl.rollout.agent_loop import LoopConfig

    loop, rollout = LoopConfig(), RolloutConfig()
    assert (loop.max_turns, loop.max_context_tokens, loop.max_new_tokens, loop.episode_timeout_s) == (
        rollout.max_turns, rollout.max_context_tokens, rollout.max_new_tokens, rollout.episode_timeout_s)
    assert (loop.temperature, loop.top_p, loop.top_k) == (rollout.temperature, rollout.top_p, rollout.top_k)
