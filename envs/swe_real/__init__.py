"""swe_real: the SWE env on bugs planted in real PyPI packages, graded by the packages' own test suites.

A preset of agentrl.envs.swe (docs/swe_real.md): `agentrl train --env swe_real`, `agentrl eval --env swe_real`.
The package cache must be filled once: `python -m agentrl.envs.swe.real.packages` (make setup does).
"""

from __future__ import annotations

from agentrl.envs.swe.env import SweEnv
from agentrl.envs.swe.evaluation import SweEvalHook


class SweRealEnv(SweEnv):
    """SweEnv whose tasks default to the real packages (`tasks="real"`); see SweEnv for the rest.

    ## Task
    A real package's repository (its source, its test suite minus the test files that catch the bug, its licence)
    with one or two planted bugs, and an issue text made from the failing test output.
    ## Version History
    v0: initial version (10 packages).
    """

    source = "real"


class SweRealEvalHook(SweEvalHook):
    """`agentrl eval --env swe_real`: the real packages' splits (or --tasks), validated; oracles gold, empty, expert."""

    source = "real"
