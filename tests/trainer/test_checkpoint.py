"""Checkpoints: atomic writes, keep-N, exact optimizer/RNG restore, and kill -9 safety."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import textwrap
import time

import pytest
import torch

from agentrl.models import load_model
from agentrl.trainer.checkpoint import (
    is_complete,
    latest_checkpoint,
    list_checkpoints,
    load_checkpoint,
    save_checkpoint,
)


def _step(model, opt):
    loss = model(torch.tensor([[1, 2, 3, 4, 5]]), labels=torch.tensor([[1, 2, 3, 4, 5]])).loss
    loss.backward()
    opt.step()
    opt.zero_grad()


def test_save_load_restores_optimizer_rng_and_prunes(tmp_path):
    model = load_model("tiny").train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    for step in range(1, 4):
        _step(model, opt)
        save_checkpoint(tmp_path, step, model=model, optimizer=opt, state={"version": step}, keep=2)
    assert [p.name for p in list_checkpoints(tmp_path)] == ["step_000002", "step_000003"]
    random.seed(5)
    torch.manual_seed(5)
    ckpt = save_checkpoint(tmp_path, 4, model=model, optimizer=opt, state={"version": 4}, keep=2)
    expected = (random.random(), torch.rand(3))

    model2 = load_model(ckpt / "model").train()
    opt2 = torch.optim.AdamW(model2.parameters(), lr=1e-3)
    state = load_checkpoint(ckpt, optimizer=opt2)
    assert state == {"step": 4, "version": 4}
    assert (random.random(), torch.rand(3))[0] == expected[0]
    _step(model, opt)
    _step(model2, opt2)
    for (n, a), b in zip(model.state_dict().items(), model2.state_dict().values(), strict=True):
        torch.testing.assert_close(a, b, atol=0, rtol=0, msg=n)


@pytest.mark.slow
def test_kill_9_during_writes_never_leaves_a_checkpoint_that_loads_wrong(tmp_path):
    """A writer killed at random moments leaves only complete checkpoints (or leftovers that are ignored)."""
    code = textwrap.dedent(
        f"""
        import torch
        from agentrl.models import load_model
        from agentrl.trainer.checkpoint import save_checkpoint
        model = load_model("tiny")
        step = 0
        while True:
            step += 1
            with torch.no_grad():
                for p in model.parameters():
                    p.fill_(float(step))
            save_checkpoint({str(tmp_path)!r}, step, model=model, state={{"value": step}}, keep=3)
            print(step, flush=True)
        """
    )
    rng = random.Random(0)
    for _ in range(4):
        proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
        proc.stdout.readline()  # at least one checkpoint written by this writer
        time.sleep(rng.uniform(0.0, 1.5))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    ckpts = list_checkpoints(tmp_path)
    assert ckpts, "no complete checkpoint survived"
    for ckpt in ckpts:
        assert is_complete(ckpt)
        state = load_checkpoint(ckpt, restore_rng=False)
        weights = load_model(ckpt / "model").state_dict()
        assert all(bool((w == float(state["value"])).all()) for w in weights.values()), ckpt
    assert latest_checkpoint(tmp_path) == ckpts[-1]


def test_a_checkpoint_written_on_a_gpu_resumes_on_a_machine_without_one(tmp_path, monkeypatch):
    """trainer.pt and rng.pt of a CUDA run name their tensors' device "cuda:0"; without map_location, torch.load
    on a CPU-only machine refuses them ("Attempting to deserialize object on a CUDA device"). They load onto the
    host, and the optimizer state follows its parameters."""
    model = load_model("tiny").train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    _step(model, opt)
    with monkeypatch.context() as m:  # torch.save records this device for every storage it writes
        m.setattr(torch.serialization, "location_tag", lambda storage: "cuda:0")
        ckpt = save_checkpoint(tmp_path, 1, model=model, optimizer=opt, state={"version": 1})
    if not torch.cuda.is_available():
        with open(ckpt / "trainer.pt", "rb") as f:  # the simulation holds: a plain load refuses it
            try:
                torch.load(f, weights_only=False)
                raise AssertionError("expected torch.load to refuse a CUDA-tagged checkpoint here")
            except RuntimeError as e:
                assert "CUDA" in str(e)
    fresh = load_model("tiny").train()
    opt2 = torch.optim.AdamW(fresh.parameters(), lr=1e-3)
    assert load_checkpoint(ckpt, optimizer=opt2)["version"] == 1
    for p, q in zip(model.parameters(), fresh.parameters(), strict=True):
        a, b = opt.state[p], opt2.state[q]
        assert b["exp_avg"].device == q.device
        torch.testing.assert_close(b["exp_avg_sq"], a["exp_avg_sq"], rtol=0, atol=0)


def test_a_checkpoint_without_optimizer_state_is_refused_where_an_optimizer_is_expected(tmp_path):
    """Guards a resume that silently restarted AdamW from zero: a trainer.pt without optimizer state (written without
    an optimizer, or by trainer.strategy=fsdp, whose state is in sharded/) is refused in one line naming the file;
    a load that expects no optimizer (fsdp's own) still reads it."""
    import pytest

    from agentrl.errors import ConfigError

    model = load_model("tiny").train()
    ckpt = save_checkpoint(tmp_path, 1, model=model, optimizer=None, state={"version": 1})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    with pytest.raises(ConfigError) as e:
        load_checkpoint(ckpt, optimizer=opt)
    assert str(e.value).startswith(f"{ckpt / 'trainer.pt'} holds no optimizer state") and "--init-from" in str(e.value)
    assert "\n" not in str(e.value) and not opt.state
    (ckpt / "sharded").mkdir()
    with pytest.raises(ConfigError, match="trainer.strategy=fsdp wrote it"):
        load_checkpoint(ckpt, optimizer=opt)
    assert load_checkpoint(ckpt, optimizer=None)["version"] == 1
