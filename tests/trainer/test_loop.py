"""The training loop end to end on the tiny model: a full step, the update's invariances, failure masking,
resume. Each test names the bug it guards."""

from __future__ import annotations

import asyncio
import copy
import json
import math

import pytest
import torch

import agentrl
from agentrl.config import load_config
from agentrl.engine.embedded import EmbeddedEngine
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.batch import build_minibatch
from agentrl.trainer.checkpoint import list_checkpoints
from agentrl.trainer.collect import trainable
from agentrl.trainer.loop import train
from agentrl.trainer.pipeline import collect_step
from agentrl.trainer.sft import expert_trajectories, sft_step
from agentrl.trainer.update import train_on_minibatch, update_config_from
from agentrl.types import Trajectory, user


class ParityEnv(agentrl.AgentEnv):
    """One turn: reward 1 if the reply has an even number of characters. The tiny random model gets both
    outcomes, so groups carry reward variance and the GRPO update has signal."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        return [], float(len(action) % 2 == 0), True, False, {}

    def expert_action(self):
        return "ok"


class FlakyEnv(ParityEnv):
    """Crashes on every other task: those episodes must end as env_error and be masked."""

    def step(self, action):
        if int(self.np_random.integers(2)):
            raise RuntimeError("simulated env crash")
        return super().step(action)


class OutageEnv(ParityEnv):
    """Every step fails (an outage outside the agent's control): every episode ends as env_error and is masked."""

    def step(self, action):
        raise ConnectionError("simulated outage: tool service unreachable")


agentrl.register("test_parity", ParityEnv, description="test env with reward variance")
agentrl.register("test_outage", OutageEnv, description="test env whose every step fails")
agentrl.register("test_flaky", FlakyEnv, description="test env that crashes on some tasks")


def _cfg(tmp_path, env="test_parity", *overrides):
    return load_config(
        None,
        overrides=[
            f"env.name={env}", "model.name=tiny", "rollout.tasks_per_step=3", "rollout.group_size=4",
            "rollout.max_new_tokens=12", "rollout.max_context_tokens=256", "rollout.max_turns=2",
            "trainer.steps=1", f"trainer.run_dir={tmp_path / 'run'}", "trainer.tensorboard=false",
            "trainer.lr=1e-3", *overrides,
        ],
    )


def _rollout(cfg, step=0):
    """One step's batch from the real embedded engine with the tiny model."""
    tok = load_tokenizer("tiny")

    async def go():
        engine = EmbeddedEngine(load_model("tiny"), tok, seed=0)
        try:
            return await collect_step(cfg, lambda: agentrl.make(cfg.env.name), engine, tok, step)
        finally:
            await engine.close()

    return asyncio.run(go())


@pytest.mark.slow
def test_one_training_step_logs_the_catalogue_and_engine_matches_trainer(tmp_path):
    """Guards the whole chain: rollout → advantages → recompute → loss → step → metrics → checkpoint. The
    behaviour logprobs from the engine must equal the trainer's recompute (same weights: bucket 0 mismatch ≈ 0);
    a template or alignment bug shows up here as a large logprob gap."""
    cfg = _cfg(tmp_path)
    result = train(cfg)
    rec = json.loads(result.metrics.read_text().splitlines()[-1])
    assert math.isfinite(rec["actor/loss"]) and math.isfinite(rec["actor/grad_norm"])
    for key in ("actor/pg_clipfrac", "actor/entropy", "actor/ppo_kl", "mismatch/tis_mean", "mismatch/kl_k3",
                "mismatch/staleness_0/token_frac", "staleness/mean", "rollout/reward_mean", "termination/done",
                "timing/rollout_s", "timing/update_s", "rollout/zero_std_frac"):
        assert key in rec, key
    assert rec["mismatch/logprob_abs_diff_max"] < 1e-3, rec["mismatch/logprob_abs_diff_max"]
    assert rec["staleness/max"] == 0
    assert rec["trainer/version"] == 1
    (ckpt,) = list_checkpoints(result.run_dir)
    reloaded = load_model(ckpt / "model")
    assert reloaded.config.vocab_size == load_model("tiny").config.vocab_size
    assert result.plot is not None and result.plot.stat().st_size > 0
    lines = (result.run_dir / "trajectories.jsonl").read_text().splitlines()
    assert len(lines) >= 12
    for line in lines:
        assert json.loads(Trajectory.from_json(line).to_json()) == json.loads(line)


@pytest.mark.slow
def test_one_training_step_on_calc_with_warm_start(tmp_path):
    """calc through the CLI-equivalent path: expert warm start, then one GRPO step (dynamic sampling off so the
    update runs even when the tiny model scores 0 everywhere)."""
    cfg = _cfg(tmp_path, "calc", "sft.episodes=4", "sft.epochs=1", "rollout.dynamic_sampling=false",
               "rollout.max_turns=3", "rollout.max_context_tokens=1024", "rollout.max_new_tokens=64")
    result = train(cfg)
    rec = json.loads(result.metrics.read_text().splitlines()[-1])
    assert math.isfinite(rec["actor/loss"])
    sft = [json.loads(x) for x in (result.run_dir / "sft_metrics.jsonl").read_text().splitlines()]
    assert sft and all(math.isfinite(x["sft/loss"]) for x in sft)


def test_a_warm_start_only_run_says_where_its_sft_metrics_are_and_plots_nothing(tmp_path):
    """trainer.steps=0 (what bench/learn_swe.py runs for its warm start): no step metrics, so no plot, and no
    'plot skipped: ... metrics.jsonl does not exist' warning."""
    import io

    from rich.console import Console

    out = io.StringIO()
    cfg = _cfg(tmp_path, "calc", "sft.episodes=2", "sft.epochs=1", "trainer.steps=0",
               "rollout.max_context_tokens=1024", "rollout.max_new_tokens=64", "rollout.max_turns=3")
    result = train(cfg, console=Console(file=out, width=300))
    text = out.getvalue()
    assert result.plot is None and result.checkpoint is not None and "plot skipped" not in text
    assert f"metrics {result.run_dir / 'sft_metrics.jsonl'}" in text


@pytest.mark.slow
def test_microbatch_split_does_not_change_the_update(tmp_path):
    """Guards the global token denominator: per-micro-batch normalization would change the update when the
    token budget changes (the weights after one step must agree within 1e-6)."""
    cfg = _cfg(tmp_path, "test_parity", "rollout.dynamic_sampling=false")
    batch = _rollout(cfg)
    assert len(batch.trajectories) == 12
    assert_split_invariant(build_minibatch(batch.trajectories, batch.advantages), torch.tensor(batch.advantages),
                           lambda budget: _cfg(tmp_path, "test_parity", f"trainer.micro_batch_tokens={budget}"))


def assert_split_invariant(mb, adv, cfg_for_budget) -> None:
    """One SGD step on `mb` with micro-batches of 64 tokens and with one micro-batch must give the same weights
    (within 1e-6): the loss's denominators span the mini-batch, not the micro-batch."""
    base = load_model("tiny")
    results = []
    for budget in (64, 10_000):
        model = copy.deepcopy(base)
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        m = train_on_minibatch(model, opt, mb, update_config_from(cfg_for_budget(budget)), current_version=0,
                               traj_advantages=adv)
        results.append((m["trainer/micro_batches"], model.state_dict()))
    assert results[0][0] > 1 and results[1][0] == 1
    for (name, a), b in zip(results[0][1].items(), results[1][1].values(), strict=True):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0, msg=name)


