"""bench/learn_swe.py's compute-matched control (issue 54 item 3): supervised training from the warm start for
GRPO's training wall time, `rft` (rejection-sampling fine-tuning on the policy's resolved episodes) or `epochs`
(more warm-start epochs). The smallest workloads: the tiny model on a one-turn in-process env (no Docker), and
a report and a resume on planted state."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

import agentrl
from agentrl.config import load_config
from agentrl.models import load_model, load_tokenizer
from agentrl.trainer.checkpoint import latest_checkpoint, save_checkpoint
from agentrl.trainer.heldout import HeldOut
from agentrl.trainer.sft import resolved_episodes, sft_on
from agentrl.types import Segment, TerminationReason, Trajectory, user

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "bench"))
import learn_swe_phases as phases  # noqa: E402

BUDGET_S = 6.0


class EvenEnv(agentrl.AgentEnv):
    """One turn: resolved if the reply has an even number of characters (the tiny random model gets both), with a
    shaped reward that is not success: 0.3 for an odd reply, 1.0 for an even one. The expert says "ok"."""

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user(f"Say anything ({int(self.np_random.integers(1000))}).")], {"task_id": str(seed)}

    def step(self, action):
        even = len(action) % 2 == 0
        return [], 1.0 if even else 0.3, True, False, {"resolved": even}

    def expert_action(self):
        return "ok"


agentrl.register("test_control_even", EvenEnv, description="test env: resolved on even-length replies")


def _cfg(tmp_path: Path, *overrides: str):
    return load_config(None, overrides=[
        "env.name=test_control_even", "model.name=tiny", "rollout.tasks_per_step=2", "rollout.group_size=4",
        "rollout.max_new_tokens=8", "rollout.max_context_tokens=256", "rollout.max_turns=1", "sft.episodes=4",
        "sft.epochs=1", "sft.batch_trajectories=2", "sft.lr=1e-3", "trainer.lr=1e-3", "trainer.steps=2",
        f"trainer.run_dir={tmp_path / 'control'}", "trainer.tensorboard=false", *overrides])


def _warm_start(tmp_path: Path) -> Path:
    """A warm-start checkpoint: the tiny model as it loads (what the control starts from is what matters)."""
    return save_checkpoint(tmp_path / "sft", 0, model=load_model("tiny"), tokenizer=load_tokenizer("tiny"))


def _weights(model_dir: Path) -> dict[str, torch.Tensor]:
    return load_model(str(model_dir)).state_dict()


# ---- (b) rft keeps only resolved episodes ----

def _traj(name: str, *, reward: float, info: dict, termination=TerminationReason.DONE, actions: int = 2) -> Trajectory:
    seg = Segment()
    seg.append_prompt([1, 2, 3])
    seg.append_sampled([4] * actions, [0.0] * actions, [0] * actions)
    return Trajectory(id=name, group_id="g", env_id="e", task_id="t", segments=[seg], reward=reward,
                      reward_info=info, termination=termination)


def test_rft_keeps_resolved_episodes_only_not_the_shaped_reward():
    planted = [
        _traj("resolved, low shaped reward", reward=0.2, info={"resolved": True}),
        _traj("unresolved, high shaped reward", reward=1.2, info={"resolved": False}),
        _traj("unresolved", reward=0.0, info={"resolved": False}),
        _traj("resolved but masked (sandbox failure)", reward=1.0, info={"resolved": True},
              termination=TerminationReason.SANDBOX_ERROR),
        _traj("resolved, no model tokens", reward=1.0, info={"resolved": True}, actions=0),
        _traj("resolved, cut by max_turns", reward=1.0, info={"resolved": True}, termination=TerminationReason.MAX_TURNS),
        _traj("no success flag, full reward", reward=1.0, info={}),
        _traj("no success flag, partial reward", reward=0.5, info={}),
    ]
    kept = [t.id for t in resolved_episodes(planted)]
    assert kept == ["resolved, low shaped reward", "resolved, cut by max_turns", "no success flag, full reward"]


def test_sft_on_trains_one_shuffled_pass_in_batches_and_stops_when_asked(tmp_path):
    cfg = _cfg(tmp_path)
    trajs = [_traj(str(i), reward=1.0, info={"resolved": True}, actions=2 + i) for i in range(5)]
    model = load_model("tiny")
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    rng, seen = random.Random(0), []
    history = sft_on(cfg, model, opt, trajs, rng, after_step=seen.append)
    assert len(history) == len(seen) == 3  # 5 trajectories in batches of sft.batch_trajectories=2
    assert sum(h["sft/action_tokens"] for h in history) == sum(t.num_action_tokens for t in trajs)
    order = list(range(5))
    random.Random(0).shuffle(order)  # the order run_sft's epoch would take from the same generator
    assert history[0]["sft/action_tokens"] == sum(trajs[j].num_action_tokens for j in order[:2])
    calls = []
    stopped = sft_on(cfg, model, opt, trajs, random.Random(0), stop=lambda: calls.append(1) or len(calls) > 1)
    assert len(stopped) == 1


# ---- (a) the control trains from the warm start for about the budget, then stops ----

@pytest.mark.parametrize("kind", ["rft", "epochs"])
def test_the_control_trains_from_the_warm_start_for_its_budget_and_stops(tmp_path, kind):
    warm = _warm_start(tmp_path)
    result = phases.train_control(_cfg(tmp_path), kind, warm, BUDGET_S)
    assert BUDGET_S <= result["train_s"] < BUDGET_S + 10, result  # stops at the first check past the budget
    ckpt = Path(result["checkpoint"])
    assert ckpt == latest_checkpoint(tmp_path / "control") and result["sft_steps"] >= 2
    state = json.loads((ckpt / "state.json").read_text())
    assert state["reference"] == str((warm / "model").resolve())  # loaded from the warm start
    assert state["step"] == result["sft_steps"]
    before, after = _weights(warm / "model"), _weights(ckpt / "model")
    assert any(not torch.equal(before[k], after[k]) for k in before)  # and trained it
    rows = [json.loads(x) for x in (tmp_path / "control" / "control_metrics.jsonl").read_text().splitlines()]
    assert sum(r["sft_steps"] for r in rows) == result["sft_steps"]
    if kind == "rft":
        trajs = [json.loads(x) for x in (tmp_path / "control" / "trajectories.jsonl").read_text().splitlines()]
        assert len(trajs) == result["episodes_sampled"] == 8 * result["rounds"] and result["rounds"] >= 2
        kept = [t for t in trajs if t["metrics"]["control/kept"]]
        assert len(kept) == result["episodes_kept"] == sum(r["kept"] for r in rows) > 0
        assert all(t["reward_info"]["resolved"] for t in kept)
        assert not any(t["reward_info"]["resolved"] for t in trajs if not t["metrics"]["control/kept"])
    else:
        assert result["demonstrations"] == 4 and result["epochs"] == pytest.approx(result["sft_steps"] / 2)


# ---- (c) the report carries GRPO against the control ----

def _held(per_task: dict[str, float]) -> HeldOut:
    n = len(per_task)
    mean = sum(per_task.values()) / n
    return HeldOut(mean, max(0.0, mean - 0.1), min(1.0, mean + 0.1), n, 0, per_task)


def test_the_report_compares_grpo_with_the_control_greedy_and_sampled(tmp_path):
    tasks = [SimpleNamespace(instance_id=f"m{i}-000{i}", repo=f"m{i}") for i in range(4)]
    ids = [t.instance_id for t in tasks]
    outcomes = {"warm start": [0, 0, 1, 0], "GRPO": [1, 1, 1, 0], "control": [1, 0, 0, 0]}
    means = {"warm start": [0.0, 0.5, 0.5, 0.0], "GRPO": [1.0, 1.0, 0.5, 0.5], "control": [0.5, 0.0, 0.5, 0.0]}
    cfg = load_config("swe_lite", None, overrides=["model.name=tiny"])
    control = {"kind": "rft", "budget_s": 120.0, "budget_from": "GRPO's training wall time", "wall_s": 125.3,
               "rounds": 5, "episodes_sampled": 80, "episodes_masked": 1, "episodes_kept": 12, "sft_steps": 5,
               "checkpoint": "x", "train_s": 124.0}
    b = SimpleNamespace(
        args=SimpleNamespace(model="tiny", config=None, split="test", quick=True, env="swe_lite", samples=2,
                             reeval=False),
        greedy=True, levels=[0], out=tmp_path, overrides=[], tasks={0: tasks}, audits={}, cfg=cfg, sft_cfg=cfg,
        grpo_cfg=cfg, control=control,
        held={(p, 0): _held(dict(zip(ids, map(float, v), strict=True))) for p, v in outcomes.items()},
        sampled={(p, 0): _held(dict(zip(ids, v, strict=True))) for p, v in means.items()},
        rows=[{"phase": p, "level": 0, "resolved": sum(v) / 4, "ci95": [0.0, 1.0], "n": 4, "solved": sum(v),
               "masked": 0, "train_s": 10.0, "eval_s": 1.0} for p, v in outcomes.items()],
        sampled_rows=[{"phase": p, "level": 0, "resolved": sum(v) / 4, "ci95": [0.0, 1.0], "n": 4, "masked": 0,
                       "train_s": 10.0, "eval_s": 1.0, "episodes": 8, "min_samples": 2} for p, v in means.items()])
    pinned = {"command": "bench/learn_swe.py --quick", "commit": "abc1234", "created": "2026-01-01"}
    summary = phases.report(b, pinned, tmp_path / "sft", tmp_path / "grpo", tmp_path / "control")
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["paired_control"] == {"0": {"gained": 2, "lost": 0, "p_value": 0.5}}  # m1, m2 up; none down
    assert record["paired"]["0"]["gained"] == 2 and summary["paired_grpo_vs_control"][0]["gained"] == 2
    assert record["control"]["episodes_kept"] == 12 and "checkpoint" not in record["control"]
    assert summary["control"] == control and summary["checkpoints"]["control"] == str(tmp_path / "control")
    vs_control = record["sampled"]["paired"]["GRPO vs control"]["0"]
    assert vs_control["mean_diff"] == pytest.approx(0.5) and vs_control["tasks"] == 4
    assert set(record["sampled"]["paired"]) == {"GRPO vs warm start", "GRPO vs control"}
    text = phases.table(record)
    assert "GRPO vs control: +0.500" in text and "GRPO solves 2 the control does not, loses 0" in text
    assert ("control: rft from the warm start for 120 s (GRPO's training wall time), ran 125 s: 5 rounds, 80 training "
            "episodes sampled (1 masked), 12 kept (resolved), 5 SFT steps") in text


# ---- (d) a finished control is not trained again; a stopped one starts over with the pinned budget ----

class Clock:
    def __init__(self, grpo_s: float):
        self.s = {"grpo": grpo_s}
        self.begun = []

    def seconds(self, phase):
        return self.s.get(phase, 0.0)

    def begin(self, phase, kept_until=None, *, fresh=False):
        self.begun.append(phase)

    def end(self, phase):
        self.s[phase] = 42.0
        return 42.0


def _bench(out: Path, grpo_s: float = 30.0, **args) -> SimpleNamespace:
    a = SimpleNamespace(control="rft", control_s=None, reeval=False, **args)
    run = json.loads((out / "run.json").read_text()) if (out / "run.json").exists() else {"recipe": {}}
    phases.pin_control(out, run, a.control, a.control_s)
    return SimpleNamespace(args=a, out=out, clock=Clock(grpo_s), run=run, grpo_cfg=object(), control_cfg="cfg",
                           where={}, control=None)


def test_a_finished_control_is_kept_and_a_stopped_one_starts_over_with_the_pinned_budget(tmp_path, monkeypatch):
    (tmp_path / "run.json").write_text(json.dumps({"recipe": {}}))
    calls = []

    def fake_train(cfg, kind, init_from, budget_s):
        calls.append(budget_s)
        assert not (tmp_path / "control" / "stale.txt").exists()  # a stopped attempt's files are gone
        ckpt = save_checkpoint(tmp_path / "control", 3, model=load_model("tiny"))
        return {"kind": kind, "rounds": 1, "episodes_sampled": 8, "episodes_masked": 0, "episodes_kept": 2,
                "sft_steps": 3, "checkpoint": str(ckpt), "train_s": budget_s}

    monkeypatch.setattr(phases, "train_control", fake_train)
    (tmp_path / "control").mkdir()
    (tmp_path / "control" / "stale.txt").write_text("a control killed before it finished")
    b = _bench(tmp_path, grpo_s=30.0)
    ckpt = phases.control_phase(b, tmp_path / "sft")
    assert calls == [30.0] and b.clock.begun == ["control"] and ckpt == latest_checkpoint(tmp_path / "control")
    run = json.loads((tmp_path / "run.json").read_text())
    assert run["control"] == {"kind": "rft", "control_s": None, "budget_s": 30.0,
                              "budget_from": "GRPO's training wall time"}
    assert b.control["wall_s"] == 42.0 and b.control["budget_s"] == 30.0

    # resumed: the finished control is read back, not trained again
    monkeypatch.setattr(phases, "train_control", lambda *a, **k: pytest.fail("a finished control was trained again"))
    again = _bench(tmp_path, grpo_s=99.0)
    assert phases.control_phase(again, tmp_path / "sft") == ckpt and again.clock.begun == []
    assert again.control == json.loads((tmp_path / "control" / "control.json").read_text()) == b.control

    # stopped after its checkpoint but before control.json: it starts over, with the budget run.json pinned
    (tmp_path / "control" / "control.json").unlink()
    (tmp_path / "control" / "stale.txt").write_text("left by the stopped attempt")
    monkeypatch.setattr(phases, "train_control", fake_train)
    third = _bench(tmp_path, grpo_s=99.0)
    phases.control_phase(third, tmp_path / "sft")
    assert calls == [30.0, 30.0]

    # another kind or budget is refused; --control none skips the phase
    for kind, seconds in (("epochs", None), ("rft", 10.0)):
        with pytest.raises(phases.Refused, match="pinned --control rft"):
            phases.pin_control(tmp_path, run, kind, seconds)
    none = SimpleNamespace(args=SimpleNamespace(control="none"), out=tmp_path)
    assert phases.control_phase(none, tmp_path / "sft") is None


def test_without_grpo_or_control_s_there_is_no_budget_and_no_control(tmp_path, monkeypatch):
    (tmp_path / "run.json").write_text(json.dumps({"recipe": {}}))
    monkeypatch.setattr(phases, "train_control", lambda *a, **k: pytest.fail("trained without a budget"))
    b = _bench(tmp_path, grpo_s=0.0)
    b.grpo_cfg = None
    assert phases.control_phase(b, tmp_path / "sft") is None and "budget_s" not in b.run["control"]
