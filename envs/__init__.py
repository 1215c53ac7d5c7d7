"""Built-in environments, installed as agentrl.envs (registered lazily in register_builtin_envs)."""
