"""The pinned mmap threshold (trainer.mmap_threshold): freed large tensors must leave the process."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from agentrl.trainer.memory import _libc

pytestmark = pytest.mark.skipif(_libc() is None, reason="needs glibc (mallopt)")

# 200 × 4 MB tensors after a 32 MB one was freed (glibc then serves blocks ≤ 32 MB from the heap); all but the
# last freed: in the heap the last one pins the freed blocks below it, as mappings each free returns its own.
PROBE = textwrap.dedent("""
    import sys
    import torch
    from agentrl.trainer.memory import fix_mmap_threshold

    def rss():
        return int(open("/proc/self/statm").read().split()[1]) * 4096

    if sys.argv[2] == "trainer":  # as `agentrl train` sets a policy up
        from agentrl.config import load_config
        from agentrl.models import load_model
        from agentrl.trainer.loop import prepare_policy

        cfg = load_config(None, overrides=[f"trainer.mmap_threshold={sys.argv[1]}"])
        prepare_policy(load_model("tiny").train(), cfg.trainer)
        pinned = None
    else:
        pinned = fix_mmap_threshold(int(sys.argv[1]))
    big = torch.ones(8_000_000)
    del big
    blocks = [torch.ones(1_000_000) for _ in range(200)]
    full = rss()
    del blocks[:-1]
    print(pinned, (full - rss()) / 1e6)
""")


def probe(threshold: int, env: dict | None = None, via: str = "function") -> tuple[bool, float]:
    """(whether fix_mmap_threshold pinned it, MB the process gave back after freeing 199 of 200 4-MB tensors);
    via="trainer": set through the trainer config and prepare_policy instead."""
    out = subprocess.run([sys.executable, "-c", PROBE, str(threshold), via], capture_output=True, text=True, check=True,
                         env={**os.environ, **(env or {})}).stdout.split()
    return out[0] == "True", float(out[1])


@pytest.mark.slow
def test_a_pinned_threshold_returns_freed_tensors_and_the_dynamic_one_keeps_them():
    pinned, returned = probe(131072)
    assert pinned and returned > 700  # 199 × 4 MB
    pinned, returned = probe(0)
    assert not pinned and returned < 100  # the mechanism the setting exists for


def test_the_environment_variable_wins():
    pinned, returned = probe(131072, {"MALLOC_MMAP_THRESHOLD_": str(64 * 2**20)})
    assert not pinned and returned < 100


@pytest.mark.slow
def test_the_trainer_pins_it_from_its_config():
    assert probe(131072, via="trainer")[1] > 700
    assert probe(0, via="trainer")[1] < 100


def test_a_threshold_glibc_would_refuse_is_a_config_error():
    from agentrl.config import load_config
    from agentrl.errors import ConfigError

    with pytest.raises(ConfigError, match="mmap_threshold"):
        load_config(None, overrides=[f"trainer.mmap_threshold={64 * 2**20}"])
    assert load_config(None, overrides=[f"trainer.mmap_threshold={32 * 2**20}"]).trainer.mmap_threshold == 32 * 2**20
