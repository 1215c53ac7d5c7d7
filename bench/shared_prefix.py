"""Training forward+backward of a swe_lite-shaped batch with and without shared-prefix forwards (trainer.share_prefix).

GROUPS GRPO groups × ROWS trajectories; each group shares a PROMPT-token prompt (system prompt, tool specs, issue)
and each trajectory continues with its own 150-250 tokens, the policy's (loss mask 1). Random tokens, the default
model (SmolLM2-135M, converted locally; nothing is downloaded), gradient checkpointing on as in training, the
trainer's micro-batch budget. The plain path (every row in full; the budget then fits one ~1k-token row per
micro-batch) and the shared path (each prompt once; a whole group fits) run in the same process, and the script
prints both times, tokens/s over the batch's real tokens, their ratio, and the largest logprob difference.

    nice -n 10 .venv/bin/python bench/shared_prefix.py [--groups 4 --rows 4 --prompt 800 --budget 2048 --reps 1]

Timing on a shared machine is noisy: read the ratio, not the seconds.
"""

from __future__ import annotations

import argparse
import time

import agentrl  # noqa: F401  # isort: skip  (first: sets OMP_WAIT_POLICY before torch loads libgomp)
import torch

from agentrl.models import load_model
from agentrl.trainer.batch import build_minibatch, microbatches
from agentrl.trainer.loop import enable_gradient_checkpointing
from agentrl.trainer.prefix import stats
from agentrl.trainer.update import policy_logprobs
from agentrl.types import Segment, Trajectory


def make_batch(groups: int, rows: int, prompt: int, vocab: int, seed: int = 0):
    """groups × rows trajectories: a shared random prompt per group, then 150-250 random policy tokens each."""
    g = torch.Generator().manual_seed(seed)
    trajs, advantages = [], []
    for k in range(groups):
        head = torch.randint(1, vocab, (prompt,), generator=g).tolist()
        for r in range(rows):
            s = Segment()
            s.append_prompt(head)
            tail = torch.randint(1, vocab, (int(torch.randint(150, 251, (1,), generator=g)),), generator=g).tolist()
            s.append_sampled(tail, [-1.0] * len(tail), [0] * len(tail))
            t = Trajectory(id=f"t{k}.{r}", group_id=f"g{k}", env_id="swe_lite", task_id=str(k))
            t.segments.append(s)
            trajs.append(t)
            advantages.append(float(torch.randn(1, generator=g)))
    return build_minibatch(trajs, advantages)


def step(model, mb, budget: int, share: bool) -> tuple[float, torch.Tensor, int]:
    """One fwd+bwd over the mini-batch (seconds, logprobs, micro-batches), as _optimizer_step runs it."""
    model.zero_grad(set_to_none=True)
    micros = microbatches(mb, budget, share_prefix=share)
    lps = []
    t0 = time.perf_counter()
    for m in micros:
        lp, _ = policy_logprobs(model, m, mb.targets[m.start : m.end], temperature=1.0, chunk=1024, entropy=True,
                                actions_only=True, share_prefix=share)
        loss = (lp * mb.advantages[m.start : m.end] * mb.loss_mask[m.start : m.end]).sum() / mb.loss_mask.sum()
        loss.backward()
        lps.append(lp.detach())
    return time.perf_counter() - t0, torch.cat(lps), len(micros)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", type=int, default=4)
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--prompt", type=int, default=800)
    ap.add_argument("--budget", type=int, default=2048, help="trainer.micro_batch_tokens")
    ap.add_argument("--reps", type=int, default=1)
    ap.add_argument("--model", default="smollm2-135m-instruct")
    args = ap.parse_args()
    model = load_model(args.model).train()
    enable_gradient_checkpointing(model)
    mb = make_batch(args.groups, args.rows, args.prompt, model.config.vocab_size)
    n = mb.num_tokens
    print(f"batch: {args.groups} groups × {args.rows} rows, {args.prompt}-token prompts, {n} tokens "
          f"({int(mb.loss_mask.sum())} policy tokens); budget {args.budget}; {torch.get_num_threads()} threads; "
          "shared machine, timings are noisy")
    times = {False: [], True: []}
    for _ in range(args.reps):
        for share in (False, True):
            stats.reset()
            sec, lp, micros = step(model, mb, args.budget, share)
            times[share].append(sec)
            if share:
                lp_shared, skipped = lp, stats.skipped_tokens
            else:
                lp_plain = lp
            print(f"  {'shared' if share else 'plain '}: {sec:7.1f} s  {n / sec:7.1f} tokens/s  {micros} micro-batches")
    plain, shared = min(times[False]), min(times[True])
    action = mb.loss_mask > 0
    diff = float((lp_plain - lp_shared)[action].abs().max())
    print(f"plain  fwd+bwd: {plain:7.1f} s  {n / plain:7.1f} tokens/s")
    print(f"shared fwd+bwd: {shared:7.1f} s  {n / shared:7.1f} tokens/s  ({skipped} prompt tokens not recomputed)")
    print(f"ratio plain/shared: {plain / shared:.2f}x   max |Δ logprob| on policy tokens: {diff:.2e}")


if __name__ == "__main__":
    main()
