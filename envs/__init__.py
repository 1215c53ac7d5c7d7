"""Built-in environments, installed as agentrl.envs.

This module is plain data: `agentrl.registry` reads its tables by this package's name when it is first used
(which `import agentrl` does) and registers each env with gymnasium (string entry points, so nothing is
imported before `agentrl.make(...)`). It imports nothing itself, and the core imports nothing from it.
"""

BUILTIN_ENVS: dict[str, tuple[str, str, str | None]] = {
    "calc": ("agentrl.envs.calc:CalcEnv",
             "Arithmetic word problems solved with a calculator tool; reward 1 for the right answer.", None),
    "swe_lite": ("agentrl.envs.swe_lite:SweLiteEnv",
                 "Fix a planted bug in a small Python repo with bash, an editor and submit; "
                 "reward 1 when the hidden tests pass.",
                 "agentrl.envs.swe_lite:SweLiteEvalHook"),
    "swe_real": ("agentrl.envs.swe_real:SweRealEnv",
                 "Fix a bug planted in a real PyPI package (10 pinned packages); reward 1 when the package's own "
                 "hidden tests pass.",
                 "agentrl.envs.swe_real:SweRealEvalHook"),
}
"""name -> (entry point "module:Class", one-line description for `agentrl envs`, evaluation hook "module:object"
or None for the generic one: see agentrl.evaluation)."""

NAME_PREFIXES: dict[str, str] = {
    "external:": "agentrl.envs.external:registration",
}
"""name prefix -> "module:function" taking the rest of the name and returning (entry point, constructor kwargs,
description), or raising ConfigError: how `agentrl.make("external:my_agent.py:run")` finds its env."""