@pytest.mark.slow
def test_grpo_steps_move_logprobs_along_the_advantage(tmp_path):
    """On a fixed batch, repeated updates must raise the logprob of positive-advantage actions and lower
    the negative ones (a sign error in the loss or advantages flips this)."""
    cfg = _cfg(tmp_path, "test_parity", "rollout.dynamic_sampling=false")
    batch = _rollout(cfg)
    mb = build_minibatch(batch.trajectories, batch.advantages)
    adv = torch.tensor(batch.advantages)
    assert (adv > 0).any() and (adv < 0).any()
    model = load_model("tiny")
    ucfg = update_config_from(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)

    def mean_lp(sign):
        from agentrl.trainer.batch import microbatches
        from agentrl.trainer.update import recompute_logprobs

        lp = recompute_logprobs(model, mb, microbatches(mb, 4096), ucfg)
        sel = (mb.loss_mask > 0) & (torch.sign(mb.advantages) == sign)
        return float(lp[sel].mean())

    before = (mean_lp(1), mean_lp(-1))
    for version in range(4):
        train_on_minibatch(model, opt, mb, ucfg, current_version=version, traj_advantages=adv)
    after = (mean_lp(1), mean_lp(-1))
    assert after[0] > before[0] + 0.05, (before, after)
    assert after[1] < before[1] - 0.05, (before, after)


