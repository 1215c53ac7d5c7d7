"""The task sampler (agentrl.trainer.task_sampler) and the success-based dynamic sampling of collect.py: replay and
uniform shares, determinism under a seed, exact state across a checkpoint, the warm-start exclusion, and the
signal metrics a step logs. Pure functions and fake trajectories: no model, no Docker."""

from __future__ import annotations

import json

import pytest

from agentrl.config import load_config
from agentrl.rollout.seeds import member_sampling_seed, task_seed
from agentrl.trainer.collect import assemble_batch, finish_group, outcome
from agentrl.trainer.task_sampler import GroupOutcome, TaskPoolExhausted, TaskSampler, replay_count
from agentrl.types import TerminationReason, Trajectory


def _mixed(step_tasks: list[str], base: int = 0) -> list[GroupOutcome]:
    return [GroupOutcome(task_id=t, seed=1000 + i + base, mixed=True) for i, t in enumerate(step_tasks)]


def _sampler(**kw) -> TaskSampler:
    args = {"seed": 7, "slots": 4, "eta": 0, "replay_fraction": 0.5, "replay_limit": 2} | kw
    return TaskSampler(**args)


def test_replay_count_has_the_expected_share_and_leaves_a_uniform_slot():
    assert [replay_count(0.5, 4, u) for u in (0.0, 0.99)] == [2, 2]
    assert [replay_count(0.5, 1, u) for u in (0.2, 0.7)] == [0, 0]  # B = 1: at most B − 1 replays
    assert [replay_count(0.3, 4, u) for u in (0.1, 0.3)] == [2, 1]  # 1.2 rounds up with odds 0.2
    assert replay_count(0.0, 4, 0.0) == 0


def test_half_the_slots_replay_mixed_tasks_and_the_rest_are_uniform():
    s = _sampler()
    assert s.draw(0) == {}  # nothing observed yet: every slot uniform
    assert s.first(0, 3).seed == task_seed(7, 0, 0, 3) and not s.first(0, 3).replay
    s.observe(0, _mixed(["a", "b", "c"]) + [GroupOutcome("d", 5, mixed=False)])
    draws = s.draw(1)
    assert sorted(draws) == [0, 1]  # 0.5 · 4 slots
    assert {d.task_id for d in draws.values()} <= {"a", "b", "c"}
    for d in draws.values():
        assert d.replay and d.salt == 1 and d.seed == {"a": 1000, "b": 1001, "c": 1002}[d.task_id]
    assert s.first(1, 2).seed == task_seed(7, 1, 0, 2)  # the other half: uniform seeds, as without replay
    assert s.first(1, 0) == draws[0]
    assert s.draw(1) == draws  # asked twice, the same answer


def test_uniform_share_only_when_replay_is_off_or_nothing_was_mixed():
    off = _sampler(replay_fraction=0.0)
    off.observe(0, _mixed(["a", "b"]))
    assert off.draw(1) == {}
    flat = _sampler()
    flat.observe(0, [GroupOutcome("a", 1, mixed=False), GroupOutcome("b", 2, mixed=None)])
    assert flat.draw(1) == {}


def test_a_task_is_replayed_at_most_replay_limit_times_and_leaves_when_its_success_stops_varying():
    s = _sampler(slots=2, replay_limit=2)  # one replay slot a step
    s.observe(0, _mixed(["a"]))
    assert s.draw(1)[0].task_id == "a"
    s.observe(1, [GroupOutcome("a", 1000, mixed=True, replay=True)])
    assert s.draw(2)[0].salt == 2  # replayed again, with a new salt (fresh sampling seeds)
    s.observe(2, [GroupOutcome("a", 1000, mixed=True, replay=True)])
    assert s.draw(3) == {}  # the cap: two replays over the run
    t = _sampler(slots=2)
    t.observe(0, _mixed(["a"]))
    t.draw(1)
    t.observe(1, [GroupOutcome("a", 1000, mixed=False, replay=True)])
    assert t.draw(2) == {} and t.pool == {}


