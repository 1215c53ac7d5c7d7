"""trainer.strategy=fsdp: rank 0's control channel and the sharded body's precision (issue 55, items 2, 3, 5).

The ranks run this file under torchrun (its __main__ does one scenario, named on the command line):
- `race`: rank 0 pushes weights 40 times while `while_waiting` sends its "alive" heartbeat every few milliseconds
  from another thread, as a resumed start-up does under a fast heartbeat; rank 1 follows (strategy.follow). Guards
  two threads broadcasting on the control group at once: an object broadcast is two broadcasts, so interleaved
  calls paired one object's size with another's bytes (rank 1 died with `UnpicklingError: invalid load key`).
- `solo`: rank 0 checkpoints while its own part (the HF export) takes 3 × the collective timeout; rank 1 must not
  time out waiting for the next command. Guards the heartbeat not covering rank 0's solo checkpoint work.
- `precision` (one rank): the dtype of the residual stream entering a decoder layer under a bf16 sharded body,
  and the body's logprob error against fp32, beside one process's autocast error. Guards FSDP's default
  cast_forward_inputs casting the residual stream and RoPE's cos/sin to bf16 (one process keeps them fp32).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

HERE = Path(__file__)
ROOT = HERE.resolve().parents[2]


def _launch(scenario: str, out: Path, ranks: int) -> dict:
    """Run one scenario of this file under torchrun; rank 0's result (a JSON file)."""
    from agentrl.trainer.distributed import free_port
    from tests.trainer.torchrun_env import (
        torchrun_env,  # here: the ranks run this file without tests/ on the path
    )

    tmp = out.parent / f"tmp-{scenario}"
    tmp.mkdir(exist_ok=True)
    env = torchrun_env(tmp)
    proc = subprocess.run(
        [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(ranks), "--master-addr", "127.0.0.1",
         "--master-port", str(free_port()), str(HERE), scenario, str(out)],
        env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-6000:]
    return json.loads(out.read_text())


def _sharded_tiny(world, compute_dtype: str = "float32"):
    """The tiny model sharded over `world`, as load_policy shards the policy."""
    from agentrl.models import load_model
    from agentrl.trainer.strategy import shard_policy

    torch.manual_seed(0)
    return shard_policy(load_model("tiny").train(), world, compute_dtype=compute_dtype)


def _race(out: str) -> None:
    from types import SimpleNamespace

    from agentrl.trainer.distributed import join
    from agentrl.trainer.strategy import Fsdp, follow

    world = join("cpu", timeout_s=120)
    strategy = Fsdp(world)
    model = _sharded_tiny(world)
    if not world.is_main:
        follow(strategy, lambda *a: SimpleNamespace(model=model), lambda cfg: None)
        return world.close()
    strategy.announce(None, Path(out).parent, None, None)
    strategy.world = dataclasses.replace(world, timeout_s=0.008)  # "alive" every 2 ms

    async def start_up():  # the awaited work sends commands of its own
        for _ in range(40):
            await strategy.engine_weights(model, None)
        return "pushed"

    result = asyncio.run(strategy.while_waiting(start_up()))
    strategy.finish()
    Path(out).write_text(json.dumps({"result": result}))
    world.close()


def _solo(out: str) -> None:
    from types import SimpleNamespace

    from agentrl.trainer import strategy as strategy_module
    from agentrl.trainer.distributed import join
    from agentrl.trainer.strategy import Fsdp, follow

    timeout_s = 4.0
    world = join("cpu", timeout_s=timeout_s)
    strategy = Fsdp(world)
    model = _sharded_tiny(world)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    if not world.is_main:
        follow(strategy, lambda *a: SimpleNamespace(model=model, optimizer=optimizer), lambda cfg: None)
        return world.close()
    run_dir = Path(out).parent / "run"
    strategy.announce(None, run_dir, None, None)
    export = strategy_module.export_hf

    def slow_export(*args, **kwargs):  # a large model on a slow disk: rank 0 alone for 3 × the timeout
        time.sleep(3 * timeout_s)
        return export(*args, **kwargs)

    strategy_module.export_hf = slow_export
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda _: 1.0)
    started = time.monotonic()
    ckpt = strategy.save(run_dir, 1, model=model, tokenizer=None, optimizer=optimizer, scheduler=scheduler,
                         state={"step": 1, "version": 1}, keep=2)
    took = time.monotonic() - started
    asyncio.run(strategy.engine_weights(model, None))
    strategy.finish()
    Path(out).write_text(json.dumps({"checkpoint": str(ckpt), "took": took,
                                     "model_written": (ckpt / "model" / "config.json").is_file()}))
    world.close()


