"""How long a run will take, said at start-up, before any step of it has a pace of its own.

A shipped preset's pace was measured on the reference machine (REFERENCE) with the default model; a run of that
env is estimated by scaling it with the run's own counts: warm-start demonstrations × epochs, and steps ×
trajectories per step. It is a rough figure (other turn budgets, a faster machine, a policy that submits early
all change it); the step lines then say the time left at the run's own pace (monitor.Monitor.time_left). Envs
with no measured pace, other models and GPU runs get no estimate rather than a wrong one.
"""

from __future__ import annotations

from dataclasses import dataclass

REFERENCE = "a 2-core CPU (AMD EPYC Zen 3, fp32)"
"""Where the paces below were measured (docs/results.md, "How long a run takes")."""


@dataclass(frozen=True)
class Pace:
    """One preset's measured pace on REFERENCE."""

    demonstration_s: float
    """Warm start: seconds per expert demonstration and epoch (making the episode, grading it, its SFT share)."""
    trajectory_s: float
    """GRPO: seconds per trajectory of a step (rollout, update and weight sync, over the step's trajectories)."""


PACES = {
    # `agentrl train --env swe_lite --config configs/demo.yaml`, 849 s: 32 expert episodes 42 s, two SFT epochs
    # 327 s each (10.9 s per demonstration and epoch in all), steps of 8 trajectories 54 s and 74 s
    "swe_lite": Pace(demonstration_s=11.0, trajectory_s=9.0),
    # `agentrl train --env calc trainer.steps=2`, 717 s: 16 demonstrations × 2 epochs 109 s (3.4 s each), steps of
    # 32 trajectories 317 s and 268 s (resampling included)
    "calc": Pace(demonstration_s=3.4, trajectory_s=9.2),
}
"""Measured paces by env name (docs/results.md, "How long a run takes", with the commands that measured them)."""


def duration(seconds: float) -> str:
    """'40 s', '12 min', '2 h 30 min': a rough length, to a unit a person plans with."""
    if seconds < 90:
        return f"{max(10, round(seconds / 10) * 10):.0f} s"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"{minutes} min"
    hours, minutes = divmod(round(minutes / 10) * 10, 60)
    return f"{hours} h" + (f" {minutes} min" if minutes else "")


def estimate_line(cfg, *, steps_left: int, warm_start: bool) -> str | None:
    """'estimate: about 2 h 30 min …' for a run of a measured preset on CPU with the default model, else None."""
    from agentrl.models import _ALIASES, DEFAULT_MODEL

    pace = PACES.get(cfg.env.name)
    if pace is None or _ALIASES.get(cfg.model.name) != DEFAULT_MODEL or not cfg.model.device.startswith("cpu"):
        return None
    warm = cfg.sft.episodes * cfg.sft.epochs * pace.demonstration_s if warm_start else 0.0
    step = cfg.rollout.tasks_per_step * cfg.rollout.group_size * pace.trajectory_s
    parts = ([f"warm start ~{duration(warm)}"] if warm else []) + ([f"~{duration(step)} a step"] if steps_left else [])
    if not parts:
        return None
    return (f"estimate: about {duration(warm + steps_left * step)} on {REFERENCE} at {cfg.env.name}'s measured pace "
            f"({', '.join(parts)}); more cores or fewer tokens make it shorter")
