"""GRPO-family trainer math as pure functions over packed per-token tensors (docs/algorithms.md; a bare §N in
this package cites that page's section N).

advantages (ADVANTAGES), shaping (overlong, dynamic sampling), losses (LOSS_SPECS, REDUCTIONS,
policy_loss, loss_normalizer), corrections (TIS/MIS/trajectory trust regions), kl, metrics, logprobs.
"""
