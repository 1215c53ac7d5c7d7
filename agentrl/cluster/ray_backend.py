"""Episodes on a Ray cluster (cluster.backend=ray): rollout-worker actors, dispatch with back-pressure.

    driver (trainer, engine)                      Ray nodes
    RayBackend.collect_group ──episode──►  RolloutWorker actor ─► run_member ─► env + sandbox (on its node)
          ▲  least in-flight,                         │ generate (SGLang HTTP API, least in-flight,
          │  ≤ worker_concurrency each                │          sticky per trajectory: SGLangClient)
          └──────────── Trajectory ◄──────────────────┘──► engine endpoints: SGLang servers, or the
                                                           driver's embedded engine served by `serve`

- Workers are async actors (cluster.cpus_per_worker CPUs plus cluster.worker_resources each, spread over the
  nodes). Each builds envs with `agentrl.make(env.name, **env.kwargs)`, the loop's env factory, and runs
  every episode through `collector.run_member`: same sampling seeds, same retries, same failure mapping as
  the local backend, so a task seed gives the same trajectory on either backend.
- Engine endpoints are shared: with rollout.engine=sglang every worker gets rollout.urls; with the embedded
  engine the driver serves it over SGLang's native API on cluster.engine_host:engine_port. Weight updates
  need nothing extra: the served engine is the object the trainer updates in place, and SGLang servers are
  updated from disk by the driver's client, which already fans out to every URL.
- The driver sends each episode to the live worker with the fewest episodes in flight, never more than
  cluster.worker_concurrency per worker (the others wait: back-pressure).
- A worker whose actor or node dies loses only its episodes: each is dispatched again to a live worker (up
  to cluster.max_episode_retries times; with the same sampling seed, so the retry samples what the lost
  attempt would have), then ends as env_error, which the failure policy masks. The step goes on.
- Every wait has a deadline; a worker that stops answering is probed and, if dead, killed and dropped.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import uuid
from dataclasses import dataclass
from functools import partial
from typing import Any

import gymnasium
import ray
from ray.exceptions import RayActorError, RayError

from agentrl.errors import ClusterError, UnknownEnv
from agentrl.rollout.agent_loop import LoopConfig, as_renderer
from agentrl.rollout.collector import FAILURE_RETRIES, run_member
from agentrl.types import TerminationReason, Trajectory

log = logging.getLogger(__name__)

STARTUP_TIMEOUT_S = 300.0
"""How long the workers may take to be placed and to start (imports, tokenizer) before the run gives up."""
EPISODE_MARGIN_S = 60.0
"""Added to each attempt's episode timeout: env creation and close run outside the agent loop's deadline."""
PING_TIMEOUT_S = 30.0
"""A worker that does not answer a ping within this is considered dead."""
_LOOPBACK_FLAG = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"


def start_local_ray(num_cpus: float, resources: dict[str, float] | None = None) -> None:
    """Start a single-machine Ray cluster owned by this process, reachable on loopback only.

    Ray maps `_node_ip_address="127.0.0.1"` to the machine's routable IP and its servers listen on every
    interface; its single-machine mode (the default on macOS and Windows) keeps every address on 127.0.0.1.
    That mode is switched on only for the start-up, so a later connection to a real cluster is unaffected.
    """
    from ray._private import ray_constants

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    saved_env, saved_flag = os.environ.get(_LOOPBACK_FLAG), ray_constants.ENABLE_RAY_CLUSTER
    os.environ[_LOOPBACK_FLAG], ray_constants.ENABLE_RAY_CLUSTER = "0", False
    try:
        ray.init(
            address="local",
            num_cpus=num_cpus,
            resources=resources or None,
            include_dashboard=False,
            _node_ip_address="127.0.0.1",
            logging_level=logging.WARNING,
        )
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved_flag
        if saved_env is None:
            os.environ.pop(_LOOPBACK_FLAG, None)
        else:
            os.environ[_LOOPBACK_FLAG] = saved_env


class RolloutWorker:
    """A Ray actor that runs episodes on its node: envs built here, generation through the shared endpoints."""

    def __init__(
        self,
        env_name: str,
        env_kwargs: dict[str, Any],
        entry_point: Any,
        env_defaults: dict[str, Any],
        renderer: Any,
        urls: list[str],
    ):
        """entry_point/env_defaults: the driver's registration of env_name, used when this process does not
        know the env (registered at run time rather than built in or declared as an entry point)."""
        import agentrl  # noqa: F401  (registers the built-in and plugin envs)
        from agentrl.registry import make, register, resolve

        try:
            resolve(env_name)
        except UnknownEnv:
            register(env_name, entry_point, kwargs=env_defaults)
        self.env_factory = partial(make, env_name, **env_kwargs)
        self.renderer = renderer
        self.engine = None
        if urls:
            from agentrl.config import Config
            from agentrl.engine.build import build_engine

            self.engine = build_engine(Config(), urls=urls)

    def ready(self) -> dict[str, Any]:
        """Where this worker runs (answered once the constructor has finished)."""
        return {"pid": os.getpid(), "ip": ray.util.get_node_ip_address()}

    async def run_episode(
        self, seed: int | None, member: int, group_id: str, expert: bool, cfg: LoopConfig
    ) -> Trajectory:
        """Member `member` of the group of task `seed`, exactly as the local backend runs it."""
        return await run_member(
            self.env_factory,
            self.engine,
            self.renderer,
            cfg,
            seed=seed,
            expert=expert,
            group_id=group_id,
            member=member,
            max_retries=FAILURE_RETRIES,
        )

    async def close(self) -> None:
        """Close the HTTP session to the engine endpoints."""
        if self.engine is not None:
            await self.engine.close()


@dataclass(eq=False)
class _Worker:
    """The driver's view of one worker actor."""

    index: int
    actor: Any
    where: str = ""
    in_flight: int = 0
    alive: bool = True


