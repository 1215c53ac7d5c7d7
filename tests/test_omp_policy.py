"""`import agentrl` makes OpenMP's waiting threads sleep (OMP_WAIT_POLICY=PASSIVE) unless the user chose a
policy, and our entry points import agentrl before torch so libgomp sees it (bench/omp_contention.py measures
why: 5–7× faster generation on a shared CPU)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROBE = "import os, agentrl; print(os.environ.get('OMP_WAIT_POLICY'))"


def _policy_after_import(env_value: str | None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    if env_value is not None:
        env["OMP_WAIT_POLICY"] = env_value
    out = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def test_import_sets_passive_waiting_by_default():
    assert _policy_after_import(None) == "PASSIVE"


def test_a_policy_the_user_set_wins():
    assert _policy_after_import("ACTIVE") == "ACTIVE"


def test_scripts_import_agentrl_before_torch():
    """A script that loads torch first gets libgomp's spinning default, whatever agentrl sets later."""
    late = []
    for path in [*ROOT.glob("bench/*.py"), *ROOT.glob("scripts/*.py"), ROOT / "agentrl" / "cli.py"]:
        if path.name == "omp_contention.py":  # loads torch first on purpose: its baseline is libgomp's default
            continue
        text = path.read_text()
        torch_at = re.search(r"(?m)^(import torch|from torch)\b", text)
        agentrl_at = re.search(r"(?m)^(import agentrl|from agentrl)\b", text)
        if torch_at and (agentrl_at is None or agentrl_at.start() > torch_at.start()):
            late.append(str(path.relative_to(ROOT)))
    assert late == []
