"""Overlapped rollouts (rollout.mode one_step_off / async): groups stay in flight while the trainer updates.

Groups are handed out as *tickets* k = s·B + j (slot j of consumer step s, B = tasks_per_step). Staleness is
controlled by admission, not by discarding finished work (AReaL's capacity rule, algorithms.md §8): ticket
k may start only while s ≤ synced + η, where `synced` counts the steps whose weights the engine holds and
η = rollout.max_staleness (1 for one_step_off); i.e. capacity = (η + synced + 1)·B − tickets started. A
ticket whose group the failure policy or DAPO dynamic sampling drops is rerun with the next resample
round's seed task_seed(base, s, round, j): the tasks of every ticket are deterministic, the sampled tokens
are not (they depend on when new weights arrive). A resumed run restarts at ticket start_step·B.

Consumption, with u = the synced step count when the ticket's last round started:
- one_step_off: step s takes exactly the tickets of slot s, so rollout of s + 1 overlaps training of s.
- async: step s takes the B finished tickets with the smallest u; a ticket must be trained on by step
  u + η, so the consumer waits only for running tickets at that deadline (then a batch may hold more than
  B groups). Admission makes this schedule feasible (at most (d + 1)·B tickets have deadline ≤ d).
Either way a token is at most η versions behind when trained on (v_cur − v_t ≤ steps since u ≤ η).
rollout.drop_staleness is an optional hard bound: groups beyond it are dropped at consumption and counted.

Weight updates happen in flight (sync_in_flight): pause("in_place") → update → resume, so episodes continue
and every token keeps the version that produced it. The finished queue is bounded by admission, every await
has a deadline, and close() cancels and awaits every ticket.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import torch

from agentrl.cluster import LocalRollouts, Rollouts
from agentrl.errors import EngineError
from agentrl.trainer.metrics import staleness_histogram
from agentrl.trainer.rollouts import StepBatch, assemble_batch, finish_group, loop_config, task_seed
from agentrl.types import Trajectory


class PipelineStalled(EngineError):
    """The trainer waited longer than the pipeline's deadline for finished groups."""


@dataclass
class _Finished:
    """One ticket's outcome: the kept group (None if every round was dropped) and everything collected."""

    index: int
    started_at: int  # synced step count when its last round started
    kept: list[Trajectory] | None
    everything: list[Trajectory] = field(default_factory=list)
    seeds: list[int] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    error: BaseException | None = None


def oldest_version(trajs: list[Trajectory]) -> int | None:
    """min_t v_t over the generated tokens of trajs (None if they have none)."""
    vs = [v for t in trajs for s in t.segments for v, m in zip(s.versions, s.loss_mask, strict=True) if m and v >= 0]
    return min(vs) if vs else None


