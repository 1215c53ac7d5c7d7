"""The rollout pipeline: where every training step's groups come from. In rollout.mode=sync it has zero
overlap (η = 0: a step's groups start once the previous step's weights are synced); in one_step_off / async
groups stay in flight while the trainer updates.

Groups are handed out as *tickets* k = s·B + j (slot j of consumer step s, B = tasks_per_step). Staleness is
controlled by admission, not by discarding finished work (AReaL's capacity rule, docs/algorithms.md §8): ticket
k may start only while s ≤ synced + η, where `synced` counts the steps whose weights the engine holds and
η = 0 for sync, 1 for one_step_off, rollout.max_staleness for async; i.e. capacity = (η + synced + 1)·B −
tickets started. A ticket runs collect.collect_slot: a group the failure policy or DAPO dynamic sampling
drops is rerun with the next resample round's seed task_seed(base, s, round, j), in every mode. A ticket's
first task is drawn at admission by the task sampler (task_sampler.py: a replay of a task whose last group was
mixed, or the uniform seed), from the outcomes of steps ≤ s − η − 1, which every mode has consumed by then.
The tasks of every ticket are deterministic (in async: given which groups each step consumed); with η > 0 the sampled tokens are not (they depend on when new weights
arrive). A resumed run restarts at ticket start_step·B.

Consumption, with u = the synced step count when the ticket's last round started:
- sync / one_step_off: step s takes exactly the tickets of step s (one_step_off: rollout of s + 1 overlaps
  training of s).
- async: step s takes the B finished tickets with the smallest u; a ticket must be trained on by step
  u + η, so the consumer waits only for running tickets at that deadline (then a batch may hold more than
  B groups). Admission makes this schedule feasible (at most (d + 1)·B tickets have deadline ≤ d).
Either way a token is at most η versions behind when trained on (v_cur − v_t ≤ steps since u ≤ η).
rollout.drop_staleness is an optional hard bound: groups beyond it are dropped at consumption and counted.

In overlapped modes weight updates happen in flight (sync_in_flight): pause("retract") → update →
resume, so episodes continue (running requests are re-prefilled with the new weights) and every token keeps
the version of the weights that produced it (sync has nothing in
flight and pushes directly). The finished queue is bounded by admission, every await has a deadline, and
close() cancels and awaits every ticket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial

import torch

from agentrl.algo.metrics import staleness_histogram
from agentrl.cluster import EpisodeBackend, LocalBackend
from agentrl.errors import ConfigError, EngineError
from agentrl.rollout.seeds import warm_start_seed
from agentrl.trainer.collect import HOST, SlotRollout, StepBatch, collect_slot, merge_slots, resample_rounds
from agentrl.trainer.task_sampler import SlotDraw, TaskSampler
from agentrl.types import Trajectory


class PipelineStalled(EngineError):
    """The trainer waited longer than the pipeline's deadline for finished groups."""


@dataclass
class _Finished:
    """One ticket's outcome: its slot's groups, or the error that ended it."""

    index: int
    started_at: int  # synced step count when its last round started
    slot: SlotRollout = field(default_factory=SlotRollout)
    error: BaseException | None = None


def admission_bound(r) -> int:
    """η of rollout section `r`: how many policy versions a group may start ahead of the step that trains on it
    (0 for sync, 1 for one_step_off, rollout.max_staleness for async)."""
    return {"sync": 0, "one_step_off": 1}.get(r.mode, r.max_staleness)


def oldest_version(trajs: list[Trajectory]) -> int | None:
    """min_t v_t over the generated tokens of trajs (None if they have none)."""
    vs = [v for t in trajs for s in t.segments for v, m in zip(s.versions, s.loss_mask, strict=True) if m and v >= 0]
    return min(vs) if vs else None