def test_draws_see_only_steps_the_admission_bound_has_consumed():
    """With η = 1 (one_step_off) step s is drawn when step s − 2 is consumed: the outcome of s − 1 must not count,
    and a task whose replay is still running is not drawn again."""
    s = _sampler(eta=1, slots=2)
    s.observe(0, _mixed(["a"]))
    s.observe(1, _mixed(["b"], base=10))
    assert s.draw(1) == {}  # sees steps ≤ −1
    assert s.draw(2)[0].task_id == "a"  # sees step 0 only
    assert s.draw(3)[0].task_id == "b"  # "a" is in flight (drawn for step 2, not folded yet)


def test_the_same_seed_draws_the_same_tasks_and_another_seed_may_not():
    def run(seed):
        s = _sampler(seed=seed, slots=8)
        out = []
        for step in range(6):
            out.append({j: (d.task_id, d.seed, d.salt) for j, d in s.draw(step).items()})
            s.observe(step, _mixed([f"t{step}_{k}" for k in range(8)], base=step * 100))
        return out

    assert run(3) == run(3)
    assert any(run(3)[k] != run(4)[k] for k in range(6))


def test_state_survives_a_checkpoint_exactly():
    """A sampler rebuilt from state.json mid-run draws exactly what the uninterrupted one draws (one_step_off)."""
    def drive(s, steps):
        out = []
        for step in steps:
            out.append(s.draw(step + 1))  # admission of the next step happens before this step is consumed
            s.observe(step, _mixed([f"t{step}_{k}" for k in range(3)], base=step * 10))
        return out

    whole = _sampler(eta=1)
    whole.draw(0)
    full = drive(whole, range(8))
    first = _sampler(eta=1)
    first.draw(0)
    head = drive(first, range(4))
    state = json.loads(json.dumps(first.state_dict()))
    resumed = _sampler(eta=1, state=state)
    assert resumed.draw(4) == first.draw(4)  # the resumed pipeline draws the step it starts at again
    assert head + drive(resumed, range(4, 8)) == full
    assert resumed.metrics()["rollout/distinct_tasks_seen"] == 24.0


def test_excluded_tasks_are_never_drawn_nor_replayed():
    def task_of(seed):
        return f"task{seed % 3}"

    s = _sampler(excluded={"task0"}, task_of=task_of)
    plain = _sampler()
    for step in range(20):
        for j in range(4):
            for r in range(3):
                seed = s.uniform(step, r, j)
                assert task_of(seed) != "task0"
                if task_of(plain.uniform(step, r, j)) != "task0":
                    assert seed == plain.uniform(step, r, j)  # a draw that missed the excluded tasks is kept
    s.observe(0, [GroupOutcome("task0", 1, mixed=True), GroupOutcome("task1", 2, mixed=True)])
    assert {d.task_id for d in s.draw(1).values()} == {"task1"}
    everything = _sampler(excluded={"task0", "task1", "task2"}, task_of=task_of)
    with pytest.raises(TaskPoolExhausted, match="exclude_warm_start_episodes"):
        everything.uniform(0, 0, 0)
    with pytest.raises(ValueError, match="task_of"):
        _sampler(excluded={"x"})
    with pytest.raises(ValueError, match="replay_fraction"):
        _sampler(replay_fraction=1.0)


def test_a_replay_samples_with_fresh_seeds():
    assert member_sampling_seed(5, 1, 0, 0) == member_sampling_seed(5, 1, 0)
    assert member_sampling_seed(5, 1, 0, 1) != member_sampling_seed(5, 1, 0)
    assert member_sampling_seed(5, 1, 0, 1) != member_sampling_seed(5, 1, 0, 2)


# ---- collect.py: the filter on success, and the metrics a step logs ----

def _traj(gid: str, task: str, *, resolved: bool, format_errors: int = 0, reward: float = 0.0,
          termination=TerminationReason.DONE) -> Trajectory:
    return Trajectory(id=f"{gid}-{task}-{format_errors}-{resolved}", group_id=gid, env_id="x", task_id=task,
                      reward=reward, reward_info={"resolved": resolved}, termination=termination,
                      metrics={"rollout/turns": 3, "rollout/format_errors": format_errors})


