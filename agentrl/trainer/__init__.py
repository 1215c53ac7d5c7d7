"""GRPO-family trainer math as pure functions over packed per-token tensors (docs/algorithms.md).

advantages (ADVANTAGES), shaping (overlong, dynamic sampling), losses (LOSSES, REDUCTIONS,
policy_loss, loss_normalizer), corrections (TIS/MIS/trajectory trust regions), kl, metrics, logprobs.
"""
