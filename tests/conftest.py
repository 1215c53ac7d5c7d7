"""Shared pytest set-up: keep torch to the machine's cores, make runs reproducible, and order the suite so that a
parallel run (`make test`: pytest-xdist workers) starts its longest tests first instead of ending on them."""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ["AGENTRL_CPU_FLAGS"] = ""  # `auto` precision resolves to fp32 on every machine (agentrl.precision); bf16 tests ask for it
if os.environ.get("PYTEST_XDIST_WORKER"):
    # Several workers share the cores: one torch thread each (inherited by the runs they start) instead of every
    # worker's threads spinning against each other's. Set before anything imports torch.
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_collection_modifyitems(config, items):
    """End-to-end tests (`slow`) first, each file's tests still together and in file order: xdist hands tests out
    in this order, so the long ones start at once and the short ones fill the gaps at the end."""
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)
