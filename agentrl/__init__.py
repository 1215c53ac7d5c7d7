"""agentrl: reinforcement learning for multi-turn, tool-using LLM agents.

Public API (imported lazily so `import agentrl` stays fast and torch-free):
    agentrl.AgentEnv, agentrl.make, agentrl.register, agentrl.check_env, agentrl.Trajectory
"""

from __future__ import annotations

import importlib
import os
from typing import Any

# OpenMP threads that spin-wait at the end of each parallel region starve a process that shares the cores
# (sandboxes running tests, the trainer beside the engine in async mode, a second job): with 2 busy threads
# elsewhere on 2 cores, the embedded engine took 238 s instead of 36 s for the same 32 completions
# (bench/omp_contention.py). Sleeping waiters cost nothing measurable on an idle machine. libgomp reads this
# when torch loads it, so it only applies when agentrl is imported before torch; a value you set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

__version__ = "0.1.0"

_LAZY = {
    "AgentEnv": "agentrl.agent_env",
    "check_env": "agentrl.agent_env",
    "make": "agentrl.registry",
    "register": "agentrl.registry",
    "registered_env_ids": "agentrl.registry",
    "Trajectory": "agentrl.types",
    "Segment": "agentrl.types",
    "TerminationReason": "agentrl.types",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module 'agentrl' has no attribute {name!r}")


__all__ = list(_LAZY)

# The one registration trigger: importing the registry registers the built-in and plugin envs with gymnasium
# (string entry points: nothing heavy is imported), so `import agentrl; gymnasium.make("agentrl/calc-v0")`
# works as well as `agentrl.make("calc")`.
import agentrl.registry  # noqa: E402,F401
