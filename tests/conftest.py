"""Shared pytest set-up: keep torch to the machine's cores and make runs reproducible."""

from __future__ import annotations

import os

os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
os.environ["AGENTRL_CPU_FLAGS"] = ""  # `auto` precision resolves to fp32 on every machine (agentrl.precision); bf16 tests ask for it
