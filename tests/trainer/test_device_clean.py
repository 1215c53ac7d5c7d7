"""The trainer is device-clean: on an accelerator nothing it computes meets a host tensor, and a step's metrics cross
to the host once per optimizer step.

CI has no GPU, so the accelerator is a stand-in (tests/trainer/fake_device.py): parameters and every tensor made
"on the device" hold CPU data but report the device `meta`, any op where one meets a host tensor raises
HostDeviceMix, and device reads (.item(), .tolist(), .cpu(), nonzero, ...) are counted. The bug this guards:
on an H200, `agentrl train --env calc model.device=cuda` crashed in the warm start's first forward ("index is on
cpu, different from other tensors on cuda:0", sft_step → policy_logprobs → shared_prefix_hidden → _prefix_forward)
because the trainer built every batch tensor on the host. The same runs on the host give the reference values:
the device runs must reproduce them.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses

import pytest
import torch

import agentrl
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer import prefix
from agentrl.trainer.memory import LowPrecisionAdamW
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.sft import sft_step
from agentrl.trainer.update import train_on_batch, update_config_from
from agentrl.types import user
from tests.trainer.fake_device import DEVICE, FakeDevice, HostDeviceMix


class CharParityEnv(agentrl.AgentEnv):
    """One turn: reward 1 if the reply has an even number of characters (the tiny model gets both outcomes)."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], float(len(action) % 2 == 0), True, False, {}


agentrl.register("test_device_parity", CharParityEnv, description="test env with reward variance")


def _cfg(tmp_path, *overrides):
    return load_config(None, overrides=[
        "env.name=test_device_parity", "model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=4",
        "rollout.max_new_tokens=10", "rollout.max_context_tokens=256", "rollout.max_turns=1",
        "rollout.dynamic_sampling=false", "trainer.steps=1", f"trainer.run_dir={tmp_path / 'run'}",
        "trainer.tensorboard=false", "trainer.lr=1e-3", "trainer.micro_batch_tokens=256", *overrides,
    ])


@pytest.fixture(scope="module")
def batch(tmp_path_factory):
    """Real rollouts of the tiny model: 2 GRPO groups of 4 that share their prompt (the shared-prefix path runs)."""
    cfg = _cfg(tmp_path_factory.mktemp("device"))
    tok = load_tokenizer("tiny")

    async def go():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        try:
            return await collect_step(cfg, lambda: agentrl.make(cfg.env.name), engine, tok, 0)
        finally:
            await engine.close()

    b = asyncio.run(go())
    assert len(b.trajectories) == 8 and any(a != 0 for a in b.advantages)
    return b


def _host_and_device(run):
    """run(model) on the host, then on the fake device from the same weights: (host result, device result, syncs,
    device model moved back to the host)."""
    torch.manual_seed(0)
    host_model = load_model("tiny").train()
    host = run(host_model)
    model = load_model("tiny").train()
    with FakeDevice() as dev:
        dev.to_device(model)
        dev.reset()
        out = run(model)
        syncs = list(dev.syncs)
        state = _optimizer_devices(out[1]) if isinstance(out, tuple) else set()
        dev.to_host(model)
    return host, out, syncs, model, host_model, state


def _optimizer_devices(optimizer) -> set[str]:
    """Device types of the optimizer's per-parameter state tensors (its step counter aside)."""
    return {v.device.type for st in optimizer.state.values() for k, v in st.items()
            if isinstance(v, torch.Tensor) and k != "step"}


def _same_weights(a, b):
    """Equal up to kernel rounding: AdamW moves each weight by about lr = 1e-3 whatever its gradient's size, so
    rounding-level gradient differences show as up to ~1e-5 here; a step not taken, or taken twice, shows as 1e-3."""
    start = load_model("tiny").state_dict()
    moved = max(float((x - start[n]).abs().max()) for n, x in b.state_dict().items())
    assert moved > 5e-4, "the host run took no optimizer step"
    for (name, x), y in zip(a.state_dict().items(), b.state_dict().values(), strict=True):
        torch.testing.assert_close(x, y, atol=1e-4, rtol=0, msg=name)


def test_warm_start_step_runs_on_the_device_as_on_the_host(batch):
    """The crash of the issue: sft_step's first forward. On the device it runs, computes what the host computes,
    and reads the device once (its metrics)."""
    prefix.stats.reset()

    def run(model):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        return sft_step(model, opt, batch.trajectories, micro_batch_tokens=4096, chunk=64, grad_clip=1.0), opt

    (host, _), (dev, _), syncs, model, host_model, state = _host_and_device(run)
    assert prefix.stats.forwards == 2, "the shared-prefix forward (where the crash was) must run on both"
    assert dev == pytest.approx(host, rel=1e-5, abs=1e-6)
    _same_weights(model, host_model)
    assert state == {DEVICE.type}, "AdamW's moments live with the parameters"
    assert len(syncs) == 1, f"one device→host transfer per step, got {len(syncs)}:\n" + "\n".join(syncs)


UPDATES = {
    # name: (config overrides, policy version of the update: 0 = fresh tokens, 1 = every token one step stale)
    "on-policy": ((), 0),  # π_old taken from the training forward, corrections per micro-batch
    "stale-recompute": (("algo.correction=mis", "algo.trust_region=[geo,veto,opsm]"), 1),  # π_old recomputed
    "ppo-epochs": (("trainer.ppo_epochs=2", "trainer.mini_batches=2"), 0),  # 4 optimizer steps
    "kl-ref": (("algo.kl_coef=0.05",), 0),  # π_ref recomputed by a reference model on the device
    # two-segment trajectories split over 64-token micro-batches: GSPO's trajectory ratio is recomputed
    "gspo-split": (("algo.loss=gspo", "algo.reduction=seq-mean-token-mean", "trainer.micro_batch_tokens=64",
                    "trainer.ppo_epochs=2", "trainer.share_prefix=false"), 0),
    "bf16-moments": (("trainer.optimizer_state=bfloat16",), 0),  # LowPrecisionAdamW
}