@pytest.mark.slow
def test_sft_loss_decreases_on_a_fixed_batch(tmp_path):
    cfg = _cfg(tmp_path, "calc", "rollout.max_turns=4", "rollout.max_new_tokens=64", "rollout.max_context_tokens=1024")
    tok = load_tokenizer("tiny")
    trajs = asyncio.run(expert_trajectories(cfg, lambda: agentrl.make("calc"), tok, 4))
    assert len(trajs) == 4 and all(t.reward == 1.0 for t in trajs)
    model = load_model("tiny").train()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    losses = [sft_step(model, opt, trajs, micro_batch_tokens=4096, chunk=512, grad_clip=1.0)["sft/loss"] for _ in range(6)]
    assert losses[-1] < losses[0] - 0.5, losses


def test_expert_episodes_cut_by_the_budget_are_dropped_with_a_warning(tmp_path):
    cfg = _cfg(tmp_path, "calc", "rollout.max_turns=4", "rollout.max_new_tokens=40", "env.kwargs.difficulty=2",
               "rollout.max_context_tokens=1024")
    warnings = []
    trajs = asyncio.run(expert_trajectories(cfg, lambda: agentrl.make("calc", difficulty=2), load_tokenizer("tiny"),
                                            4, warn=warnings.append))
    assert trajs == [] and len(warnings) == 1 and "4 by rollout.max_new_tokens=40" in warnings[0], warnings
    assert "max_context_tokens" not in warnings[0]
    # a ~300-token prompt leaves ~30 tokens of room: the first action is cut by the context, not the turn budget
    cfg = _cfg(tmp_path, "calc", "rollout.max_turns=4", "rollout.max_new_tokens=64", "env.kwargs.difficulty=2",
               "rollout.max_context_tokens=330")
    warnings.clear()
    trajs = asyncio.run(expert_trajectories(cfg, lambda: agentrl.make("calc", difficulty=2), load_tokenizer("tiny"),
                                            4, warn=warnings.append))
    assert trajs == [] and "4 by the room left in rollout.max_context_tokens=330" in warnings[0], warnings


def test_infrastructure_failures_never_reach_the_batch(tmp_path):
    """Guards the failure policy: a crashing env must be masked (never trained as reward 0)."""
    cfg = _cfg(tmp_path, "test_flaky", "rollout.dynamic_sampling=false", "rollout.tasks_per_step=4")
    batch = _rollout(cfg)
    crashed = [t for t in batch.all_trajectories if not trainable(t)]
    assert crashed, "the flaky env never crashed; the test would prove nothing"
    assert all(t.termination.value == "env_error" for t in crashed)
    assert all(trainable(t) for t in batch.trajectories)
    assert batch.metrics["rollout/masked_episodes"] == len(crashed)
    assert len(batch.advantages) == len(batch.trajectories)


