"""Stop a broken run loudly: too many masked episodes over a window of steps abort training.

Masking is per episode (an env crash, a dead sandbox, an engine error never trains as reward 0), so a run
whose env cannot be built at all would otherwise "train" on nothing, print reward 0 and exit 0. Over the
last trainer.masked_window steps, a masked share above trainer.max_masked_frac raises RunAborted, naming
the most common termination detail (the exception users need to see) and the key to change.
"""

from __future__ import annotations

from collections import Counter, deque

from agentrl.errors import AgentRLError
from agentrl.types import Trajectory, scored


class RunAborted(AgentRLError):
    """Training stopped because most of its episodes could not be trained on (the CLI exits non-zero)."""


class MaskedEpisodeGuard:
    """Counts masked episodes per step; `observe` raises RunAborted when the window's share is too high."""

    def __init__(self, max_frac: float, window: int, *, last_step: int):
        """max_frac: highest tolerated share of masked episodes (1 never aborts); window: steps judged together;
        last_step: the run's final step (a shorter run is judged there, over the steps it had)."""
        self.max_frac, self.window, self.last_step = max_frac, window, last_step
        self._steps: deque[tuple[list[Trajectory], int]] = deque(maxlen=window)  # (masked episodes, all episodes)

    def observe(self, step: int, trajectories: list[Trajectory]) -> None:
        """Record step `step`'s episodes; raise RunAborted if the masked share over the window exceeds max_frac."""
        masked_now = [t for t in trajectories if not scored(t.termination)]
        self._steps.append((masked_now, len(trajectories)))
        if len(self._steps) < self.window and step < self.last_step:
            return
        masked = [t for m, _ in self._steps for t in m]
        total = sum(n for _, n in self._steps)
        if not total or len(masked) / total <= self.max_frac:
            return
        (kind, detail), n = Counter((t.termination.value, t.termination_detail) for t in masked).most_common(1)[0]
        steps = len(self._steps)
        raise RunAborted(
            f"step {step + 1}: {len(masked)} of {total} episodes of the last {steps} step{'s' * (steps > 1)} were "
            f"masked (over trainer.max_masked_frac={self.max_frac}); most common ({n}×): {kind}: "
            f"{detail or '(no detail)'}. Fix the cause (every episode is in trajectories.jsonl), or raise "
            f"trainer.max_masked_frac"
        )