class RolloutPipeline:
    """Producer of GRPO groups under staleness admission, and the consumer API the training loop calls."""

    def __init__(self, cfg, env_factory: Callable, engine, tokenizer, *, start_step: int, end_step: int,
                 on_episode: Callable[[int], None] | None = None, timeout_s: float | None = None,
                 backend: EpisodeBackend | None = None, on_resample: Callable[[int, int, str], None] | None = None,
                 sampler_state: dict | None = None, env_factory_for_tasks: Callable | None = None):
        """start_step/end_step: the steps this run trains (tickets start_step·B … end_step·B − 1).
        on_episode(n): n more episodes finished; on_resample(step, n, why): a dropped group of step `step` is
        sampled again, adding n episodes (collect.collect_slot).
        timeout_s: deadline of any single wait (default: a few episode timeouts).
        backend: where episodes run (the run's; default: this process, rollout.concurrency at once).
        sampler_state: a checkpoint's task-sampler state (resume); env_factory_for_tasks: builds the env that
        names a seed's task for rollout.exclude_warm_start_episodes (default env_factory)."""
        r = cfg.rollout
        self.cfg, self.engine = cfg, engine
        self.backend = backend or LocalBackend(env_factory, engine, tokenizer, concurrency=r.concurrency)
        self.on_episode, self.on_resample = on_episode, on_resample
        self.overlapped = r.mode != "sync"
        self.in_order = r.mode != "async"
        self.eta = admission_bound(r)
        self.B = r.tasks_per_step
        self.synced = start_step
        self.timeout_s = timeout_s or 3 * r.episode_timeout_s * resample_rounds(cfg) + 60
        self._next = start_step * self.B
        self._end = end_step * self.B
        self._running: dict[int, int] = {}  # ticket → started_at
        self._finished: list[_Finished] = []
        self._queue: asyncio.Queue[_Finished] = asyncio.Queue(maxsize=(self.eta + 1) * self.B)
        self._tasks: set[asyncio.Task] = set()
        self._first: dict[int, SlotDraw] = {}  # ticket → the first task it runs, drawn at admission
        self.sampler = build_sampler(cfg, self.eta, env_factory_for_tasks or env_factory, sampler_state)

    # ---- consumer API (called by the training loop) ----

    def start(self) -> None:
        """Admit the first (η + 1)·B tickets."""
        self._admit()

    async def next_batch(self, step: int, version: int) -> StepBatch:
        """The groups step `step` trains on (waits for them, at most timeout_s); `version` is v_cur."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.timeout_s
        while (chosen := self._select(step)) is None:
            left = deadline - loop.time()
            try:
                if left <= 0:
                    raise TimeoutError
                self._take(await asyncio.wait_for(self._queue.get(), left))
            except TimeoutError:
                raise PipelineStalled(
                    f"step {step}: no batch after {self.timeout_s:.0f}s ({len(self._running)} groups running, "
                    f"{len(self._finished)} finished); raise rollout.episode_timeout_s or check the engine"
                ) from None
        return self._batch(chosen, version, step)

    def step_done(self, step: int) -> None:
        """The engine now holds the weights after `step`: admit the tickets this frees."""
        self.synced = max(self.synced, step + 1)
        self._admit()

    async def sync_in_flight(self, push: Callable[[], Awaitable[None]]) -> None:
        """Run push() (a weight update) with running requests retracted: after resume they are recomputed with
        the new weights and continue, so each token's version names the weights that produced it. (in_place kept
        old-weight KV under the new label, a staleness-0 mismatch, and real SGLang answers it
        with HTTP 400 when the update flushes the cache.)"""
        await asyncio.wait_for(self.engine.pause("retract"), self.timeout_s)
        try:
            await asyncio.wait_for(push(), self.timeout_s)
        finally:
            await asyncio.wait_for(self.engine.resume(), self.timeout_s)

    async def close(self) -> None:
        """Cancel every ticket and wait for them (bounded), so nothing keeps running after training."""
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(list(self._tasks), timeout=self.timeout_s)

    # ---- producer ----

    def _admit(self) -> None:
        """Start every ticket that admission allows: slot ≤ synced + η (AReaL capacity)."""
        while self._next < self._end and self._next // self.B <= self.synced + self.eta:
            self._running[self._next] = self.synced  # counted as running from admission on
            self._first[self._next] = self.sampler.first(*divmod(self._next, self.B))  # in admission order
            task = asyncio.create_task(self._run_ticket(self._next), name=f"agentrl-ticket-{self._next}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self._next += 1

    async def _run_ticket(self, index: int) -> None:
        """Fill ticket `index`'s slot (collect.collect_slot), then hand it to the consumer."""
        step, slot = divmod(index, self.B)
        out = _Finished(index=index, started_at=self.synced)

        def round_starts() -> None:
            out.started_at = self._running[index] = self.synced

        try:
            out.slot = await collect_slot(self.backend, self.cfg, step, slot, timeout_s=self.timeout_s,
                                          on_round=round_starts, on_episode=self.on_episode,
                                          on_resample=partial(self.on_resample, step) if self.on_resample else None,
                                          sampler=self.sampler, first=self._first.pop(index, None))
        except asyncio.CancelledError:
            self._running.pop(index, None)
            raise
        except Exception as e:  # surfaces in next_batch instead of vanishing with the task
            out.error = e
        try:  # stays "running" until it is in the queue, so the consumer never misses it
            await asyncio.wait_for(self._queue.put(out), self.timeout_s)
        finally:
            self._running.pop(index, None)

    # ---- selection ----

    def _take(self, item: _Finished) -> None:
        """Move a finished ticket from the queue into the pool (raising its error, if any)."""
        if item.error is not None:
            raise item.error
        self._finished.append(item)

    def _select(self, step: int) -> list[_Finished] | None:
        """The tickets step `step` trains on, or None if it must wait."""
        while not self._queue.empty():
            self._take(self._queue.get_nowait())
        if self.in_order:
            want = range(step * self.B, min((step + 1) * self.B, self._end))
            have = {f.index: f for f in self._finished}
            return [have[i] for i in want] if all(i in have for i in want) else None
        if any(u + self.eta <= step for u in self._running.values()):
            return None  # a running group reaches its staleness deadline now: wait for it
        pool = sorted(self._finished, key=lambda f: (f.started_at, f.index))
        exhausted = not self._running and self._next >= self._end
        if len(pool) < self.B and not exhausted:
            return None
        due = [f for f in pool if f.started_at + self.eta <= step]
        return due if len(due) > self.B else pool[: self.B]

    def _batch(self, chosen: list[_Finished], version: int, step: int) -> StepBatch:
        """Drop groups beyond the hard staleness bound, then compute metrics and advantages; the task sampler
        learns from every group of the step's tickets."""
        drop = self.cfg.rollout.drop_staleness
        taken = {id(f) for f in chosen}
        self._finished = [f for f in self._finished if id(f) not in taken]
        dropped = 0
        for f in chosen:
            oldest = oldest_version(f.slot.kept or [])
            if drop is not None and oldest is not None and version - oldest > drop:
                f.slot.kept, dropped = None, dropped + 1
        metrics = {"pipeline/dropped_stale_groups": float(dropped), "pipeline/group_timeouts": 0.0,
                   "rollout/replayed_groups": 0.0}
        batch = merge_slots(self.cfg, [f.slot for f in chosen], metrics)
        self.sampler.observe(step, [o for f in chosen for o in f.slot.outcomes])
        batch.metrics.update(self.sampler.metrics())
        if batch.trajectories:
            segs = [s for t in batch.trajectories for s in t.segments]
            versions = torch.tensor([v for s in segs for v in s.versions], dtype=torch.long, device=HOST)
            mask = torch.tensor([m for s in segs for m in s.loss_mask], dtype=torch.long, device=HOST)
            batch.metrics.update(staleness_histogram(versions, mask, version))
        batch.metrics["pipeline/groups_in_flight"] = float(len(self._running))
        batch.metrics["pipeline/groups_waiting"] = float(len(self._finished) + self._queue.qsize())
        batch.metrics["pipeline/batch_groups"] = float(len(chosen))
        return batch


