"""The training run: loop (setup → steps → teardown), rollout pipeline and group collection, the update over
packed micro-batches (batch, prefix, update), supervised warm start (sft), checkpoints and resume, held-out
evaluation, the monitor (console, metrics.jsonl, TensorBoard) and its plot.

The math it applies lives one floor down in agentrl.algo; engines in agentrl.engine; episodes in
agentrl.rollout (docs/architecture.md).
"""
