"""GRPO-family math as pure functions over packed per-token tensors (docs/algorithms.md; a bare §N in this package
cites that page's section N).

advantages (ADVANTAGES), credit (turn-level and GiGPO credit), shaping (overlong, dynamic sampling), losses
(LOSS_SPECS, REDUCTIONS, policy_loss, loss_normalizer), corrections (TIS/MIS/trajectory trust regions), kl,
logprobs (chunked logprobs from hidden states), metrics (§9) and flat (per-trajectory statistics over packed rows).

This floor imports only torch and agentrl.types: it owns the method names and the algorithm defaults, and
agentrl.config reads them from here (never the other way round).
"""