def build_sampler(cfg, eta: int, env_factory: Callable, state: dict | None = None) -> TaskSampler:
    """The run's task sampler (task_sampler.py) from rollout.replay_fraction, replay_limit and
    exclude_warm_start_episodes; excluded tasks are named by an env's task_for_seed(seed) (AgentEnv)."""
    r = cfg.rollout
    excluded, task_of = set(), None
    if r.exclude_warm_start_episodes:
        task_of = getattr(env_factory(), "task_for_seed", None)  # builds an env, starts nothing
        names = [task_of(warm_start_seed(r.seed, i)) for i in range(r.exclude_warm_start_episodes)] if task_of else []
        if not names or any(n is None for n in names):
            raise ConfigError(f"rollout.exclude_warm_start_episodes={r.exclude_warm_start_episodes}: env "
                              f"{cfg.env.name!r} cannot name the task a seed reaches without running it "
                              "(its task_for_seed returns None); set it to 0 for this env")
        excluded = set(names)
    return TaskSampler(seed=r.seed, slots=r.tasks_per_step, eta=eta, replay_fraction=r.replay_fraction,
                       replay_limit=r.replay_limit, excluded=excluded, task_of=task_of, state=state)


async def collect_step(cfg, env_factory: Callable, engine, tokenizer, step: int, *,
                       on_episode: Callable[[int], None] | None = None,
                       backend: EpisodeBackend | None = None) -> StepBatch:
    """One synchronous step's batch, outside a training run: the pipeline for step `step` alone."""
    sync = cfg.model_copy(update={"rollout": cfg.rollout.model_copy(update={"mode": "sync"})})
    pipeline = RolloutPipeline(sync, env_factory, engine, tokenizer, start_step=step, end_step=step + 1,
                               on_episode=on_episode, backend=backend)
    pipeline.start()
    try:
        return await pipeline.next_batch(step, version=0)
    finally:
        await pipeline.close()
