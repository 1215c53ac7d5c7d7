"""Which task each batch slot runs: a uniform draw, or a replay of a task whose last group had mixed success.

A group teaches GRPO something only when its members' success differs (agentrl.algo.signal). Tasks the policy
always or never solves give zero-variance groups that dynamic sampling throws away; a task that was mixed last
time is the likeliest to be mixed again. So a share `rollout.replay_fraction` of a step's slots replays such a
task, and the rest are drawn uniformly (task_seed, as without replay), so the run keeps meeting new tasks and
cannot overfit a few: each task is replayed at most `rollout.replay_limit` times over the run, and a task whose
replay is still running is not replayed again. `rollout.exclude_warm_start_episodes` keeps the warm start's own
tasks out of every draw (a uniform draw that lands on one is redrawn with the next redraw seed).

Tasks are named by the id their episodes report (Trajectory.task_id) and reached again by the task seed that
first reached them ("the same seed gives the same task", AgentEnv.reset). A replay samples with a salted
sampling seed (its replay count), so it does not repeat the earlier group's random draws.

Determinism and resume. The draw for step s sees only the outcomes of steps ≤ s − η − 1 (η: the pipeline's
admission bound), which every mode has consumed when step s's tickets are admitted; so sync and one_step_off
runs draw the same tasks every time, and async runs draw from whatever their consumed batches held. Draws are
recorded until their step's outcome is folded in, and a recorded draw is returned again when asked twice. The
whole state is plain JSON (`state_dict`), saved in every checkpoint's state.json, so a resumed run draws
exactly what the uninterrupted run would have drawn. Its randomness is a hash of (seed, step), never a
stateful generator.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from agentrl.rollout.seeds import _hash31, task_seed

MAX_REDRAWS = 64
"""Redraws of one slot that may land on excluded tasks before the sampler gives up (with an error)."""


class TaskPoolExhausted(RuntimeError):
    """Every redraw of a slot landed on an excluded task: the exclusion leaves (almost) no task to train on."""


@dataclass(frozen=True)
class SlotDraw:
    """The task a slot runs first: its task seed, and for a replay its salt (replay count ≥ 1) and task id."""

    seed: int
    salt: int = 0
    task_id: str | None = None

    @property
    def replay(self) -> bool:
        """True if this draw replays a task (uniform draws have salt 0)."""
        return self.salt > 0


@dataclass(frozen=True)
class GroupOutcome:
    """What the sampler learns from one finished group: the task, the seed that reached it, whether its
    scored members' success was mixed (None: fewer than two scored members), and whether it was a replay."""

    task_id: str
    seed: int
    mixed: bool | None
    replay: bool = False


def redraw_seed(base: int, step: int, round_: int, slot: int, k: int) -> int:
    """The k-th redraw (k ≥ 1) of slot `slot` in round `round_` of `step`, when the draw before hit an excluded task."""
    return _hash31(f"{base}/{step}/{round_}/{slot}/redraw{k}")


def replay_count(fraction: float, slots: int, u: float) -> int:
    """Replay slots of a step: fraction·slots rounded down or up with the odds of its fractional part (u ∈ [0, 1)
    decides), so the expected share is `fraction` for any batch size, and at most slots − 1 when fraction < 1."""
    exact = fraction * slots
    n = math.floor(exact) + (1 if u < exact - math.floor(exact) else 0)
    return min(n, slots - 1) if fraction < 1 else n


