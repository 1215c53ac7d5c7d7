"""Overlapped rollouts (one_step_off / async) on the tiny model: the staleness bound, per-token versions
across an in-flight weight update, the bucket-0 numerical floor, shutdown, resume. Each test names the bug
it guards."""

from __future__ import annotations

import asyncio
import json
import random
import threading
import time

import pytest
import torch

import agentrl
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.engine.kv_batch import cache_kwarg, new_cache
from agentrl.engine.protocol import SamplingParams
from agentrl.errors import ConfigError
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.checkpoint import list_checkpoints
from agentrl.trainer.collect import SlotRollout, task_seed
from agentrl.trainer.loop import _train, train
from agentrl.trainer.pipeline import RolloutPipeline, _Finished
from agentrl.trainer.strategy import Single
from agentrl.types import Segment, Trajectory, user


class SlowToolEnv(agentrl.AgentEnv):
    """Two turns with a lognormal tool delay after the first (heavy-tailed, like real tools); reward 1 if the
    second reply has an even number of characters. Episodes last long enough to span weight updates."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.turn = 0
        self.rng = random.Random(seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        self.turn += 1
        if self.turn == 1:
            time.sleep(min(self.rng.lognormvariate(-2.5, 1.0), 1.0))
            return [user("tool: ok. Again.")], 0.0, False, False, {}
        return [], float(len(action) % 2 == 0), True, False, {}


agentrl.register("test_slow_tool", SlowToolEnv, description="test env with lognormal tool latency")


class FlatOrParityEnv(agentrl.AgentEnv):
    """One turn. Tasks in `flat` pay 0 whatever the reply (zero std: DAPO drops the group); the others pay 1 for
    a reply with an even number of characters."""

    def __init__(self, flat=()):
        super().__init__()
        self.flat = {int(x) for x in flat}

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.task = seed
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], 0.0 if self.task in self.flat else float(len(action) % 2 == 0), True, False, {}


agentrl.register("test_flat_or_parity", FlatOrParityEnv, description="test env with some zero-variance tasks")


def _cfg(tmp_path, *overrides):
    return load_config(
        None,
        overrides=[
            "env.name=test_slow_tool", "model.name=tiny", "rollout.tasks_per_step=3", "rollout.group_size=4",
            "rollout.max_new_tokens=12", "rollout.max_context_tokens=256", "rollout.max_turns=2",
            "rollout.dynamic_sampling=false", "trainer.steps=3", f"trainer.run_dir={tmp_path / 'run'}",
            "trainer.tensorboard=false", "trainer.lr=1e-3", *overrides,
        ],
    )


def _rows(result):
    return [json.loads(x) for x in result.metrics.read_text().splitlines()]


def test_overlap_modes_are_validated():
    """Guards a silent no-op: one_step_off with η = 0 could not overlap anything and must be refused."""
    with pytest.raises(ConfigError, match="one_step_off overlaps one step"):
        load_config(None, overrides=["rollout.mode=one_step_off", "rollout.max_staleness=0"])
    with pytest.raises(ConfigError, match="drop_staleness=0 is below"):
        load_config(None, overrides=["rollout.mode=async", "rollout.max_staleness=2", "rollout.drop_staleness=0"])


@pytest.mark.slow
def test_async_run_keeps_staleness_within_the_admission_bound(tmp_path):
    """Guards admission control: with η = 1 no trained token may be more than 1 version behind, yet the run
    must really overlap (some stale tokens), and the same-version bucket must stay at the numerical floor
    while the stale bucket shows the staleness cost (buckets must not mix)."""
    result = train(_cfg(tmp_path, "rollout.mode=async", "rollout.max_staleness=1", "trainer.steps=4"))
    rows = _rows(result)
    assert [r["trainer/version"] for r in rows] == [1, 2, 3, 4]
    for r in rows:
        assert r["staleness/max"] <= 1 and r["staleness/sample_max"] <= 1, r
        hist = [r[f"staleness/hist_{b}"] for b in ("0", "1", "2", "3+")]
        assert hist[2] == hist[3] == 0 and sum(hist) == pytest.approx(1.0)
        if r.get("mismatch/staleness_0/token_frac", 0) > 0:
            assert r["mismatch/staleness_0/logprob_abs_diff_max"] < 1e-3, r
    stale = [r for r in rows if r["staleness/hist_1"] > 0]
    assert stale, "nothing was ever stale: the pipeline did not overlap rollout and training"
    assert max(r["mismatch/staleness_1/logprob_abs_diff"] for r in stale) > 1e-3


@pytest.mark.slow
def test_one_step_off_trains_on_previous_weights_and_resumes_from_its_checkpoint(tmp_path):
    """Guards one_step_off semantics (step n+1's groups sampled while step n trains: staleness exactly 1 from
    step 1 on) and resume in an overlapped mode: the resumed step trains on its own deterministic tasks, with
    the engine labelled with the resumed version (else staleness would jump to the checkpoint's version)."""
    first = train(_cfg(tmp_path / "a", "rollout.mode=one_step_off", "trainer.steps=2", "trainer.checkpoint_every=1"))
    rows = _rows(first)
    assert rows[0]["staleness/max"] == 0 and rows[1]["staleness/sample_max"] == 1
    assert [c.name for c in list_checkpoints(first.run_dir)] == ["step_000001", "step_000002"]

    again = train(_cfg(tmp_path / "a", "rollout.mode=one_step_off", "trainer.steps=3"), resume=str(first.run_dir))
    rows = _rows(again)
    assert [r["step"] for r in rows] == [1, 2, 3] and rows[-1]["trainer/version"] == 3
    assert rows[-1]["staleness/max"] == 0  # slot 2 was admitted and sampled with version-2 weights only
    trajs = [json.loads(x) for x in (again.run_dir / "trajectories.jsonl").read_text().splitlines()]
    step3 = {t["task_id"] for t in trajs if t["metrics"]["train/step"] == 3}  # numbered from 1; its seeds index 2
    assert step3 == {str(task_seed(0, 2, 0, j)) for j in range(3)}


@pytest.mark.slow
def test_bucket_zero_equals_sync_mismatch_when_nothing_is_in_flight(tmp_path):
    """Guards the bucket split: with no update in flight (one step) the async pipeline samples the same tasks and
    tokens as sync, all tokens fall in bucket 0, and bucket 0's mismatch equals the synchronous mismatch."""
    sync = _rows(train(_cfg(tmp_path / "s", "trainer.steps=1")))[0]
    asy = _rows(train(_cfg(tmp_path / "a", "trainer.steps=1", "rollout.mode=async", "rollout.max_staleness=2")))[0]
    assert asy["mismatch/staleness_0/token_frac"] == 1.0 and asy["staleness/hist_0"] == 1.0
    for key in ("logprob_abs_diff", "logprob_abs_diff_max", "kl_k3", "tis_mean"):
        assert asy[f"mismatch/staleness_0/{key}"] == pytest.approx(sync[f"mismatch/{key}"], abs=1e-6), key
    assert asy["rollout/reward_mean"] == sync["rollout/reward_mean"]


@pytest.mark.slow
def test_sync_and_async_draw_the_same_tasks_after_a_drop(tmp_path):
    """Guards the one seed rule: a dropped slot j is refilled with task_seed(base, step, round, j) in every mode.
    Sync used to number the refills 0, 1, … (task_seed(base, step, round, i) over the missing count), so once
    slot 1 (not slot 0) was dropped, sync and async trained on different tasks."""
    flat = task_seed(0, 0, 0, 1)  # slot 1's first task has zero reward variance: it must be resampled
    common = ("env.name=test_flat_or_parity", f"env.kwargs.flat=[{flat}]", "rollout.dynamic_sampling=true",
              "rollout.max_resample_rounds=2", "rollout.max_turns=1", "trainer.steps=1", "rollout.max_batch_size=1")

    def tasks(result):
        rows = [json.loads(x) for x in (result.run_dir / "trajectories.jsonl").read_text().splitlines()]
        return sorted({r["task_id"] for r in rows})

    sync = train(_cfg(tmp_path / "s", *common))
    asy = train(_cfg(tmp_path / "a", *common, "rollout.mode=async", "rollout.max_staleness=1"))
    assert _rows(sync)[0]["rollout/sample_rounds"] >= 2, "nothing was resampled: the test would prove nothing"
    assert str(flat) in tasks(sync) and str(task_seed(0, 0, 1, 1)) in tasks(sync)  # slot 1 refilled as slot 1
    assert tasks(sync) == tasks(asy)
    assert _rows(sync)[0]["rollout/groups_sampled"] == _rows(asy)[0]["rollout/groups_sampled"]


def test_a_trajectory_spanning_a_weight_update_keeps_per_token_versions():
    """Guards in-flight updates: pause(in_place) → update → resume must continue the same generation, tokens
    before the update labelled 0 and after it 1, and the later tokens must really come from the new weights.
    In place means the KV cache is kept: the prefix (up to the token fed at the boundary) stays as the old
    weights computed it, so the reference is old-model cache + new-model continuation."""
    tok = load_tokenizer("tiny")
    old = load_model("tiny").eval()
    new = load_model("tiny").eval()
    with torch.no_grad():
        for p in new.parameters():
            p.add_(0.05 * torch.randn_like(p))
    prompt = tok("hello there")["input_ids"]

    async def go():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        engine.eos_token_ids = frozenset()  # never stop early: the generation must outlive the update
        try:
            task = asyncio.create_task(engine.generate(prompt, SamplingParams(max_new_tokens=120, seed=1)))
            for _ in range(2000):
                if engine.stats["decode_steps"] >= 10:
                    break
                await asyncio.sleep(0.005)
            await engine.pause("in_place")
            await engine.update_weights({k: v.clone() for k, v in new.state_dict().items()}, version=1)
            await engine.resume()
            return await asyncio.wait_for(task, 60)
        finally:
            await engine.close()

    gen = asyncio.run(go())
    k = gen.versions.index(1)
    assert 0 < k < len(gen.versions) == 120
    assert gen.versions == [0] * k + [1] * (120 - k)
    out, got = gen.output_ids, torch.tensor(gen.logprobs)
    with torch.no_grad():
        cache = new_cache(old)  # filled by the old model, then extended by the new one
        head = old(torch.tensor([prompt + out[: k - 1]]), use_cache=True, **{cache_kwarg(old): cache})
        tail = new(torch.tensor([out[k - 1 : -1]]), use_cache=True, **{cache_kwarg(new): cache})
        logits = torch.cat([head.logits[0, len(prompt) - 1 :], tail.logits[0]])  # (120, V): logits of out[i]
        lp_old_all = torch.log_softmax(old(torch.tensor([prompt + out])).logits[0, len(prompt) - 1 : -1], -1)
    want = torch.log_softmax(logits.float(), -1).gather(1, torch.tensor(out)[:, None])[:, 0]
    want_old = lp_old_all.gather(1, torch.tensor(out)[:, None])[:, 0]
    torch.testing.assert_close(got, want, atol=1e-3, rtol=0)
    assert (got[k:] - want_old[k:]).abs().max() > 1e-2  # the perturbation is visible: the check above can fail


def test_cancelling_async_training_leaves_no_tasks_or_threads(tmp_path):
    """Guards shutdown: cancelling training mid-run (Ctrl-C, a failed peer) must cancel every in-flight group,
    stop the engine thread and leave no asyncio task behind (a leak would hang the process at exit)."""
    cfg = _cfg(tmp_path, "rollout.mode=async", "rollout.max_staleness=2", "trainer.steps=50")
    before = set(threading.enumerate())

    async def main():
        task = asyncio.create_task(_train(cfg, resume=None, init_from=None, console=None, strategy=Single()))
        metrics = tmp_path / "run" / "metrics.jsonl"
        for _ in range(1200):
            if metrics.is_file() and metrics.read_text().strip():
                break
            await asyncio.sleep(0.05)
        assert metrics.is_file(), "training never finished a step"
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        assert not others, others

    asyncio.run(main())
    left = [t for t in threading.enumerate() if t not in before and t.is_alive()]
    assert not left, left


def test_groups_beyond_the_hard_bound_are_dropped_and_counted(tmp_path):
    """Guards rollout.drop_staleness: a group whose oldest token is further behind than the hard bound must
    not reach the update, and the drop must be counted (never silent)."""
    cfg = _cfg(tmp_path, "rollout.mode=async", "rollout.max_staleness=1", "rollout.drop_staleness=1")

    def group(version, reward):
        seg = Segment(token_ids=[1, 2, 3], loss_mask=[0, 1, 1], behaviour_logprobs=[0.0, -1.0, -1.0],
                      versions=[-1, version, version + 1])
        return [Trajectory(id=f"{version}{i}", group_id=str(version), env_id="e", task_id=str(version),
                           segments=[seg], reward=float(i % 2 == reward)) for i in range(4)]

    async def go():
        p = RolloutPipeline(cfg, None, None, load_tokenizer("tiny"), start_step=0, end_step=4)
        fresh, stale = group(2, 0), group(1, 1)
        chosen = [_Finished(0, 2, SlotRollout(fresh, fresh, [1])), _Finished(1, 1, SlotRollout(stale, stale, [2]))]
        return p._batch(chosen, version=3, step=0)

    batch = asyncio.run(go())
    assert batch.metrics["pipeline/dropped_stale_groups"] == 1
    assert {t.group_id for t in batch.trajectories} == {"2"} and len(batch.all_trajectories) == 8
    assert batch.metrics["staleness/hist_0"] == 0.5 and batch.metrics["staleness/hist_1"] == 0.5


@pytest.mark.slow
def test_one_step_off_through_sglang_client_updates_weights_in_flight(tmp_path):
    """Guards the SGLang path of in-flight updates: /pause_generation retract → /update_weights_from_disk →
    /continue_generation while the next step's groups are generating. A lost update would leave tokens more
    than one version behind; a wrong label would put stale tokens in bucket 0 and blow up its floor."""
    from agentrl.engine.serve import spawn_server

    proc, url = spawn_server("tiny")
    try:
        result = train(_cfg(tmp_path, "rollout.mode=one_step_off", "trainer.steps=3", "rollout.engine=sglang",
                            f"rollout.urls=[{url}]"))
    finally:
        proc.kill()
        proc.wait()
    rows = _rows(result)
    assert [r["trainer/version"] for r in rows] == [1, 2, 3]
    assert all(r["staleness/max"] <= 1 for r in rows) and rows[-1]["staleness/sample_max"] == 1
    for r in rows:
        if r.get("mismatch/staleness_0/token_frac", 0) > 0:
            assert r["mismatch/staleness_0/logprob_abs_diff_max"] < 1e-3, r


def test_in_flight_sync_labels_every_token_with_the_weights_that_produced_it(tmp_path):
    """Guards the version-label race (staleness-0 tokens far off their recompute under load).
    Root cause: sync_in_flight paused in_place, so a generation that straddled the update continued on KV cache
    the old weights had computed while its tokens were labelled with the new version. The race only needed an
    update to land mid-generation (likelier on a loaded machine); here it is forced: the engine's worker stops
    inside its 6th forward until the pause message is queued, so the update lands after exactly 6 tokens. Every
    token labelled v must then equal a full recompute with weights v (retract: re-prefill after resume)."""
    from agentrl.engine.serve import start_server
    from agentrl.engine.sglang_client import SGLangClient

    tok = load_tokenizer("tiny")
    old = load_model("tiny").eval()
    new = load_model("tiny").eval()
    torch.manual_seed(0)
    with torch.no_grad():
        for p in new.parameters():
            p.add_(0.05 * torch.randn_like(p))
    new.save_pretrained(tmp_path / "w1", safe_serialization=True)
    prompt = tok("hello there")["input_ids"]
    engine = EmbeddedEngine(load_model("tiny"), tok, seed=0, max_batch_size=1)
    engine.eos_token_ids = frozenset()  # never stop early: the generation must outlive the update
    pause_queued, calls = threading.Event(), [0]

    put = engine._inbox.put

    def put_and_signal(item, *args, **kwargs):  # the worker reads this queue: signal once the pause is in it
        put(item, *args, **kwargs)
        if type(item).__name__ == "_Pause":  # the engine inbox's pause message
            pause_queued.set()

    def hold_sixth_forward(module, args, kwargs):  # runs on the engine's worker thread
        calls[0] += 1
        if calls[0] == 6:
            assert pause_queued.wait(60), "the pause never arrived"

    engine._inbox.put = put_and_signal
    engine.model.register_forward_pre_hook(hold_sixth_forward, with_kwargs=True)
    pipeline = RolloutPipeline(_cfg(tmp_path), None, None, tok, start_step=0, end_step=1, timeout_s=60)

    async def go():
        runner, url = await start_server(engine)
        client = SGLangClient(url)
        pipeline.engine = client
        try:
            task = asyncio.create_task(client.generate(prompt, SamplingParams(max_new_tokens=30, seed=1)))
            deadline = time.monotonic() + 120
            while calls[0] < 6:  # yields to the server until the worker sits in its 6th forward (no timing)
                assert time.monotonic() < deadline, "the engine never reached its 6th forward"
                await asyncio.sleep(0.01)
            await pipeline.sync_in_flight(lambda: client.update_weights(path=str(tmp_path / "w1"), version=1))
            return await asyncio.wait_for(task, 120)
        finally:
            await client.close()
            await runner.cleanup()
            await engine.close()

    gen = asyncio.run(go())
    assert gen.versions == [0] * 6 + [1] * 24
    out = gen.output_ids
    with torch.no_grad():
        ids = torch.tensor([prompt + out])
        want = [torch.log_softmax(m(ids).logits[0, len(prompt) - 1 : -1].float(), -1)
                .gather(1, torch.tensor(out)[:, None])[:, 0] for m in (old, new)]
    got = torch.tensor(gen.logprobs)
    torch.testing.assert_close(got[:6], want[0][:6], atol=1e-3, rtol=0)
    torch.testing.assert_close(got[6:], want[1][6:], atol=1e-3, rtol=0)


@pytest.mark.slow
def test_replayed_tasks_are_drawn_again_exactly_after_a_resume(tmp_path):
    """Guards the task sampler's checkpointed state (trainer.task_sampler): a run resumed from step 2 replays the
    same mixed tasks at step 3 as the uninterrupted run did, and the signal metrics reach metrics.jsonl."""
    cfg = _cfg(tmp_path, "rollout.replay_fraction=0.67", "rollout.max_batch_size=1", "trainer.checkpoint_every=1",
               "rollout.dynamic_sampling_on=success")
    whole = train(cfg)
    rows = _rows(whole)
    for key in ("rollout/mixed_success_share", "rollout/flat_success_adv_share", "rollout/distinct_tasks_seen",
                "rollout/replayed_groups"):
        assert all(key in r for r in rows), key
    assert [r["rollout/distinct_tasks_seen"] for r in rows][0] == 3

    def step_tasks(step):
        trajs = [json.loads(x) for x in (whole.run_dir / "trajectories.jsonl").read_text().splitlines()]
        return sorted(t["task_id"] for t in trajs if t["metrics"]["train/step"] == step)

    assert any(r["rollout/replayed_groups"] > 0 for r in rows[1:]), "nothing replayed: the test would prove nothing"
    before, replays = step_tasks(3), rows[2]["rollout/replayed_groups"]
    state = json.loads((whole.run_dir / "checkpoints" / "step_000002" / "state.json").read_text())
    assert "task_sampler" in state
    again = train(cfg, resume=str(whole.run_dir / "checkpoints" / "step_000002"))
    assert step_tasks(3) == before and _rows(again)[-1]["rollout/replayed_groups"] == replays