def _format_only(gid="g0", task="t0"):  # shaped rewards {0.2, 0.2, 0.2, 0.133}, nobody resolved
    return [_traj(gid, task, resolved=False) for _ in range(3)] + [_traj(gid, task, resolved=False, format_errors=1)]


def _one_fix(gid="g1", task="t1"):
    return [_traj(gid, task, resolved=True, reward=1.0)] + [_traj(gid, task, resolved=False) for _ in range(3)]


def _cfg(on: str):
    return load_config(None, overrides=["algo.format_reward=0.2", f"rollout.dynamic_sampling_on={on}"])


def test_finish_group_drops_format_only_variance_on_success_and_keeps_it_on_reward():
    metrics: dict[str, float] = {}
    assert finish_group(_format_only(), _cfg("reward"), metrics) is not None
    assert finish_group(_format_only(), _cfg("success"), metrics) is None
    assert metrics == {"rollout/zero_std_count_0.0": 1.0}
    assert finish_group(_one_fix(), _cfg("reward"), {}) is not None
    assert finish_group(_one_fix(), _cfg("success"), {}) is not None


def test_the_outcome_a_sampler_learns_from_a_group():
    assert outcome(_one_fix(), 42) == GroupOutcome("t1", 42, mixed=True, replay=False)
    assert outcome(_format_only(), 43, replay=True) == GroupOutcome("t0", 43, mixed=False, replay=True)
    masked = [_traj("g", "t", resolved=True, termination=TerminationReason.SANDBOX_ERROR)] + _one_fix()[1:2]
    assert outcome(masked, 44).mixed is None  # one scored member: success cannot vary


def test_step_metrics_on_a_planted_batch():
    """Trained on reward: the format-only group keeps its advantages {+.5, +.5, +.5, −1.5} (|A| 3.0) beside the
    solved group's {1.5, −.5, −.5, −.5} (3.0): half the |A| mass is in a group whose success does not vary."""
    cfg = _cfg("reward")
    fmt, fix, flat = _format_only(), _one_fix(), [_traj("g2", "t2", resolved=False) for _ in range(4)]
    batch = assemble_batch(cfg, [fmt, fix], fmt + fix + flat, [1, 2, 3], {})
    m = batch.metrics
    assert m["rollout/mixed_success_share"] == pytest.approx(1 / 3)  # over all sampled groups
    assert m["rollout/flat_success_adv_share"] == pytest.approx(0.5, abs=1e-5)
    on_success = assemble_batch(_cfg("success"), [fix], fmt + fix + flat, [1, 2, 3], {})
    assert on_success.metrics["rollout/flat_success_adv_share"] == 0.0


def test_the_dashboard_draws_the_success_signal(tmp_path):
    from agentrl.trainer.plot import SIGNAL, dashboard, panel_series

    rows = [{"step": s, "rollout/mixed_success_share": 0.25 * s, "rollout/flat_success_adv_share": 0.5,
             "rollout/distinct_tasks_seen": 4.0 * s} for s in (1, 2)]
    lines = dict(panel_series(rows))[SIGNAL]
    assert lines["rollout/mixed_success_share"] == ([1, 2], [0.25, 0.5])
    assert lines["rollout/distinct_tasks_seen"] == ([1, 2], [4.0, 8.0])
    dashboard(rows, "t").savefig(tmp_path / "d.png")


def test_excluding_warm_start_tasks_of_an_env_that_cannot_name_them_is_a_config_error():
    from agentrl.errors import ConfigError
    from agentrl.registry import make
    from agentrl.trainer.pipeline import build_sampler

    cfg = load_config("calc", overrides=["rollout.exclude_warm_start_episodes=4"])
    with pytest.raises(ConfigError, match="exclude_warm_start_episodes=4: env 'calc' cannot name"):
        build_sampler(cfg, 0, lambda: make("calc"))
