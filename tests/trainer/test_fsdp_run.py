"""`torchrun --nproc-per-node 2 -m agentrl train ... trainer.strategy=fsdp` as a user types it: training on calc,
the sharded checkpoint and its HF export (agentrl eval reads it), exact resume, resume at another world size, and
a rank that dies or hangs (the run stops in bounded time with one line, nothing left running, no half-written
checkpoint). 2 gloo ranks on loopback, the tiny model."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import torch

import agentrl
from agentrl.trainer.checkpoint import is_complete, list_checkpoints
from agentrl.trainer.distributed import free_port
from agentrl.types import user
from tests.trainer.torchrun_env import torchrun_env

ROOT = Path(__file__).resolve().parents[2]
TINY = ["model.name=tiny", "sft.episodes=0", "rollout.tasks_per_step=2", "rollout.group_size=2",
        "rollout.max_new_tokens=8", "rollout.max_context_tokens=128", "rollout.max_turns=1",
        "rollout.max_batch_size=1", "trainer.tensorboard=false", "trainer.lr=1e-3", "trainer.steps=2",
        "trainer.checkpoint_every=1", "trainer.keep_checkpoints=3", "trainer.sample_every=0",
        "trainer.strategy=fsdp", "model.compute_dtype=float32"]
PARITY = "tests.trainer.test_fsdp_run:ParityEnv"  # found by module:Class in every rank's process


class ParityEnv(agentrl.AgentEnv):
    """One turn: reward 1 for an even-length reply (the tiny random model gets both outcomes, so GRPO moves the
    weights and a resume that trained differently would show)."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], float(len(action) % 2 == 0), True, False, {}


class SlowParityEnv(ParityEnv):
    """ParityEnv whose episodes take 12 s: longer than the collective timeout of the test that uses it."""

    def step(self, action):
        time.sleep(12)
        return super().step(action)


def torchrun(*args: str, nproc: int = 2) -> list[str]:
    """The command line of `torchrun --nproc-per-node N -m agentrl ...` on loopback."""
    return [sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", str(nproc), "--master-addr",
            "127.0.0.1", "--master-port", str(free_port()), "-m", "agentrl", *args]


def _run(cmd: list[str], timeout: float = 600, tmp: Path | None = None) -> subprocess.CompletedProcess:
    """Run `cmd` to its end with its own temp folder (`tmp`, else one removed after)."""
    own = tmp is None
    tmp = Path(tempfile.mkdtemp(prefix="agentrl-test-")) if own else tmp
    proc = subprocess.Popen(cmd, cwd=ROOT, env=torchrun_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
    finally:
        _kill_group(proc)
        if own:
            shutil.rmtree(tmp, ignore_errors=True)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err)


