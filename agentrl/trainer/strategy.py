"""How a run trains: in one process (`Single`), or sharded over ranks with FSDP2 (`Fsdp`), rank 0 leading.

In a sharded run rank 0 runs the loop as one process would (trainer.loop: the run directory, the engine, the
rollouts, metrics, dashboard and console), and the other ranks run `follow`: they wait for rank 0's commands and do
their part of each one. A command is broadcast over the control group before the collective work it names, so
every rank enters the same collectives in the same order:

    ("train", batch, version)   the update on this rank's share of the batch, then the scheduler step
    ("weights",)                the full state dict gathered onto rank 0, which hands it to the engine
    ("checkpoint", tmp)         the DCP shards of model and optimizer state written into tmp/sharded, and the
                                full state dict gathered for rank 0's HF export tmp/model
    ("alive",)                  nothing: rank 0 is collecting rollouts, evaluating, starting up or writing its
                                own part of a checkpoint, and says so every collective_timeout_s / 4, so a wait
                                is bounded without bounding a rollout
    ("stop",)                   the run is over

The "alive" heartbeat is sent from another thread while rank 0 works, and a command may be sent meanwhile (a
resumed start-up pushes weights): one lock on rank 0 holds a command and its collective work together, since a
broadcast of an object is two broadcasts, and two threads' broadcasts interleaved would pair one object's size
with another's bytes.

Rollouts: rank 0 collects each step's batch with its engine and envs (or its Ray workers) and broadcasts the
trajectories; every rank then trains on its share (agentrl.trainer.distributed). docs/distributed.md weighs this
against rollouts on every rank.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from agentrl.trainer import sharded
from agentrl.trainer.checkpoint import load_checkpoint, save_checkpoint
from agentrl.trainer.collect import StepBatch
from agentrl.trainer.distributed import SINGLE, World, join, under_launcher
from agentrl.trainer.update import local_policy_logprobs, train_on_batch

T = TypeVar("T")


@dataclass
class Policy:
    """What training holds of the policy on every rank."""

    model: Any
    optimizer: torch.optim.Optimizer
    scheduler: Any
    ref_model: Any  # π_ref (None without a KL term)
    state: dict[str, Any]  # the checkpoint's state.json ({"step": 0, "version": 0} for a fresh run)
    reference: str = ""  # where π_ref loads from (loop.reference_source), recorded in every checkpoint


def shard_policy(model, world: World, *, compute_dtype: str):
    """Shard a loaded model over `world` with FSDP2, its training forward registered on the root."""
    return sharded.shard(model, world, compute_dtype=compute_dtype, forward=local_policy_logprobs)


class Single:
    """One process on model.device: every method is what the loop did before sharding existed."""

    name = "single"
    is_main = True
    world: World | None = None
    dp = SINGLE
    run_dir: Path | None = None  # the run's directory, once known (announce)

    def device(self, cfg) -> str:
        """The device this process trains on."""
        return cfg.model.device

    def shard(self, model, compute_dtype: str):
        """Nothing to shard."""
        return model

    def announce(self, cfg, run_dir: Path, ckpt: Path | None, source) -> None:
        """Remember the run directory (nothing to tell: no other rank)."""
        self.run_dir = run_dir

    def train(self, model, optimizer, batch: StepBatch, ucfg, *, version: int, ref_model=None) -> dict[str, float]:
        """The update of one step's batch (update.train_on_batch)."""
        return train_on_batch(model, optimizer, batch, ucfg, version=version, ref_model=ref_model)

    def engine_model(self, cfg, model, source):
        """The module the embedded engine runs on: the trainer's own (shared or copied: engine.build_engine)."""
        return model

    async def engine_weights(self, model, dtype: torch.dtype | None):
        """What Engine.push_weights is given: the model itself."""
        return model

    async def while_waiting(self, work: Awaitable[T]) -> T:
        """Await rank 0's own work (nobody waits for it here)."""
        return await work

    def save(self, run_dir: Path, step: int, *, model, tokenizer, optimizer, scheduler, state: dict, keep: int) -> Path:
        """Checkpoint `step` (checkpoint.save_checkpoint)."""
        return save_checkpoint(run_dir, step, model=model, tokenizer=tokenizer, optimizer=optimizer,
                               scheduler=scheduler, state=state, keep=keep)

    def load(self, ckpt: Path, *, model, optimizer, scheduler) -> dict[str, Any]:
        """Restore optimizer, scheduler and RNG from ckpt (the model was loaded from ckpt/model)."""
        return load_checkpoint(ckpt, optimizer=optimizer, scheduler=scheduler)

    def resume_note(self) -> str | None:
        """A line for the console about how the checkpoint was loaded, if it needs saying."""
        return None

    def finish(self) -> None:
        """The run is over (nobody to tell)."""

    def close(self) -> None:
        """Nothing to release."""


