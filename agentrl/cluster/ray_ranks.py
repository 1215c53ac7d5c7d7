"""Training ranks as Ray actors: trainer.strategy=fsdp with cluster.backend=ray and trainer.ranks = N.

The driver (the process `agentrl train` runs in) is rank 0: it keeps the run directory, the engine, the rollout
workers and the console, as in every sharded run. `start_ranks` asks Ray for N − 1 `TrainerRank` actors (one GPU
each on CUDA, else one CPU, spread over the nodes), gives each the environment torchrun would give a rank (RANK,
WORLD_SIZE, LOCAL_RANK, MASTER_ADDR = the driver's node, MASTER_PORT) and has it call the trainer's entry point
by name, which joins the process group and follows rank 0 (agentrl.trainer.strategy). So one code path serves both
launchers; Ray only places the processes. A rank actor that dies breaks the group's connections, and rank 0's
next collective fails with one line; the driver kills the actors when it leaves (and Ray kills them if the driver
dies: they are not detached).
"""

from __future__ import annotations

import importlib
import logging
import math
import os
import socket
from dataclasses import dataclass, field
from typing import Any

import ray

from agentrl.cluster.ray_backend import STARTUP_TIMEOUT_S, start_local_ray
from agentrl.errors import ClusterError

PASSED_ENV = ("GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME", "OMP_NUM_THREADS", "PYTHONPATH")
"""Variables of the driver's environment the rank actors get too (network interface, threads, import path)."""


class TrainerRank:
    """A Ray actor that is one rank of a sharded run (the class is wrapped by ray.remote in start_ranks)."""

    def __init__(self, env: dict[str, str]):
        os.environ.update(env)  # read by torch.distributed when the entry point joins the group

    def ready(self) -> dict[str, Any]:
        """Where this rank runs (answered once the actor has started)."""
        return {"pid": os.getpid(), "ip": ray.util.get_node_ip_address()}

    def run(self, entry: str, *args: Any) -> None:
        """Call `module:function`(*args): the trainer's entry point, which joins the group and follows rank 0."""
        module, name = entry.split(":")
        getattr(importlib.import_module(module), name)(*args)


@dataclass
class RankActors:
    """The rank actors of a run, the calls they are running, and whether this process started Ray for them."""

    actors: list[Any]
    runs: list[Any] = field(default_factory=list)
    owns_ray: bool = False

    def close(self, timeout_s: float = 60.0) -> None:
        """Wait for the ranks to finish (they leave when rank 0 says stop), then remove them (and Ray, if ours)."""
        try:
            if self.runs:
                ray.wait(self.runs, num_returns=len(self.runs), timeout=timeout_s)
        finally:
            for actor in self.actors:
                ray.kill(actor, no_restart=True)
            if self.owns_ray and ray.is_initialized():
                ray.shutdown()


def start_ranks(cfg, entry: str, *args: Any) -> RankActors:
    """Start trainer.ranks − 1 rank actors that call `entry`(*args), and make this process rank 0 of their group
    (its environment gets RANK=0 and the rest, so agentrl.trainer.distributed.join finds it)."""
    c, n = cfg.cluster, cfg.trainer.ranks
    cuda = cfg.model.device.startswith("cuda")
    owns_ray = not ray.is_initialized()
    if owns_ray:
        _init(cfg)
    local = c.address is None
    addr = "127.0.0.1" if local else ray.util.get_node_ip_address()
    port = str(_free_port())
    common = {"WORLD_SIZE": str(n), "MASTER_ADDR": addr, "MASTER_PORT": port, "LOCAL_RANK": "0",
              **{k: os.environ[k] for k in PASSED_ENV if k in os.environ}}
    cls = ray.remote(TrainerRank).options(num_cpus=0 if cuda else 1, num_gpus=1 if cuda else 0, max_restarts=0,
                                          scheduling_strategy="SPREAD")
    actors = [cls.remote({**common, "RANK": str(rank)}) for rank in range(1, n)]
    group = RankActors(actors, owns_ray=owns_ray)
    try:
        ray.get([a.ready.remote() for a in actors], timeout=STARTUP_TIMEOUT_S)
    except Exception as e:  # noqa: BLE001 - GetTimeoutError, RayActorError: either way the ranks are not there
        group.close(timeout_s=0)
        raise ClusterError(f"trainer.ranks={n}: the {n - 1} rank actors did not start within {STARTUP_TIMEOUT_S:g} s "
                           f"({type(e).__name__}); does the cluster have {n - 1} free {'GPUs' if cuda else 'CPUs'}?"
                           ) from None
    group.runs = [a.run.remote(entry, *args) for a in actors]
    os.environ.update({**common, "RANK": "0"})
    return group


def _init(cfg) -> None:
    """Join cluster.address, or start a local cluster with room for the rollout workers and the rank actors."""
    c = cfg.cluster
    if c.address is not None:
        ray.init(address=c.address, logging_level=logging.WARNING)
        return
    ranks = 0 if cfg.model.device.startswith("cuda") else cfg.trainer.ranks - 1
    cpus = max(os.cpu_count() or 1, math.ceil(c.num_workers * c.cpus_per_worker) + ranks)
    try:
        start_local_ray(cpus, {k: v * c.num_workers for k, v in c.worker_resources.items()})
    except Exception as e:  # noqa: BLE001 - Ray raises bare Exception when its node does not come up
        raise ClusterError(f"the local Ray cluster did not start: {str(e).splitlines()[0][:160]}") from None


def _free_port() -> int:
    """A TCP port free on this machine now (rank 0's rendezvous port)."""
    with socket.socket() as sock:
        sock.bind(("", 0))
        return sock.getsockname()[1]