class _WorkerLost(Exception):
    """The worker running an episode died (or stopped answering) before returning it."""


class RayBackend:
    """Driver side of the Ray backend: the rollout workers and the episode dispatch (see the module docstring)."""

    def __init__(
        self,
        workers: list[_Worker],
        *,
        env_id: str,
        worker_concurrency: int,
        max_episode_retries: int,
        server: Any = None,
        endpoints: list[str] = (),
        owns_ray: bool = False,
    ):
        """Use `RayBackend.start`; this only assembles the parts it made."""
        self.workers = workers
        self.env_id = env_id
        self.worker_concurrency = worker_concurrency
        self.max_episode_retries = max_episode_retries
        self.endpoints = list(endpoints)
        self._server = server  # aiohttp AppRunner of the served embedded engine, if any
        self._owns_ray = owns_ray
        self._changed = asyncio.Event()  # set whenever a slot frees up or a worker dies
        self._turn = 0

    @classmethod
    async def start(cls, cfg, engine: Any, tokenizer: Any) -> RayBackend:
        """Join (cluster.address) or start the Ray cluster, serve the engine if it is in-process, start the
        workers and wait until each has started. Raises ClusterError if the cluster cannot host them."""
        from agentrl.registry import resolve

        c = cfg.cluster
        env_id = resolve(cfg.env.name)
        owns_ray = not ray.is_initialized()  # a caller that already joined a cluster keeps it
        if owns_ray:
            _init(c)
        server, workers = None, []
        try:
            urls, server = await _endpoints(engine, c.engine_host, c.engine_port)
            need = {"CPU": c.cpus_per_worker, **c.worker_resources}
            _check_placeable(need)
            spec = gymnasium.spec(env_id)
            renderer = ray.put(as_renderer(tokenizer))
            actor_cls = ray.remote(RolloutWorker).options(
                num_cpus=c.cpus_per_worker,
                resources=dict(c.worker_resources) or None,
                max_concurrency=c.worker_concurrency + 4,
                max_restarts=0,
                scheduling_strategy="SPREAD",
            )
            workers = [
                _Worker(
                    i,
                    actor_cls.remote(
                        cfg.env.name,
                        dict(cfg.env.kwargs),
                        spec.entry_point,
                        dict(spec.kwargs or {}),
                        renderer,
                        urls,
                    ),
                )
                for i in range(c.num_workers)
            ]
            await _wait_started(workers, need)
        except BaseException:
            for w in workers:
                _kill(w.actor)
            if server is not None:
                await server.cleanup()
            if owns_ray:
                ray.shutdown()
            raise
        return cls(
            workers,
            env_id=env_id,
            worker_concurrency=c.worker_concurrency,
            max_episode_retries=c.max_episode_retries,
            server=server,
            endpoints=urls,
            owns_ray=owns_ray,
        )

    def describe(self) -> str:
        """One line for the start-up banner: workers, their nodes, the engine endpoints."""
        where = ", ".join(w.where for w in self.workers)
        return (
            f"ray: {len(self.workers)} rollout workers ({where}), ≤ {self.worker_concurrency} episodes each; "
            f"engine {', '.join(self.endpoints) or 'none (expert only)'}"
        )

    @property
    def alive(self) -> int:
        """Workers still alive."""
        return sum(w.alive for w in self.workers)

    async def collect_group(
        self,
        seed: int | None,
        group_size: int,
        *,
        cfg: LoopConfig,
        expert: bool = False,
        group_id: str | None = None,
    ) -> list[Trajectory]:
        """`group_size` episodes of the task `seed`, spread over the workers; one Trajectory per member, in order."""
        group_id = group_id or uuid.uuid4().hex
        return list(
            await asyncio.gather(*(self._episode(seed, m, group_id, cfg, expert) for m in range(group_size)))
        )

    async def close(self) -> None:
        """Stop the workers and the engine server; stop Ray only if this object started or joined it."""
        alive = [w for w in self.workers if w.alive]
        if alive:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(
                    asyncio.gather(*(w.actor.close.remote() for w in alive)), PING_TIMEOUT_S
                )
        for w in self.workers:
            w.alive = False
            _kill(w.actor)
        if self._server is not None:
            await self._server.cleanup()
            self._server = None
        if self._owns_ray and ray.is_initialized():
            ray.shutdown()
        self._owns_ray = False

    # ---- dispatch ----

    async def _episode(
        self, seed: int | None, member: int, group_id: str, cfg: LoopConfig, expert: bool
    ) -> Trajectory:
        """Run one member on some worker; re-dispatch it when its worker dies, mask it when retries run out."""
        lost: list[str] = []
        while len(lost) <= self.max_episode_retries:
            worker = await self._acquire()
            if worker is None:
                return self._masked(
                    group_id,
                    "rollout worker lost: " + "; then ".join([*lost, "no live worker left"]),
                    lost=len(lost),
                )
            try:
                traj = await self._run_on(worker, seed, member, group_id, cfg, expert)
            except _WorkerLost as e:
                lost.append(str(e))
                continue
            finally:
                self._release(worker)
            traj.metrics["rollout/workers_lost"] = len(lost)
            return traj
        return self._masked(group_id, "rollout worker lost: " + "; then ".join(lost), lost=len(lost))

    async def _run_on(
        self, worker: _Worker, seed, member, group_id, cfg: LoopConfig, expert: bool
    ) -> Trajectory:
        """The episode's result from `worker`; _WorkerLost if the worker died under it (or stopped answering)."""
        deadline = (FAILURE_RETRIES + 1) * (cfg.episode_timeout_s + EPISODE_MARGIN_S)
        ref = worker.actor.run_episode.remote(seed, member, group_id, expert, cfg)
        try:
            return await asyncio.wait_for(_awaitable(ref), deadline)
        except RayActorError as e:
            self._lose(worker, _first_line(e))
            raise _WorkerLost(f"worker {worker.index} ({worker.where}) died: {_first_line(e)}") from None
        except RayError as e:  # run_member never raises: a bug, or a result Ray could not bring back
            return self._masked(group_id, f"rollout worker {worker.index} failed: {_first_line(e)}")
        except TimeoutError:
            _cancel(ref)
            if await self._answers(worker):  # the episode hangs, not the worker: mask it, keep the worker
                return self._masked(
                    group_id, f"rollout worker {worker.index} did not return the episode in {deadline:.0f}s"
                )
            self._lose(worker, "stopped answering")
            raise _WorkerLost(f"worker {worker.index} ({worker.where}) stopped answering") from None
        except asyncio.CancelledError:
            _cancel(ref)
            raise

    async def _acquire(self) -> _Worker | None:
        """The live worker with the fewest episodes in flight, waiting while all are full; None if none lives."""
        while True:
            live = [w for w in self.workers if w.alive]
            if not live:
                return None
            free = [w for w in live if w.in_flight < self.worker_concurrency]
            if free:
                self._turn += 1
                n = len(self.workers)
                worker = min(free, key=lambda w: (w.in_flight, (w.index - self._turn) % n))
                worker.in_flight += 1
                return worker
            self._changed.clear()
            await self._changed.wait()

    def _release(self, worker: _Worker) -> None:
        """Free the slot `worker` held and wake the episodes waiting for one."""
        worker.in_flight -= 1
        self._changed.set()

    def _lose(self, worker: _Worker, reason: str) -> None:
        """Drop a dead worker (killing its actor, in case only its answers were lost) and wake the waiters."""
        if worker.alive:
            worker.alive = False
            log.warning(
                "rollout worker %d (%s) lost: %s; %d of %d left",
                worker.index,
                worker.where,
                reason,
                self.alive,
                len(self.workers),
            )
            _kill(worker.actor)
        self._changed.set()

    async def _answers(self, worker: _Worker) -> bool:
        """True if the worker answers a ping within PING_TIMEOUT_S."""
        try:
            await asyncio.wait_for(_awaitable(worker.actor.ready.remote()), PING_TIMEOUT_S)
            return True
        except Exception:
            return False

    def _masked(self, group_id: str, detail: str, *, lost: int = 0) -> Trajectory:
        """An episode whose result never came back: env_error, which the failure policy masks."""
        return Trajectory(
            id=uuid.uuid4().hex,
            group_id=group_id,
            env_id=self.env_id,
            task_id="",
            termination=TerminationReason.ENV_ERROR,
            termination_detail=detail,
            metrics={"rollout/workers_lost": lost, "rollout/retries": 0},
        )


