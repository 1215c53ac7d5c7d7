"""swe_lite: the SWE env on the built-in corpus (small repos with seeded bugs, graded by the judge).

A preset of agentrl.envs.swe (docs/swe_lite.md): `agentrl train --env swe_lite`, `agentrl eval --env swe_lite`.
benchmark.py is its held-out benchmark (bench/learn_swe.py, `make demo`).
"""

from __future__ import annotations

from agentrl.envs.swe.env import SweEnv
from agentrl.envs.swe.evaluation import SweEvalHook


class SweLiteEnv(SweEnv):
    """SweEnv whose tasks default to the built-in corpus (`tasks="corpus"`); see SweEnv for the rest.

    ## Version History
    v0: initial version (the corpus of envs/swe/lite, 538 tasks).
    """

    source = "corpus"


class SweLiteEvalHook(SweEvalHook):
    """`agentrl eval --env swe_lite`: the corpus's splits (or --tasks), validated; oracles gold, empty, expert."""

    source = "corpus"