def _kill_group(proc: subprocess.Popen) -> None:
    """Whatever of the process group this test started is still there (a failed test leaves nothing behind)."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def _weights(ckpt: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    return load_file(str(ckpt / "model" / "model.safetensors"))


def _rows(run: Path, step: int) -> list:
    rows = [json.loads(x) for x in (run / "trajectories.jsonl").read_text().splitlines()]
    return sorted((r["task_id"], r["segments"][0]["token_ids"]) for r in rows if r["metrics"]["train/step"] == step)


@pytest.mark.slow
def test_torchrun_trains_calc_and_eval_reads_the_checkpoint(tmp_path):
    """Guards the README's multi-device command: 2 ranks train 2 steps on calc, rank 0 alone speaks, and the
    checkpoint holds every rank's shards plus an HF export that `agentrl eval --model` loads."""
    run = tmp_path / "run"
    # the random tiny model earns no calc reward, so every group is flat: dynamic sampling off keeps them, and both
    # steps run the whole sharded update (zero advantages) and weight sync
    r = _run(torchrun("train", "--env", "calc", *TINY, "rollout.max_turns=2", "rollout.max_context_tokens=1024",
                      "rollout.dynamic_sampling=false", f"trainer.run_dir={run}"))
    assert r.returncode == 0, r.stderr[-4000:]
    assert r.stderr.count("agentrl train calc →") == 1  # rank 1 stays quiet
    rows = [json.loads(x) for x in (run / "metrics.jsonl").read_text().splitlines()]
    assert [m["step"] for m in rows] == [1, 2]
    assert all(m["trainer/optimizer_steps"] == 1 and m["trainer/micro_batches"] >= 2 for m in rows)  # both ranks
    ckpt = run / "checkpoints" / "step_000002"
    assert is_complete(ckpt)
    assert sorted(p.name for p in (ckpt / "sharded").iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp"]
    state = json.loads((ckpt / "state.json").read_text())
    assert state["strategy"] == "fsdp" and state["world_size"] == 2 and state["version"] == 2
    out = tmp_path / "eval.jsonl"
    e = _run([sys.executable, "-m", "agentrl", "eval", "--env", "calc", "--model", str(ckpt), "--num-tasks", "1",
              "--max-new-tokens", "8", "--max-turns", "1", "--out", str(out), "--quiet"])
    assert e.returncode == 0, e.stderr[-3000:]
    assert len(out.read_text().splitlines()) == 1


def _resumable_copy(full: Path, to: Path) -> Path:
    """The full run as it was after step 1 (step 2's checkpoint and trajectories removed)."""
    shutil.copytree(full, to)
    shutil.rmtree(to / "checkpoints" / "step_000002")
    lines = (full / "trajectories.jsonl").read_text().splitlines()
    (to / "trajectories.jsonl").write_text("".join(x + "\n" for x in lines if json.loads(x)["metrics"]["train/step"] == 1))
    return to


@pytest.mark.slow
def test_a_2_rank_run_resumes_after_step_1_exactly_and_at_another_world_size(tmp_path):
    """One 2-rank run of 2 steps on the parity env, a checkpoint after each, with a KL term (a resume must anchor
    it to the weights the run started from, not to the checkpoint's), resumed from its step-1 checkpoint twice.

    At the same world size it guards a resume that loses sharded optimizer state (AdamW moments) or the
    scheduler: step 2 samples the same trajectories and ends at bitwise the same weights; its KL term is measured
    against the same π_ref (a resume that loaded π_ref from the checkpoint reported ref_kl 0). By one process
    (trainer.strategy=fsdp without torchrun: a group of one) it guards re-sharding: DCP re-shards model and
    optimizer state, the run says so, and step 2 lands on the 2-rank weights up to summation order.
    One test, so the run is made once (as a module fixture of two tests, each xdist worker made its own)."""
    full_run = tmp_path / "full"
    r = _run(torchrun("train", "--env", PARITY, *TINY, "algo.kl_coef=0.5", f"trainer.run_dir={full_run}"))
    assert r.returncode == 0, r.stderr[-4000:]
    want = _weights(full_run / "checkpoints" / "step_000002")

    # the same world size: exact
    run = _resumable_copy(full_run, tmp_path / "resumed")
    r = _run(torchrun("train", "--resume", str(run)))
    assert r.returncode == 0, r.stderr[-4000:]
    kl = [[json.loads(x)["actor/ref_kl"] for x in (d / "metrics.jsonl").read_text().splitlines()] for d in (full_run, run)]
    assert kl[1][1] > 0 and kl[1] == kl[0], kl
    assert _rows(run, 2) == _rows(full_run, 2) and _rows(run, 2) != _rows(run, 1)
    got = _weights(run / "checkpoints" / "step_000002")
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)
    first = _weights(full_run / "checkpoints" / "step_000001")
    assert any(not torch.equal(first[k], want[k]) for k in want)  # step 2 moved the weights

    # one process: re-sharded
    run = _resumable_copy(full_run, tmp_path / "one")
    r = _run([sys.executable, "-m", "agentrl", "train", "--resume", str(run)])
    assert r.returncode == 0, r.stderr[-4000:]
    assert "re-shard" in " ".join(r.stderr.split())
    assert _rows(run, 2) == _rows(full_run, 2)
    got = _weights(run / "checkpoints" / "step_000002")
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=0, atol=1e-5, msg=k)
    assert json.loads((run / "checkpoints" / "step_000002" / "state.json").read_text())["world_size"] == 1


@pytest.mark.slow
def test_rollouts_longer_than_the_collective_timeout_do_not_stop_the_run(tmp_path):
    """Guards the other ranks timing out while rank 0 collects a slow step's rollouts: rank 0 says it is alive every
    collective_timeout_s / 4, so 12 s episodes pass under an 8 s timeout."""
    run = tmp_path / "run"
    r = _run(torchrun("train", "--env", "tests.trainer.test_fsdp_run:SlowParityEnv", *TINY, "trainer.steps=1",
                      "rollout.dynamic_sampling=false", "trainer.collective_timeout_s=8", f"trainer.run_dir={run}"))
    assert r.returncode == 0, r.stderr[-4000:]
    assert is_complete(run / "checkpoints" / "step_000001")