# ---- helpers ----


def _init(c) -> None:
    """Join cluster.address, or start a local cluster sized for the workers."""
    if c.address is None:
        # Every worker must fit, even on a small machine: its episodes mostly wait on the engine and sandboxes.
        cpus = max(os.cpu_count() or 1, math.ceil(c.num_workers * c.cpus_per_worker))
        try:
            start_local_ray(cpus, {k: v * c.num_workers for k, v in c.worker_resources.items()})
        except Exception as e:  # noqa: BLE001 - Ray raises bare Exception when its node does not come up
            raise ClusterError(
                f"the local Ray cluster did not start: {_first_line(e)} (a loaded machine can miss Ray's start-up "
                "deadline: retry, or start one with `ray start --head` and set cluster.address=auto)"
            ) from None
        return
    try:
        ray.init(address=c.address, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as e:
        raise ClusterError(
            f"cannot join the Ray cluster at cluster.address={c.address}: {_first_line(e)} (start one with "
            "`ray start --head`, or leave cluster.address unset to start a local one)"
        ) from None


async def _endpoints(engine: Any, host: str, port: int) -> tuple[list[str], Any]:
    """The engine URLs the workers use, and the server started for an in-process engine (else None)."""
    if engine is None:
        return [], None
    if getattr(engine, "urls", None):  # SGLangClient: share its servers
        return list(engine.urls), None
    from agentrl.engine.serve import start_server

    try:
        server, url = await start_server(engine, host, port)
    except OSError as e:
        raise ClusterError(
            f"cannot serve the engine on cluster.engine_host={host} cluster.engine_port={port}: {e}"
        ) from None
    return [url], server


def _check_placeable(need: dict[str, float]) -> None:
    """ClusterError now, rather than a placement wait, if no node of the cluster has what one worker needs."""
    nodes = [n.get("Resources", {}) for n in ray.nodes() if n.get("Alive")]
    if not any(all(res.get(k, 0) >= v for k, v in need.items()) for res in nodes):
        have = "; ".join(
            ", ".join(f"{k}={v:g}" for k, v in sorted(res.items()) if not k.startswith("node:"))
            for res in nodes
        )
        raise ClusterError(
            f"no node of the Ray cluster has what a rollout worker needs ({', '.join(f'{k}={v:g}' for k, v in need.items())}); "
            f"nodes have: {have or 'nothing'}. Lower cluster.cpus_per_worker, or start nodes with "
            "`ray start --address=HEAD:6379 --resources='{\"docker\": 1}'`"
        )


async def _wait_started(workers: list[_Worker], need: dict[str, float]) -> None:
    """Wait until every worker's constructor has run (ClusterError naming what is missing otherwise)."""
    tasks = {asyncio.ensure_future(_awaitable(w.actor.ready.remote())): w for w in workers}
    done, pending = await asyncio.wait(tasks, timeout=STARTUP_TIMEOUT_S)
    for task in pending:
        task.cancel()
    for task in done:
        if task.exception() is not None:
            raise ClusterError(f"rollout worker {tasks[task].index} failed to start: {task.exception()}")
        info = task.result()
        tasks[task].where = f"{info['ip']} pid {info['pid']}"
    if pending:
        raise ClusterError(
            f"{len(pending)} of {len(workers)} rollout workers were not placed within {STARTUP_TIMEOUT_S:.0f}s; "
            f"each needs {need} and the cluster has {ray.available_resources()} free (see `ray status`)"
        )


async def _awaitable(ref: Any) -> Any:
    """Await a Ray ObjectRef as a coroutine (so asyncio.wait_for can cancel it)."""
    return await ref


def _cancel(ref: Any) -> None:
    """Ask Ray to cancel a running actor call (its episode's env is closed by the collector's finally)."""
    with contextlib.suppress(Exception):
        ray.cancel(ref)


def _kill(actor: Any) -> None:
    """Kill an actor without waiting; a dead one is fine."""
    with contextlib.suppress(Exception):
        ray.kill(actor)


def _first_line(e: BaseException) -> str:
    """An exception's first message line, plus its last if they differ (Ray's messages carry the cause last)."""
    lines = [x.strip() for x in str(e).strip().splitlines() if x.strip()] or [""]
    text = lines[0] if len(lines) == 1 else f"{lines[0]} {lines[-1]}"
    return f"{type(e).__name__}: {text}"