class RolloutPipeline:
    """Producer of GRPO groups under staleness admission, and the consumer API the training loop calls."""

    def __init__(self, cfg, env_factory: Callable, engine, tokenizer, *, start_step: int, end_step: int,
                 on_episode: Callable[[int], None] | None = None, timeout_s: float | None = None,
                 rollouts: Rollouts | None = None):
        """start_step/end_step: the steps this run trains (tickets start_step·B … end_step·B − 1).
        timeout_s: deadline of any single wait (default: a few episode timeouts).
        rollouts: where episodes run (the run's backend; default: this process, rollout.concurrency at once)."""
        r = cfg.rollout
        self.cfg, self.engine = cfg, engine
        self.rollouts = rollouts or LocalRollouts(env_factory, engine, tokenizer, concurrency=r.concurrency)
        self.on_episode = on_episode
        self.in_order = r.mode == "one_step_off"
        self.eta = 1 if self.in_order else r.max_staleness
        self.B = r.tasks_per_step
        self.rounds = 1 + (r.max_resample_rounds if r.dynamic_sampling else 0)
        self.synced = start_step
        self.timeout_s = timeout_s or 3 * r.episode_timeout_s * self.rounds + 60
        self._next = start_step * self.B
        self._end = end_step * self.B
        self._running: dict[int, int] = {}  # ticket → started_at
        self._finished: list[_Finished] = []
        self._queue: asyncio.Queue[_Finished] = asyncio.Queue(maxsize=(self.eta + 1) * self.B)
        self._tasks: set[asyncio.Task] = set()

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
        return self._batch(chosen, version)

    def step_done(self, step: int) -> None:
        """The engine now holds the weights after `step`: admit the tickets this frees."""
        self.synced = max(self.synced, step + 1)
        self._admit()

    async def sync_in_flight(self, push: Callable[[], Awaitable[None]]) -> None:
        """Run push() (a weight update) with running requests retracted: after resume they are recomputed with
        the new weights and continue, so each token's version names the weights that produced it. (in_place kept
        old-weight KV under the new label — the staleness-0 mismatch of issue 18 — and real SGLang answers it
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

    @property
    def in_flight(self) -> int:
        """Tickets running now."""
        return len(self._running)

    # ---- producer ----

    def _admit(self) -> None:
        """Start every ticket that admission allows: slot ≤ synced + η (AReaL capacity)."""
        while self._next < self._end and self._next // self.B <= self.synced + self.eta:
            self._running[self._next] = self.synced  # counted as running from admission on
            task = asyncio.create_task(self._run_ticket(self._next), name=f"agentrl-ticket-{self._next}")
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)
            self._next += 1

    async def _run_ticket(self, index: int) -> None:
        """Roll out ticket `index`'s group, rerunning dropped groups with the next round's seed."""
        r = self.cfg.rollout
        step, slot = divmod(index, self.B)
        out = _Finished(index=index, started_at=self.synced, kept=None)
        try:
            for round_ in range(self.rounds):
                out.started_at = self._running[index] = self.synced
                seed = task_seed(r.seed, step, round_, slot)
                out.seeds.append(seed)
                out.metrics["rollout/sample_rounds"] = round_ + 1
                try:
                    group = await asyncio.wait_for(
                        self.rollouts.collect_group(seed, r.group_size, cfg=loop_config(self.cfg)), self.timeout_s
                    )
                except TimeoutError:  # a backstop: episodes have their own timeout inside the agent loop
                    out.metrics["pipeline/group_timeouts"] = out.metrics.get("pipeline/group_timeouts", 0) + 1
                    continue
                if self.on_episode is not None:
                    self.on_episode(len(group))
                out.everything += group
                out.kept = finish_group(group, self.cfg, out.metrics)
                if out.kept is not None:
                    break
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

    def _batch(self, chosen: list[_Finished], version: int) -> StepBatch:
        """Drop groups beyond the hard staleness bound, then compute metrics and advantages."""
        drop = self.cfg.rollout.drop_staleness
        taken = {id(f) for f in chosen}
        self._finished = [f for f in self._finished if id(f) not in taken]
        kept_groups, everything, seeds = [], [], []
        metrics: dict[str, float] = {"pipeline/dropped_stale_groups": 0.0, "pipeline/group_timeouts": 0.0}
        for f in chosen:
            everything += f.everything
            seeds += f.seeds
            for k, v in f.metrics.items():
                metrics[k] = max(metrics.get(k, 0.0), v) if k == "rollout/sample_rounds" else metrics.get(k, 0.0) + v
            if f.kept is None:
                continue
            oldest = oldest_version(f.kept)
            if drop is not None and oldest is not None and version - oldest > drop:
                metrics["pipeline/dropped_stale_groups"] += 1
                continue
            kept_groups.append(f.kept)
        batch = assemble_batch(self.cfg, kept_groups, everything, seeds, metrics)
        if batch.trajectories:
            segs = [s for t in batch.trajectories for s in t.segments]
            versions = torch.tensor([v for s in segs for v in s.versions], dtype=torch.long)
            mask = torch.tensor([m for s in segs for m in s.loss_mask], dtype=torch.long)
            batch.metrics.update(staleness_histogram(versions, mask, version))
        batch.metrics["pipeline/groups_in_flight"] = float(len(self._running))
        batch.metrics["pipeline/groups_waiting"] = float(len(self._finished) + self._queue.qsize())
        batch.metrics["pipeline/batch_groups"] = float(len(chosen))
        return batch
