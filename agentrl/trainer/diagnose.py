"""Why a run trained nothing, and what would change that for this run: read from its config, its metrics.jsonl
and what it wrote (a warm start's sft_metrics.jsonl), so the advice names the choices that apply here.

A step trains only on groups whose rewards differ (GRPO's advantage is reward minus the group's mean). A run whose
every group scored alike (all 0 on a task too hard for the policy as it stands, all 1 on one too easy) skips every
step; `agentrl train` then prints `explain()` and exits 1.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

# env constructor arguments that, by their name, set how hard the tasks are or whether the reward gives partial credit
LEVEL_KWARGS = ("level", "difficulty")
PARTIAL_CREDIT_KWARGS = {"shaped_reward": "true", "step_reward": "0.1"}


def scores_of_dropped_groups(rows: list[dict]) -> Counter:
    """Groups dropped for equal rewards, by the reward all their members scored (rollout/zero_std_count_<r>)."""
    scores: Counter = Counter()
    for row in rows:
        for key, n in row.items():
            if key.startswith("rollout/zero_std_count_"):
                scores[float(key.rsplit("_", 1)[1])] += int(n)
    return scores


def explain(cfg, run_dir: Path, rows: list[dict], skipped: list[str], *, init_from: str | None = None,
            resumed: bool = False) -> str:
    """The lines `agentrl train` prints when no step trained: what happened (every step SKIPPED, the most common
    reason, what the episodes scored) and, for equal rewards, the choices that apply to this run."""
    (why, n), = Counter(skipped).most_common(1)
    steps = f"all {len(skipped)} steps were" if len(skipped) > 1 else "its one step was"
    head = f"no step trained: {steps} SKIPPED ({n}× {why})."
    if not why.startswith("no trainable group"):
        return f"{head} See metrics.jsonl for each step's actor/grad_norm."
    if not why.startswith("no trainable group: 0 of "):
        return (f"{head} Episodes were masked (infrastructure or env failures, never trained as reward 0): "
                f"{run_dir / 'trajectories.jsonl'} has each one's termination and cause.")
    scores = scores_of_dropped_groups(rows)
    if scores and min(scores) >= 1.0:
        return (f"{head}\nEvery episode scored {_score(scores)}, so no group had a reward difference to learn from: "
                f"the tasks are too easy for this policy. Give it harder ones{_level_hint(cfg, harder=True)}.")
    what = (f"Every episode scored {_score(scores)}" if len(scores) == 1 else
            "Within each task, every episode scored the same (" + ", ".join(
                f"{n} group(s) all {r:g}" for r, n in sorted(scores.items())) + ")")
    choices = [c for c in (_random_model(cfg), _truncation(cfg, rows), _partial_credit(cfg), _easier(cfg), _more_samples(cfg),
                           _warm_start(cfg, run_dir, init_from, resumed, rows)) if c]
    return (f"{head}\n{what}, so no group had a reward difference for GRPO to learn from. What can change that "
            "for this run:\n" + "\n".join(f"  - {c}" for c in choices))


def _score(scores: Counter) -> str:
    return " or ".join(f"{r:g}" for r in sorted(scores))


def _params(cfg) -> dict:
    from agentrl.registry import env_parameters

    try:
        return env_parameters(cfg.env.name) or {}
    except Exception:  # noqa: BLE001 - advice must never hide the run's own outcome
        return {}


def _current(cfg, params: dict, name: str):
    """The value the run gave env argument `name` (env.kwargs, else the class's default)."""
    if name in cfg.env.kwargs:
        return cfg.env.kwargs[name]
    default = params[name].default
    return None if default is params[name].empty else default


def _level_hint(cfg, *, harder: bool) -> str:
    params = _params(cfg)
    for name in LEVEL_KWARGS:
        if name in params:
            return f" (a {'higher' if harder else 'lower'} env.kwargs.{name}; this run used {_current(cfg, params, name)!r})"
    return ""


def _random_model(cfg) -> str | None:
    """The test model first: random weights solve nothing in a few steps, whatever else the run changes."""
    from agentrl.models import DEFAULT_MODEL, TINY

    if cfg.model.name != TINY:
        return None
    return (f"a model that can learn: model.name={TINY} is randomly initialized (it exists for tests) and solves "
            f"nothing in a few steps whatever the settings below; the default is model.name={DEFAULT_MODEL}")


def _truncation(cfg, rows: list[dict]) -> str | None:
    """Every action cut by the token budget: nothing else matters until it fits."""
    cut = sum(r.get("rollout/length_truncated_actions", 0) for r in rows)
    turns = sum(r.get("rollout/turns_mean", 0) * r.get("rollout/episodes", 0) for r in rows)
    if turns and cut >= turns:
        return (f"a larger token budget per action: every action was cut at rollout.max_new_tokens="
                f"{cfg.rollout.max_new_tokens} before it could finish")
    return None


def _partial_credit(cfg) -> str | None:
    """The env's own partial-credit argument when it is off (nothing when it is on), else what to add."""
    params = _params(cfg)
    for name, value in PARTIAL_CREDIT_KWARGS.items():
        if name in params:
            return None if _current(cfg, params, name) else (
                f"partial credit: env.kwargs.{name}={value} (off in this run) pays for progress short of a full solve")
    return ("partial credit in the env's reward: pay a share between 0 and 1 for progress (a test passing, the "
            "right tool called) so that some episodes of a task score more than others")


def _easier(cfg) -> str:
    hint = _level_hint(cfg, harder=False)
    if hint:
        return "easier tasks" + hint
    if "split" in _params(cfg):
        return (f"easier tasks: another split (env.kwargs.split; this run used {cfg.env.kwargs.get('split', 'its default')!r}) "
                "or tasks the policy sometimes solves")
    return "easier tasks: start from ones the policy already solves now and then"


def _more_samples(cfg) -> str:
    g = cfg.rollout.group_size
    return (f"more samples per group: rollout.group_size={2 * g} (this run: {g}), so a task solved once in "
            f"{2 * g} tries still gives a signal")


def _warm_start(cfg, run_dir: Path, init_from: str | None, resumed: bool, rows: list[dict]) -> str | None:
    """What the run knows about its warm start: it ran and did not help, it was asked for and produced
    nothing, or there was none (and whether the env has the expert one needs)."""
    never_parsed = rows and all(r.get("rollout/format_ok_share", 1.0) == 0 for r in rows)
    fmt = " (no action of the run parsed as a tool call: rollout/format_ok_share 0)" if never_parsed else ""
    if init_from:
        return (f"a warm start already ran and did not help: this run started from --init-from {init_from}{fmt}; "
                "more expert episodes or epochs there (agentrl sft --episodes N sft.epochs=K)")
    if (run_dir / "sft_metrics.jsonl").is_file():
        return (f"a warm start already ran and did not help (sft.episodes={cfg.sft.episodes}, sft.epochs="
                f"{cfg.sft.epochs}){fmt}: more expert episodes or epochs, or check that its expert solves the tasks "
                "(agentrl eval --oracle expert)")
    if resumed:
        return None
    if cfg.sft.episodes:
        return (f"a warm start that trains: sft.episodes={cfg.sft.episodes} was asked for, but it produced no usable "
                "expert episode (the 'sft:' lines above say why)")
    from agentrl.agent_env import AgentEnv
    from agentrl.registry import env_class

    try:
        has_expert = getattr(env_class(cfg.env.name), "expert_action", None) not in (None, AgentEnv.expert_action)
    except Exception:  # noqa: BLE001
        has_expert = False
    if has_expert:
        return f"an expert warm start, which this run did not have{fmt}: sft.episodes=64"
    return f"an expert warm start{fmt}: the env needs expert_action() for one (it has none), then sft.episodes=64"