class TaskSampler:
    """Draws each slot's first task (replay or uniform) and learns from the groups of consumed steps."""

    def __init__(self, *, seed: int, slots: int, eta: int, replay_fraction: float = 0.0, replay_limit: int = 2,
                 excluded: Iterable[str] = (), task_of: Callable[[int], str | None] | None = None,
                 state: dict[str, Any] | None = None):
        """seed: rollout.seed; slots: tasks per step (B); eta: the pipeline's admission bound η;
        excluded: task ids no draw may land on, resolved through task_of(seed) (required when any are excluded);
        state: a checkpoint's state_dict() to continue from."""
        if replay_fraction < 0 or replay_fraction >= 1:
            raise ValueError(f"replay_fraction must be in [0, 1), got {replay_fraction}")
        if replay_limit < 1:
            raise ValueError(f"replay_limit must be ≥ 1, got {replay_limit}")
        self.seed, self.slots, self.eta = seed, slots, eta
        self.fraction, self.limit = replay_fraction, replay_limit
        self.excluded = frozenset(excluded)
        if self.excluded and task_of is None:
            raise ValueError("excluding tasks needs task_of(seed) to name the task a seed reaches")
        self.task_of = task_of
        self.pool: dict[str, int] = {}  # task → the seed that reaches it: mixed last time, waiting for a replay
        self.replayed: dict[str, int] = {}  # task → replays drawn so far (lifetime)
        self.seen: set[str] = set()  # every task a consumed group ran
        self.folded = -1  # outcomes of steps ≤ folded are in pool
        self.pending: dict[int, list[GroupOutcome]] = {}  # step → outcomes not folded in yet
        self.drawn: dict[int, dict[int, SlotDraw]] = {}  # step → slot → replay draw, kept until the step is folded
        if state:
            self.load_state_dict(state)

    # ---- drawing ----

    def draw(self, step: int) -> dict[int, SlotDraw]:
        """The replay draws of `step` (slot → SlotDraw; slots not named are drawn uniformly: `uniform`)."""
        if step in self.drawn:
            return dict(self.drawn[step])
        self._fold(step - self.eta - 1)
        rng = random.Random(_hash31(f"{self.seed}/replay/{step}"))
        busy = {d.task_id for draws in self.drawn.values() for d in draws.values()}
        eligible = sorted(t for t in self.pool if t not in busy and self.replayed.get(t, 0) < self.limit)
        n = min(replay_count(self.fraction, self.slots, rng.random()), len(eligible)) if self.fraction else 0
        draws: dict[int, SlotDraw] = {}
        for slot, task in enumerate(rng.sample(eligible, n)):
            self.replayed[task] = self.replayed.get(task, 0) + 1
            draws[slot] = SlotDraw(seed=self.pool[task], salt=self.replayed[task], task_id=task)
        self.drawn[step] = draws
        return dict(draws)

    def uniform(self, step: int, round_: int, slot: int) -> int:
        """The uniform task seed of a slot's round: task_seed(...), redrawn while it lands on an excluded task."""
        seed = task_seed(self.seed, step, round_, slot)
        if not self.excluded:
            return seed
        for k in range(1, MAX_REDRAWS + 1):
            if self.task_of(seed) not in self.excluded:
                return seed
            seed = redraw_seed(self.seed, step, round_, slot, k)
        raise TaskPoolExhausted(f"{MAX_REDRAWS} draws in a row for slot {slot} of step {step + 1} landed on excluded "
                                f"(warm-start) tasks: the pool has almost no other task (lower "
                                "rollout.exclude_warm_start_episodes)")

    def first(self, step: int, slot: int) -> SlotDraw:
        """The draw a slot's first round runs: its replay if `draw(step)` gave it one, else the uniform seed."""
        return self.draw(step).get(slot) or SlotDraw(seed=self.uniform(step, 0, slot))

    # ---- learning ----

    def observe(self, step: int, outcomes: Iterable[GroupOutcome]) -> None:
        """Record the groups that consumed step `step` trained on or dropped (folded in by later draws)."""
        outcomes = list(outcomes)
        self.pending.setdefault(step, []).extend(outcomes)
        self.seen.update(o.task_id for o in outcomes if o.task_id)

    def _fold(self, through: int) -> None:
        """Fold the outcomes of steps ≤ `through` into the pool, in step order, and forget their draws."""
        for step in sorted(s for s in self.pending if s <= through):
            for o in self.pending.pop(step):
                if not o.task_id or o.mixed is None or o.task_id in self.excluded:
                    continue
                if o.mixed and self.replayed.get(o.task_id, 0) < self.limit:
                    self.pool.setdefault(o.task_id, o.seed)
                else:
                    self.pool.pop(o.task_id, None)
        for step in [s for s in self.drawn if s <= through]:
            del self.drawn[step]
        self.folded = max(self.folded, through)

    # ---- metrics and checkpoints ----

    def metrics(self) -> dict[str, float]:
        """rollout/distinct_tasks_seen (cumulative over the run) and rollout/replay_pool (tasks waiting)."""
        return {"rollout/distinct_tasks_seen": float(len(self.seen)), "rollout/replay_pool": float(len(self.pool))}

    def state_dict(self) -> dict[str, Any]:
        """The sampler's whole state as plain JSON (for state.json)."""
        return {
            "pool": dict(self.pool), "replayed": dict(self.replayed), "seen": sorted(self.seen),
            "folded": self.folded,
            "pending": {str(s): [[o.task_id, o.seed, o.mixed, o.replay] for o in os] for s, os in self.pending.items()},
            "drawn": {str(s): {str(j): [d.seed, d.salt, d.task_id] for j, d in ds.items()}
                      for s, ds in self.drawn.items()},
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Continue from a state_dict()."""
        self.pool = {str(k): int(v) for k, v in state.get("pool", {}).items()}
        self.replayed = {str(k): int(v) for k, v in state.get("replayed", {}).items()}
        self.seen = set(state.get("seen", []))
        self.folded = int(state.get("folded", -1))
        self.pending = {int(s): [GroupOutcome(str(t), int(sd), m, bool(r)) for t, sd, m, r in os]
                        for s, os in state.get("pending", {}).items()}
        self.drawn = {int(s): {int(j): SlotDraw(int(sd), int(salt), t) for j, (sd, salt, t) in ds.items()}
                      for s, ds in state.get("drawn", {}).items()}
