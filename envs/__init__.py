"""Built-in environments, installed as agentrl.envs.

This module is plain data: `agentrl.registry` registers each entry with gymnasium (string entry points, so
nothing is imported before `agentrl.make(...)`) when it is first imported, which `import agentrl` does.
It imports nothing itself, so there is no import cycle with the registry.
"""

BUILTIN_ENVS: dict[str, tuple[str, str, str | None]] = {
    "calc": ("agentrl.envs.calc:CalcEnv",
             "Arithmetic word problems solved with a calculator tool; reward 1 for the right answer.", None),
    "swe_lite": ("agentrl.envs.swe_lite.env:SweLiteEnv",
                 "Fix a planted bug in a small Python repo with bash, an editor and submit; "
                 "reward 1 when the hidden tests pass.",
                 "agentrl.envs.swe_lite.evaluation:SweLiteEvalHook"),
    "swe_real": ("agentrl.envs.swe_real.env:SweRealEnv",
                 "Fix a bug planted in a real PyPI package (10 pinned packages); reward 1 when the package's own "
                 "hidden tests pass.",
                 "agentrl.envs.swe_real.evaluation:SweRealEvalHook"),
}
"""name -> (entry point "module:Class", one-line description for `agentrl envs`, evaluation hook "module:object"
or None for the generic one: see agentrl.evaluation)."""