def test_a_run_of_masked_episodes_stops_loudly_and_skipped_steps_say_why(tmp_path):
    """Guards against a broken run that "trains": when every episode is masked, each step must print as skipped
    with the reason (not `loss +0.0000 entropy 0.000`), and after trainer.masked_window steps the run must abort
    with the cause and the key (RunAborted is an AgentRLError: the CLI prints it as one line and exits 2)."""
    from rich.console import Console

    from agentrl.trainer.abort import RunAborted

    console = Console(record=True, width=300)
    cfg = _cfg(tmp_path, "test_outage", "trainer.steps=4", "trainer.masked_window=2",
               "rollout.dynamic_sampling=false")
    with pytest.raises(RunAborted) as err:
        train(cfg, console=console)
    msg = str(err.value)
    assert msg.startswith("step 2: 24 of 24 episodes of the last 2 steps were masked"), msg
    assert "env_error: ConnectionError: simulated outage" in msg and "trainer.max_masked_frac" in msg, msg
    out = console.export_text()
    assert out.count("SKIPPED (no trainable group: 12 of 12 episodes masked") == 2, out
    assert "loss +0.0000" not in out
    rows = [json.loads(x) for x in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert [r["trainer/skipped_steps"] for r in rows] == [1.0, 1.0]
    assert list_checkpoints(tmp_path / "run") == []  # stopped at step 2 of 4: no final checkpoint of nothing

    from agentrl.trainer.plot import plot_run

    assert plot_run(tmp_path / "run").stat().st_size > 0  # skipped steps are shaded, not a crash


def test_the_masked_share_is_judged_over_the_window():
    """Guards the abort rule itself: masked ≤ max_masked_frac over the window goes on; above it stops, naming
    the most common detail; a run shorter than the window is judged at its last step."""
    from agentrl.trainer.abort import MaskedEpisodeGuard, RunAborted
    from agentrl.types import TerminationReason as TR

    def episodes(masked, ok, detail="boom"):
        return ([Trajectory(id="m", group_id="g", env_id="e", task_id="t", termination=TR.ENV_ERROR,
                            termination_detail=detail)] * masked
                + [Trajectory(id="o", group_id="g", env_id="e", task_id="t")] * ok)

    guard = MaskedEpisodeGuard(0.5, 2, last_step=9)
    guard.observe(0, episodes(4, 0))  # window not full yet
    guard.observe(1, episodes(0, 4))  # 4 of 8: not above 0.5
    with pytest.raises(RunAborted, match=r"step 3: 5 of 9 .* most common \(3×\): env_error: late"):
        guard.observe(2, episodes(3, 0, "late") + episodes(2, 0))  # steps 1-2: 5 of 9 masked
    short = MaskedEpisodeGuard(0.5, 3, last_step=0)
    with pytest.raises(RunAborted, match="1 of 1 episodes of the last 1 step were masked"):
        short.observe(0, episodes(1, 0))
    MaskedEpisodeGuard(1.0, 1, last_step=0).observe(0, episodes(5, 0))  # 1 never aborts


@pytest.mark.slow
@pytest.mark.parametrize("kl_coef", [0.0, 0.5], ids=["no_kl", "kl"])
def test_resume_continues_exactly(tmp_path, kl_coef):
    """Guards resume exactness: after resuming from step 1, step 2 must sample the same tasks and the same
    tokens as the uninterrupted run, and end with the same weights. One request per engine batch: CPU kernels
    are not batch-invariant, and the tiny model's near-flat distribution turns that noise into ~1e-3 flipped
    samples whenever the two runs happen to batch requests differently (a timing accident, not resume).
    With a KL term, π_ref must be the weights the run started from, not the resumed checkpoint's (the resumed
    step reported ref_kl 0 and the weights ended 1.7e-3 apart)."""
    exact = ("trainer.steps=2", "trainer.checkpoint_every=1", "rollout.max_batch_size=1", f"algo.kl_coef={kl_coef}")
    full = train(_cfg(tmp_path / "a", "test_parity", *exact))
    steps = [json.loads(x) for x in (full.run_dir / "trajectories.jsonl").read_text().splitlines()]
    ckpts = list_checkpoints(full.run_dir)
    assert [c.name for c in ckpts] == ["step_000001", "step_000002"]

    # Resume a copy of the run from its step-1 checkpoint.
    import shutil

    resumed_dir = tmp_path / "b" / "run"
    shutil.copytree(full.run_dir, resumed_dir)
    shutil.rmtree(resumed_dir / "checkpoints" / "step_000002")
    # the crash came while step 2's rows were written (after its logs, before its checkpoint): a torn last line
    with open(resumed_dir / "trajectories.jsonl", "a") as f:
        f.write('{"id": "torn')
    again = train(_cfg(tmp_path / "b", "test_parity", *exact), resume=str(resumed_dir))
    assert again.run_dir == resumed_dir
    resumed = [json.loads(x) for x in (resumed_dir / "trajectories.jsonl").read_text().splitlines()]
    # step 2's rows of the first attempt were dropped on resume, not kept beside the new ones
    assert sorted(r["metrics"]["train/step"] for r in resumed) == sorted(r["metrics"]["train/step"] for r in steps)
    assert [json.loads(x)["step"] for x in (resumed_dir / "metrics.jsonl").read_text().splitlines()] == [1, 2]

    def tasks(rows, step):
        return sorted(r["task_id"] for r in rows if r["metrics"]["train/step"] == step)

    def samples(rows, step):
        return sorted((r["task_id"], r["segments"][0]["token_ids"]) for r in rows if r["metrics"]["train/step"] == step)

    assert tasks(resumed, 2) == tasks(steps, 2)
    assert tasks(resumed, 2) != tasks(steps, 1)
    assert samples(resumed, 2) == samples(steps, 2)
    state = json.loads((resumed_dir / "checkpoints" / "step_000002" / "state.json").read_text())
    assert state["step"] == 2 and state["version"] == 2
    if kl_coef:
        rows = [[json.loads(x) for x in (d / "metrics.jsonl").read_text().splitlines()] for d in (full.run_dir,
                                                                                                   resumed_dir)]
        assert rows[1][1]["actor/ref_kl"] > 0
        assert rows[1][1]["actor/ref_kl"] == pytest.approx(rows[0][1]["actor/ref_kl"], rel=1e-4, abs=1e-9)
    a = load_model(full.run_dir / "checkpoints" / "step_000002" / "model").state_dict()
    b = load_model(resumed_dir / "checkpoints" / "step_000002" / "model").state_dict()
    for name in a:
        torch.testing.assert_close(a[name], b[name], atol=1e-6, rtol=0, msg=name)
    assert state["reference"] == "tiny"  # π_ref: the model the run started from, recorded for the next resume


def test_pi_ref_comes_from_the_runs_start_and_a_recorded_one_that_is_gone_is_refused(tmp_path):
    """π_ref's source (loop.reference_source): a fresh run's model, as an absolute path where it is a folder (the
    run may be resumed from another working directory); what a checkpoint recorded on resume; one line when the
    recorded folder is gone; a checkpoint without a record anchors to its own weights, as before it existed."""
    from agentrl.errors import ConfigError
    from agentrl.trainer.loop import reference_source

    start = tmp_path / "sft" / "model"
    start.mkdir(parents=True)
    assert reference_source("tiny", None) == "tiny"
    assert reference_source(start, None) == str(start.resolve())
    ckpt = tmp_path / "step_000001"
    ckpt.mkdir()
    (ckpt / "state.json").write_text(json.dumps({"step": 1, "reference": str(start)}))
    assert reference_source(ckpt / "model", ckpt) == str(start)
    start.rmdir()
    with pytest.raises(ConfigError, match=f"loads from {start}, as .*state.json records, and it is not there"):
        reference_source(ckpt / "model", ckpt)
    (ckpt / "state.json").write_text(json.dumps({"step": 1}))
    assert reference_source(ckpt / "model", ckpt) == str(ckpt / "model")


@pytest.mark.slow
def test_training_through_sglang_client_syncs_weights_via_disk(tmp_path):
    """Guards the GPU-scale path on CPU: rollouts from an SGLang-compatible server over real HTTP (loopback),
    weights pushed back through /update_weights_from_disk. If the sync failed, step 2's behaviour logprobs
    would come from stale weights and the same-version mismatch would be large."""
    from agentrl.engine.serve import spawn_server

    proc, url = spawn_server("tiny")
    try:
        cfg = _cfg(tmp_path, "test_parity", "trainer.steps=2", "rollout.engine=sglang", f"rollout.urls=[{url}]",
                   "rollout.dynamic_sampling=false")
        result = train(cfg)
    finally:
        proc.kill()
        proc.wait()
    rows = [json.loads(x) for x in result.metrics.read_text().splitlines()]
    assert [r["trainer/version"] for r in rows] == [1, 2]
    assert rows[1]["actor/grad_norm"] > 0
    assert rows[1]["mismatch/logprob_abs_diff_max"] < 1e-3, rows[1]["mismatch/logprob_abs_diff_max"]
    assert rows[1]["staleness/max"] == 0
    assert (result.run_dir / "weights_sync" / "config.json").is_file()


@pytest.mark.slow
def test_a_spent_time_budget_stops_the_run_at_a_checkpoint_that_resumes(tmp_path):
    """Guards trainer.max_train_s: the run stops after the step that spends it (checkpointed although it is not a
    checkpoint step, so no work is lost), says so, and --resume with the budget lifted trains the remaining steps."""
    cfg = _cfg(tmp_path, "test_parity", "trainer.steps=3", "trainer.checkpoint_every=0", "trainer.max_train_s=0.001")
    out = train(cfg)
    assert [c.name for c in list_checkpoints(out.run_dir)] == ["step_000001"]
    assert out.checkpoint.name == "step_000001"
    logged = [json.loads(x)["step"] for x in out.metrics.read_text().splitlines()]
    assert logged == [1]
    from agentrl.trainer.resume import resume_config

    again = train(resume_config(out.run_dir, ["trainer.max_train_s=null"]), resume=str(out.run_dir))
    assert again.checkpoint.name == "step_000003"
    assert [json.loads(x)["step"] for x in again.metrics.read_text().splitlines()] == [1, 2, 3]


def test_an_overlapped_mode_without_room_to_run_ahead_is_pointed_out():
    """rollout.concurrency ≤ one step's episodes leaves one_step_off/async nothing to overlap with (the async
    benchmark's 1.4× came with the default 16 = one step of 4 × 4); the start-up line says so, sync says nothing."""
    from agentrl.trainer.loop import budget_line

    def line(*o):
        return budget_line(load_config(None, overrides=["rollout.tasks_per_step=4", "rollout.group_size=4", *o]))

    assert "cannot run ahead" in line("rollout.mode=async", "rollout.max_staleness=2")
    assert "up to 48 would overlap" in line("rollout.mode=async", "rollout.max_staleness=2")
    assert "up to 32 would overlap" in line("rollout.mode=one_step_off")
    assert "cannot run ahead" not in line("rollout.mode=async", "rollout.concurrency=48")
    assert "cannot run ahead" not in line("rollout.mode=sync")


def test_the_start_up_estimate_scales_the_presets_measured_pace():
    """Guards a headline run that starts with no word of its length (issue 55 item 9: the swe_lite preset is hours on
    2 cores): a measured preset gets one estimate line that grows with its steps and warm start, counts only the
    steps left on resume, and says nothing for the tiny model, a GPU or an env with no measured pace."""
    from agentrl.trainer.pace import PACES, duration, estimate_line

    def line(env, *o, steps_left=None, warm_start=True):
        cfg = load_config(env, overrides=list(o))
        return estimate_line(cfg, steps_left=cfg.trainer.steps if steps_left is None else steps_left,
                             warm_start=warm_start)

    cfg = load_config("swe_lite")
    pace = PACES["swe_lite"]
    warm = cfg.sft.episodes * cfg.sft.epochs * pace.demonstration_s
    step = cfg.rollout.tasks_per_step * cfg.rollout.group_size * pace.trajectory_s
    text = line("swe_lite")
    assert text.startswith(f"estimate: about {duration(warm + cfg.trainer.steps * step)} on a 2-core CPU")
    assert f"warm start ~{duration(warm)}" in text and f"~{duration(step)} a step" in text
    assert f"about {duration(warm + 2 * step)} " in line("swe_lite", "trainer.steps=2")
    assert "warm start" not in line("swe_lite", warm_start=False)  # resumed, or --init-from
    assert f"about {duration(3 * step)} " in line("swe_lite", steps_left=3, warm_start=False)
    assert line("calc") is not None
    assert line("calc", "model.name=tiny") is None and line("calc", "model.device=cuda") is None
    assert line("swe_real") is None  # no measured pace
    assert [duration(s) for s in (4, 44, 300, 5400, 9000, 7200)] == ["10 s", "40 s", "5 min", "1 h 30 min",
                                                                     "2 h 30 min", "2 h"]
