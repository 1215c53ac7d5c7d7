"""Episodes: the agent loop (State → Action → Observation, token-in/token-out), chat rendering with the
fixed-base trick, group collection and the seed scheme (docs/architecture.md)."""
