"""Built-in environments, installed as agentrl.envs. Each registers here with a string entry point, so
nothing is imported before `agentrl.make(...)`; importing this package registers them (which also makes
`gymnasium.make("agentrl.envs:agentrl/calc-v0")` work)."""


def register_builtin_envs() -> None:
    """Register the built-in envs with gymnasium as agentrl/<name>-v0 (idempotent)."""
    from agentrl.registry import register

    register("calc", "agentrl.envs.calc:CalcEnv",
             description="Arithmetic word problems solved with a calculator tool; reward 1 for the right answer.")
    register("swe_lite", "agentrl.envs.swe_lite.env:SweLiteEnv", description="Fix a planted bug in a small Python repo with bash, an editor and submit; reward 1 when the hidden tests pass.")


register_builtin_envs()