def _ranks_here(*args: str) -> list[str]:
    """`agentrl ... trainer.ranks=2`: agentrl starts the two ranks itself (agentrl.trainer.launch)."""
    return [sys.executable, "-m", "agentrl", *args, "trainer.ranks=2"]


@pytest.mark.slow
def test_trainer_ranks_starts_the_ranks_and_a_failing_rank_is_one_line(tmp_path):
    """Guards torchrun's 30-line ChildFailedError report after a rank's exit 1 (issue 55 item 10): `trainer.ranks=2`
    starts 2 ranks here, and a run where nothing trains (the random tiny model on calc: every step SKIPPED) ends
    with rank 0's advice once, one line naming the rank, and rank 0's own exit status 1; both ranks ran (the
    checkpoint is a 2-rank one); the launcher's log folders are gone (each run left a torchelastic_* folder in the
    system's temp folder)."""
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    r = _run(_ranks_here("train", "--env", "calc", *TINY, "rollout.max_turns=1", "rollout.max_context_tokens=1024",
                         "trainer.steps=1", f"trainer.run_dir={run}"), tmp=tmp)
    assert not list(tmp.glob("torchelastic_*")), list(tmp.iterdir())
    assert r.returncode == 1, r.stderr[-4000:]
    assert "Traceback" not in r.stderr and "ChildFailedError" not in r.stderr, r.stderr[-4000:]
    err = " ".join(r.stderr.split())
    assert err.count("no step trained") == 1 and err.count("agentrl train calc →") == 1
    assert "agentrl train: rank 0 of 2 exited with status 1 (the lines above say why)" in err
    state = json.loads((run / "checkpoints" / "step_000001" / "state.json").read_text())
    assert state["world_size"] == 2


@pytest.mark.slow
def test_trainer_ranks_stopped_by_sigterm_resumes_with_the_same_command(tmp_path):
    """Guards the resume hint of a run agentrl launched: SIGTERM to the launcher stops both ranks (exit 143, none
    left running, no traceback), rank 0 says `agentrl train --resume RUN` (not torchrun's "the same launch"), and
    that command starts the 2 ranks again and finishes the run."""
    r, _, pids, run = _fault_run(tmp_path, lambda pids, proc: proc.send_signal(signal.SIGTERM), timeout_s=600,
                                 launch=_ranks_here)
    err = r.stderr
    assert r.returncode == 143, err[-4000:]
    assert not [p for p in pids.values() if _alive(p)], "a rank outlived the launcher"
    assert "Traceback" not in err, err[-4000:]
    assert f"continue from its last checkpoint with: agentrl train --resume {run}" in " ".join(err.split())
    last = int(list_checkpoints(run)[-1].name.split("_")[1])
    r = _run([sys.executable, "-m", "agentrl", "train", "--resume", str(run), f"trainer.steps={last + 1}"])
    assert r.returncode == 0, r.stderr[-4000:]
    state = json.loads((run / "checkpoints" / f"step_{last + 1:06d}" / "state.json").read_text())
    assert state["world_size"] == 2


