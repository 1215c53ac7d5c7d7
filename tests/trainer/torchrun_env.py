"""The environment a test gives a `torchrun` it starts (tests/trainer's fsdp tests)."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def torchrun_env(tmp: Path) -> dict[str, str]:
    """Loopback gloo, one torch thread, this checkout on the path, and `tmp` as the temp folder (torchrun leaves
    its torchelastic_* folders there, not in the shared /tmp)."""
    return {**os.environ, "GLOO_SOCKET_IFNAME": "lo", "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT),
            "TMPDIR": str(tmp)}