class Fsdp(Single):
    """Sharded data parallel over `world` (module docstring): rank 0 leads, the others follow."""

    name = "fsdp"

    def __init__(self, world: World, actors: Any = None):
        self.world = world
        self.actors = actors  # the other ranks when Ray started them (cluster.ray_ranks.RankActors)
        self.is_main = world.is_main
        self.dp = world.data_parallel()
        self.resharded_from: int | None = None  # the world size of a checkpoint written by another one
        self._lock = threading.Lock()  # rank 0: one command and its collective work at a time (module docstring)

    def device(self, cfg) -> str:
        """This rank's device (cuda:LOCAL_RANK on GPUs)."""
        return str(self.world.device)

    def shard(self, model, compute_dtype: str):
        """FSDP2 over the world's ranks (sharded.shard)."""
        return shard_policy(model, self.world, compute_dtype=compute_dtype)

    def _command(self, *command) -> None:
        """Rank 0: tell the other ranks what comes next (a command with no collective work after it)."""
        with self._lock:
            self.world.broadcast(command)

    @contextlib.contextmanager
    def _leading(self, *command) -> Iterator[None]:
        """Rank 0: send `command`, then do its collective work inside the block, with no other command between
        (a heartbeat from another thread waits for the block to end)."""
        with self._lock:
            self.world.broadcast(command)
            yield

    @contextlib.contextmanager
    def _heartbeat(self) -> Iterator[None]:
        """Rank 0: "alive" every collective_timeout_s / 4, from a thread, while the block runs (rank 0's own work
        between commands, such as the HF export and the fsyncs of a checkpoint), so the others' wait stays bounded.
        A heartbeat that fails (a rank died) ends the thread; the block's next collective reports it."""
        stop = threading.Event()

        def beat() -> None:
            with contextlib.suppress(Exception):
                while not stop.wait(self.world.timeout_s / 4):
                    self._command("alive")

        thread = threading.Thread(target=beat, name="agentrl-heartbeat", daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join()

    def announce(self, cfg, run_dir: Path, ckpt: Path | None, source) -> None:
        """Rank 0: the config, run directory, checkpoint and model source every rank loads the policy from
        (`follow` reads them)."""
        self.run_dir = run_dir
        with self._lock:
            self.world.broadcast((cfg, run_dir, ckpt, source))

    def train(self, model, optimizer, batch: StepBatch, ucfg, *, version: int, ref_model=None) -> dict[str, float]:
        """Rank 0: send the step's trajectories, then train on this rank's share of them."""
        with self._leading("train", _for_training(batch), version):
            return train_on_batch(model, optimizer, batch, ucfg, version=version, ref_model=ref_model, dp=self.dp)

    def engine_model(self, cfg, model, source):
        """A whole (unsharded) copy on rank 0 for the embedded engine, loaded from the policy's source; None for
        SGLang servers, which load the weights from disk."""
        if cfg.rollout.engine != "embedded":
            return None
        from agentrl.models import load_model

        return load_model(source, dtype=cfg.model.dtype, device=self.device(cfg))

    async def engine_weights(self, model, dtype: torch.dtype | None):
        """Rank 0: the policy's weights gathered from every rank's shards, once per update (sharded.GatheredWeights;
        floating tensors in `dtype` when given: bf16 to servers that run bf16)."""
        def gather():
            with self._leading("weights"):
                return sharded.full_state_dict(model)

        state = await asyncio.to_thread(gather)
        return sharded.GatheredWeights(model, state, dtype or torch.float32)

    async def while_waiting(self, work: Awaitable[T]) -> T:
        """Rank 0: await `work` (rollouts, evaluation, start-up), telling the other ranks every
        collective_timeout_s / 4 that it is alive, so their wait for the next command stays bounded."""
        task = asyncio.ensure_future(work)
        try:
            while True:
                done, _ = await asyncio.wait({task}, timeout=self.world.timeout_s / 4)
                if done:
                    return task.result()
                await asyncio.to_thread(self._command, "alive")
        finally:
            if not task.done():
                task.cancel()

    def save(self, run_dir: Path, step: int, *, model, tokenizer, optimizer, scheduler, state: dict, keep: int) -> Path:
        """Rank 0: a checkpoint whose model part every rank writes: DCP shards (model and optimizer state) and,
        from the gathered weights, an HF export for eval, serve and --init-from. The directory is renamed into
        place only after every rank wrote its part (checkpoint.save_checkpoint), so a rank that dies meanwhile
        leaves no checkpoint behind. Rank 0's own part (the export, the fsyncs) runs under the heartbeat."""
        def write_model(tmp: Path) -> None:
            with self._leading("checkpoint", str(tmp)):
                weights = write_shards(tmp, model, optimizer, self.world)
            export_hf(tmp, model, weights, tokenizer)

        state = {**state, "strategy": self.name, "world_size": self.world.size}
        with self._heartbeat():
            return save_checkpoint(run_dir, step, model=model, tokenizer=None, optimizer=None, scheduler=scheduler,
                                   state=state, keep=keep, write_model=write_model)

    def load(self, ckpt: Path, *, model, optimizer, scheduler) -> dict[str, Any]:
        """Every rank: scheduler and RNG from the checkpoint, model and optimizer state from its shards (DCP
        re-shards a checkpoint written by another number of ranks)."""
        if not sharded.has_shards(ckpt):
            from agentrl.errors import ConfigError

            raise ConfigError(f"{ckpt} was written by trainer.strategy=single (no sharded/ directory); start a new "
                              f"sharded run from its weights with --init-from {ckpt}")
        state = load_checkpoint(ckpt, optimizer=None, scheduler=scheduler)
        sharded.load_shards(ckpt, model, optimizer, self.world.control)
        written = sharded.recorded_world(ckpt)["world_size"]
        self.resharded_from = written if written != self.world.size else None
        return state

    def resume_note(self) -> str | None:
        """Says that DCP re-sharded a checkpoint of another world size (the math is the same; sums run in
        another order, so the continuation matches an uninterrupted run up to rounding, not bitwise)."""
        if self.resharded_from is None:
            return None
        return (f"[yellow]resumed a checkpoint written by {self.resharded_from} ranks on {self.world.size}: "
                f"torch.distributed.checkpoint re-sharded the model and optimizer state[/]")

    def finish(self) -> None:
        """Rank 0: the other ranks may leave."""
        self._command("stop")

    def close(self) -> None:
        """Leave the process group (and, on rank 0 of a Ray launch, remove the rank actors)."""
        try:
            self.world.close()
        finally:
            if self.actors is not None:
                self.actors.close()


def write_shards(tmp: Path, model, optimizer, world: World) -> dict[str, torch.Tensor]:
    """Every rank (the collective part of a checkpoint): its DCP shards into tmp/sharded, then the whole weights
    gathered onto rank 0 (returned there; the others get an empty dict) for its HF export."""
    sharded.save_shards(tmp, model, optimizer, world.control)
    return sharded.full_state_dict(model)


def export_hf(tmp: Path, model, weights: dict[str, torch.Tensor], tokenizer=None) -> None:
    """Rank 0 alone: the gathered weights (and the tokenizer) as an HF model directory tmp/model."""
    sharded.save_hf(model, weights, tmp / "model")
    if tokenizer is not None:
        tokenizer.save_pretrained(tmp / "model")


def _for_training(batch: StepBatch) -> StepBatch:
    """The part of a step's batch the update reads (what rank 0 broadcasts)."""
    return StepBatch(trajectories=batch.trajectories, advantages=batch.advantages, all_trajectories=[], seeds=[],
                     turn_advantages=batch.turn_advantages)


def check_warm_start(cfg, *, resume, init_from) -> None:
    """Refuse a sharded run that would start with the expert warm start (a fresh run with sft.episodes, without
    --init-from): the warm start trains in one process."""
    if cfg.trainer.strategy == "fsdp" and cfg.sft.episodes and not resume and not init_from:
        from agentrl.errors import ConfigError

        raise ConfigError(f"sft.episodes={cfg.sft.episodes}: the expert warm start trains in one process, not with "
                          f"trainer.strategy=fsdp; run `agentrl sft --env {cfg.env.name}` first and start from its "
                          "checkpoint with --init-from, or set sft.episodes=0")


def check_single_launch() -> None:
    """Refuse trainer.strategy=single in a process a launcher started as one of several ranks (WORLD_SIZE > 1): each
    rank would run the whole run on its own, N copies writing into one run folder."""
    import os

    size = os.environ.get("WORLD_SIZE", "1")
    if size.strip().isdigit() and int(size) > 1:
        from agentrl.errors import ConfigError

        raise ConfigError(f"WORLD_SIZE={size} (a launcher such as torchrun started {size} ranks) but "
                          "trainer.strategy=single trains in one process: every rank would run the whole run into the "
                          "same run folder; add trainer.strategy=fsdp to shard the run over the ranks, or run "
                          "`agentrl train` without the launcher")


ENTRY = "agentrl.trainer.loop:train"
"""What a rank actor of a Ray launch calls with the run config: it joins the group and follows rank 0."""


def build_strategy(cfg) -> Single:
    """trainer.strategy's strategy. For fsdp this joins the run's process group: torchrun's, the one this process
    leads when Ray is to start the other trainer.ranks − 1 ranks (agentrl.cluster.ray_ranks), or a group of one."""
    if cfg.trainer.strategy == "single":
        check_single_launch()
        return Single()
    actors = None
    if cfg.trainer.ranks > 1 and not under_launcher():
        from agentrl.cluster.ray_ranks import start_ranks

        actors = start_ranks(cfg, ENTRY, cfg)
    try:
        return Fsdp(join(cfg.model.device, cfg.trainer.collective_timeout_s), actors)
    except BaseException:
        if actors is not None:
            actors.close(timeout_s=0)
        raise


def follow(strategy: Fsdp, load_policy, update_config_from) -> None:
    """A rank other than 0: load the policy rank 0 announces, then do rank 0's commands until it says stop.

    load_policy(cfg, source, ckpt, strategy) -> Policy and update_config_from(cfg) are the loop's own, so every rank
    builds the same policy and update."""
    world = strategy.world
    cfg, strategy.run_dir, ckpt, source = world.broadcast()
    policy = load_policy(cfg, source, ckpt, strategy)
    ucfg = update_config_from(cfg)
    while True:
        command, *args = world.broadcast()
        if command == "train":
            batch, version = args
            train_on_batch(policy.model, policy.optimizer, batch, ucfg, version=version, ref_model=policy.ref_model,
                           dp=strategy.dp)
            policy.scheduler.step()
        elif command == "weights":
            sharded.full_state_dict(policy.model)
        elif command == "checkpoint":
            write_shards(Path(args[0]), policy.model, policy.optimizer, world)
        elif command == "stop":
            return
        elif command != "alive":
            raise RuntimeError(f"rank {world.rank}: unknown command {command!r} from rank 0")


def rank_failure(error: BaseException, strategy: Single, run_dir: Path) -> str | None:
    """One line for a collective that failed on this rank (another rank died, or stopped answering within
    trainer.collective_timeout_s), naming the last complete checkpoint; None if `error` is something else."""
    if strategy.world is None or not _collective_failure(error):
        return None
    from agentrl.trainer.checkpoint import latest_checkpoint

    world, cause = strategy.world, _first_line(error)
    run_dir = strategy.run_dir or run_dir  # rank 0's (a follower's own guess has another {time})
    latest = latest_checkpoint(run_dir)
    from agentrl.trainer.launch import launched_here

    how = f"agentrl train --resume {run_dir}" if launched_here() else f"the same launch and --resume {run_dir}"
    after = f"the last complete checkpoint is {latest}; continue with {how}" if latest else "no checkpoint was written yet"
    return (f"rank {world.rank} of {world.size}: a collective failed ({cause}): another rank died or did not answer "
            f"within trainer.collective_timeout_s={world.timeout_s:g} s, so the run stopped; {after}")


def _collective_failure(error: BaseException) -> bool:
    """True if `error` came out of torch.distributed (gloo and NCCL raise RuntimeErrors naming themselves)."""
    if isinstance(error, torch.distributed.DistError):
        return True
    text = str(error)
    return isinstance(error, RuntimeError) and any(s in text for s in ("gloo", "NCCL", "Connection closed by peer"))


def _first_line(error: BaseException) -> str:
    """The error's first line without gloo's "[source.cc:123] " prefix, at most 160 characters."""
    line = (str(error).strip().splitlines() or [type(error).__name__])[0]
    if line.startswith("[") and "] " in line:
        line = line.split("] ", 1)[1]
    return line[:160]