def test_sharded_config_refusals_are_one_line(tmp_path, capsys):
    """trainer.ranks without trainer.strategy=fsdp is refused naming both keys; a fresh sharded run that would start
    with the expert warm start (the calc preset's sft.episodes) says to run `agentrl sft` first and --init-from it."""
    from agentrl.cli import main

    assert main(["train", "--env", "calc", "trainer.ranks=2", "--print-config"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert "trainer.ranks=2 shards the run over 2 ranks, which trainer.strategy=single cannot do: add trainer.strategy=fsdp" in err
    for backend in ("local", "ray"):
        assert main(["train", "--env", "calc", "trainer.strategy=fsdp", "trainer.ranks=2", f"cluster.backend={backend}",
                     "--print-config"]) == 0
    capsys.readouterr()
    assert main(["train", "--env", "calc", "trainer.strategy=fsdp", "trainer.ranks=2",
                 f"trainer.run_dir={tmp_path / 'run'}"]) == 2  # refused before any rank starts: one line, not two
    assert capsys.readouterr().err.count("the expert warm start trains in one process") == 1
    assert main(["train", "--env", "calc", "trainer.strategy=fsdp", f"trainer.run_dir={tmp_path / 'run'}"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert ("sft.episodes=16: the expert warm start trains in one process, not with trainer.strategy=fsdp; run "
            "`agentrl sft --env calc` first and start from its checkpoint with --init-from" in err)
    assert not (tmp_path / "run").exists()


def _ranks(agent: int, deadline: float) -> dict[int, int]:
    """{rank: pid} of torchrun's workers (the agent's children carrying RANK in their environment)."""
    while time.monotonic() < deadline:
        found = {}
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                env = (entry / "environ").read_bytes().split(b"\0")
            except (OSError, IndexError, ValueError):
                continue
            if ppid == agent:
                rank = [v for v in env if v.startswith(b"RANK=")]
                if rank:
                    found[int(rank[0][5:])] = int(entry.name)
        if len(found) == 2:
            return found
        time.sleep(0.2)
    raise AssertionError("torchrun's two workers did not start")


def _alive(pid: int) -> bool:
    try:
        return (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def _fault_run(tmp_path: Path, act, *, timeout_s: float, launch=torchrun) -> tuple[subprocess.CompletedProcess, float,
                                                                                  dict, Path]:
    """A long 2-rank run (`launch`: torchrun, or trainer.ranks); once its first checkpoint is complete, `act(pids,
    proc)` on the workers' pids and the launcher; returns the finished run, the seconds from act to exit, the workers'
    pids and the run directory."""
    run, tmp = tmp_path / "run", tmp_path / "tmp"
    tmp.mkdir()
    cmd = launch("train", "--env", PARITY, *TINY, "trainer.steps=200", f"trainer.run_dir={run}",
                   f"trainer.collective_timeout_s={timeout_s}")
    proc = subprocess.Popen(cmd, cwd=ROOT, env=torchrun_env(tmp), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)
    try:
        pids = _ranks(proc.pid, time.monotonic() + 300)
        deadline = time.monotonic() + 400
        while not list_checkpoints(run):
            assert proc.poll() is None and time.monotonic() < deadline, "the run ended before its first checkpoint"
            time.sleep(0.2)
        act(pids, proc)
        acted = time.monotonic()
        out, err = proc.communicate(timeout=240)
        took = time.monotonic() - acted
    finally:
        _kill_group(proc)
    return subprocess.CompletedProcess(cmd, proc.returncode, out, err), took, pids, run


def _stopped_cleanly(r, pids, run) -> None:
    assert r.returncode != 0
    assert not [p for p in pids.values() if _alive(p)], "a rank outlived the run"
    ckpts = list_checkpoints(run)
    assert ckpts and all(is_complete(c) for c in ckpts)
    assert not list((run / "checkpoints").glob(".tmp-*")), "a half-written checkpoint was left behind"


@pytest.mark.slow
def test_a_killed_rank_stops_the_run(tmp_path):
    """Guards a run that waits forever for a dead rank: rank 1 killed mid-run, the whole run exits non-zero within
    seconds, with rank 0's one line naming the last complete checkpoint, and no rank left running."""
    r, took, pids, run = _fault_run(tmp_path, lambda pids, _: os.kill(pids[1], signal.SIGKILL), timeout_s=600)
    _stopped_cleanly(r, pids, run)
    assert took < 120, took  # far below the 600 s collective timeout: a dead peer is noticed at once
    err = " ".join(r.stderr.split())
    # rank 0 either saw the collective fail or was stopped by torchrun first: either way one line says what to do
    assert ("rank 0 of 2: a collective failed" in err
            or "torchrun stops every rank when one fails" in err), err[-3000:]
    assert f"--resume {run}" in err


@pytest.mark.slow
def test_a_hung_rank_stops_the_run_within_the_collective_timeout(tmp_path):
    """Guards a run that hangs with a stopped rank: rank 1 frozen (SIGSTOP), rank 0's next collective times out
    after trainer.collective_timeout_s, it says so in one line and the launcher removes the frozen rank."""
    r, took, pids, run = _fault_run(tmp_path, lambda pids, _: os.kill(pids[1], signal.SIGSTOP), timeout_s=20)
    _stopped_cleanly(r, pids, run)
    assert took < 20 + 120, took
    err = " ".join(r.stderr.split())
    assert "rank 0 of 2: a collective failed" in err and "trainer.collective_timeout_s=20 s" in err, err[-3000:]
    assert "the last complete checkpoint is" in err
