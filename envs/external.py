"""Moved to agentrl.rollout.programs (this name stays importable while the env is split off)."""

import sys

from agentrl.rollout import programs

sys.modules[__name__] = programs