def _precision(out: str) -> None:
    from agentrl import precision
    from agentrl.models import load_model
    from agentrl.trainer.distributed import join
    from agentrl.trainer.sharded import decoder_layers

    world = join("cpu", timeout_s=60)
    ids = torch.randint(0, 1000, (2, 48), generator=torch.Generator().manual_seed(0))

    def logprobs_and_grad(model, dtype):
        """Next-token logprobs of `ids` and the gradient of their mean w.r.t. layer 0's down projection."""
        with precision.autocast(dtype, "cpu"):
            logits = model(ids).logits.float()[:, :-1]
        lp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
        lp.mean().backward()
        grad = decoder_layers(model)[0].mlp.down_proj.weight.grad
        return lp.detach(), (grad.full_tensor() if hasattr(grad, "full_tensor") else grad).float()

    torch.manual_seed(0)
    reference, ref_grad = logprobs_and_grad(load_model("tiny").train(), torch.float32)
    torch.manual_seed(0)
    single, single_grad = logprobs_and_grad(load_model("tiny").train(), torch.bfloat16)
    sharded = _sharded_tiny(world, "bfloat16")
    seen = []
    decoder_layers(sharded)[0].register_forward_pre_hook(
        lambda m, args, kwargs: seen.append(str((args[0] if args else kwargs["hidden_states"]).dtype)),
        with_kwargs=True)
    fsdp, fsdp_grad = logprobs_and_grad(sharded, torch.bfloat16)

    def rel(grad):
        return float((grad - ref_grad).abs().max() / ref_grad.abs().max())

    Path(out).write_text(json.dumps({
        "layer_input": seen[0], "single_err": float((single - reference).abs().max()),
        "fsdp_err": float((fsdp - reference).abs().max()), "single_grad_err": rel(single_grad),
        "fsdp_grad_err": rel(fsdp_grad)}))
    world.close()


@pytest.mark.slow
def test_a_heartbeat_and_a_command_at_once_keep_their_order(tmp_path):
    """Rank 1 follows 40 weight pushes sent while the heartbeat fires every 2 ms, and stops when told."""
    assert _launch("race", tmp_path / "race.json", 2) == {"result": "pushed"}


@pytest.mark.slow
def test_the_heartbeat_covers_rank_0s_own_checkpoint_work(tmp_path):
    """Rank 0's export takes 12 s against a 4 s collective timeout; rank 1 keeps waiting, and both go on."""
    r = _launch("solo", tmp_path / "solo.json", 2)
    assert r["took"] >= 12 and r["model_written"], r


@pytest.mark.slow
def test_a_bf16_sharded_body_keeps_the_residual_stream_in_fp32_as_one_process_does(tmp_path):
    """The layer's input stays fp32 (FSDP's default casts it to bf16), and the logprob and gradient errors against
    fp32 are one process's autocast errors, within bf16 rounding of the norm weights (docs/distributed.md)."""
    r = _launch("precision", tmp_path / "precision.json", 1)
    assert r["layer_input"] == "torch.float32", r
    assert r["fsdp_err"] <= 1.5 * r["single_err"] + 1e-4, r
    assert r["fsdp_grad_err"] <= 1.5 * r["single_grad_err"] + 1e-4, r


if __name__ == "__main__":
    {"race": _race, "solo": _solo, "precision": _precision}[sys.argv[1]](sys.argv[2])