def _two_segments(b):
    """Pairs of trajectories merged into one trajectory of two segments (a non-append-only chat template)."""
    trajs = [dataclasses.replace(x, segments=x.segments + y.segments)
             for x, y in zip(b.trajectories[::2], b.trajectories[1::2], strict=True)]
    return dataclasses.replace(b, trajectories=trajs, advantages=b.advantages[::2])


@pytest.mark.slow
@pytest.mark.parametrize("name", list(UPDATES))
def test_grpo_update_runs_on_the_device_as_on_the_host(batch, tmp_path, name):
    """train_on_batch in each mode: no host tensor meets a device tensor, the metrics and the new weights equal the
    host run's, the optimizer state lives on the device, and the device is read once per optimizer step."""
    overrides, version = UPDATES[name]
    cfg = _cfg(tmp_path, *overrides)
    if name == "gspo-split":
        batch = _two_segments(batch)
    ucfg = update_config_from(cfg)
    ref_host = load_model("tiny") if cfg.algo.kl_coef else None

    def run(model):
        opt = LowPrecisionAdamW(model.parameters(), lr=1e-3) if cfg.trainer.optimizer_state == "bfloat16" \
            else torch.optim.AdamW(model.parameters(), lr=1e-3)
        ref = None
        if ref_host is not None:
            ref = copy.deepcopy(ref_host)
            if next(model.parameters()).device.type == DEVICE.type:
                FakeDevice.to_device(ref)
        return train_on_batch(model, opt, batch, ucfg, version=version, ref_model=ref), opt

    (host, _), (dev, _), syncs, model, host_model, state = _host_and_device(run)
    assert dev.keys() == host.keys()
    for k, v in host.items():
        assert dev[k] == pytest.approx(v, rel=1e-4, abs=1e-5), k
    _same_weights(model, host_model)
    assert state == {DEVICE.type}
    steps = int(host["trainer/optimizer_steps"])
    assert steps == (4 if name in ("ppo-epochs",) else 2 if name == "gspo-split" else 1)
    assert len(syncs) == steps, f"{steps} optimizer steps but {len(syncs)} device reads:\n" + "\n".join(syncs)


def test_the_guard_catches_a_host_tensor_meeting_a_device_tensor():
    """The stand-in device refuses what CUDA refuses (so a pass above means something), allows what CUDA allows
    (0-d host scalars, explicit transfers), and counts reads of device data."""
    model = load_model("tiny")
    ids = torch.randint(0, 100, (2, 8))
    with FakeDevice() as dev:
        dev.to_device(model)
        with pytest.raises(HostDeviceMix, match="aten.embedding"):
            model(input_ids=ids)  # the bug: a host index into device weights
        x = torch.ones(3, device=dev.device)
        with pytest.raises(HostDeviceMix):
            x + torch.ones(3)
        with pytest.raises(HostDeviceMix):
            x.index_select(0, torch.tensor([0, 2]))
        y = x * torch.tensor(2.0) + ids[0, :3].to(dev.device)  # a 0-d host scalar and an explicit move are fine
        assert y.device.type == DEVICE.type and not dev.syncs
        total = float(y.sum())
        y.tolist()
        y.cpu()
        y[y > 1]
        assert len(dev.syncs) == 4, dev.syncs
        assert total == pytest.approx(float(sum(2 + t for t in ids[0, :3].tolist())))


def test_a_batch_moves_once_and_plans_on_its_host_copy(batch):
    """MiniBatch.to moves every per-token tensor and keeps the host copy that micro-batch planning and PPO slicing
    read; micro-batches arrive on the batch's device."""
    from agentrl.trainer.batch import build_minibatch, microbatches, slice_trajectories

    mb = build_minibatch(batch.trajectories, batch.advantages)
    assert mb.host is mb and mb.to("cpu") is mb
    with FakeDevice() as dev:
        moved = mb.to(dev.device)
        tensors = [f.name for f in dataclasses.fields(moved) if isinstance(getattr(moved, f.name), torch.Tensor)]
        assert len(tensors) == 7 and all(getattr(moved, n).device == DEVICE for n in tensors)
        assert moved.host is mb
        dev.reset()
        micros = microbatches(moved, 256, share_prefix=True)
        part, s, e = slice_trajectories(moved, 2, 5)
        assert not dev.syncs, dev.syncs
        assert all(m.input_ids.device == DEVICE and m.actions.device == DEVICE for m in micros)
        assert part.host.num_tokens == e - s and part.input_ids.device == DEVICE


FACTORIES = {"tensor", "as_tensor", "zeros", "ones", "full", "empty", "arange", "linspace", "eye", "rand", "randn",
             "randint", "randperm"}


def test_every_tensor_the_trainer_and_the_math_make_names_its_device():
    """By construction: a torch factory call in agentrl/trainer/ or agentrl/algo/ without device= makes a host
    tensor, which on a GPU meets device tensors (the issue counted 29). The runs above cover the paths they take;
    this covers every line. Host-side code names the host (device="cpu", collect.HOST) to say it means it."""
    import ast
    from pathlib import Path

    root = Path(agentrl.__file__).parent
    missing = []
    for path in sorted([*root.joinpath("trainer").glob("*.py"), *root.joinpath("algo").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FACTORIES
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                    and not any(k.arg == "device" for k in node.keywords)):
                missing.append(f"{path.relative_to(root.parent)}:{node.lineno} torch.{node.func.attr}")
    assert not missing, "tensor constructors naming no device:\n" + "\n".join(missing)
