"""Preflight: prove the configured env can be built and run before any rollout starts.

A run whose env cannot be built used to "train" anyway: every episode ended as a masked env error, a
checkpoint was written and the command exited 0. `preflight` builds one env with the resolved kwargs
(checked against the class signature first), resets it and takes the scripted expert's first step where the
env has one, and turns any failure into one line naming the config key, e.g.

    env.kwargs.taks is not an argument of SweLiteEnv (did you mean "tasks"?); it takes: tasks, split, ...
    env.kwargs: swe_lite failed at reset: TaskError: ...: missing required field(s) problem_statement

`agentrl train` and `agentrl sft` call `preflight` before they load a model; `agentrl eval` checks its
kwargs against the signature and builds and resets one env (`try_factory`) before any episode.
"""

from __future__ import annotations

from typing import Any

from agentrl.errors import ConfigError


class PreflightError(ConfigError):
    """The configured env cannot be built, reset or stepped (the message names the config key)."""


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def try_env(name: str, kwargs: dict[str, Any], *, key: str = "env.kwargs", expert_step: bool = True) -> None:
    """Build env `name` with `kwargs`, reset it (seed 0) and run the expert's first action if it has one.

    Raises PreflightError naming `key`, the stage that failed and the cause; closes the env either way.
    """
    from agentrl.registry import check_kwargs, make

    check_kwargs(name, kwargs, key)
    env, stage = None, "construction"
    try:
        env = make(name, **kwargs)
        stage = "reset"
        env.reset(seed=0)
        if expert_step:
            stage = "the scripted expert's first step"
            action = env.expert_action()
            if action is not None:
                env.step(action)
    except Exception as e:  # noqa: BLE001 - every failure here is reported as the config problem it is
        raise PreflightError(f"{key}: env {name!r} failed at {stage} with {key}={kwargs!r}: "
                             f"{type(e).__name__}: {_one_line(e)}") from None
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - a failing close must not hide the real result
                pass


def try_factory(factory, *, key: str, label: str, seed: int | None = 0, options: dict | None = None) -> None:
    """Build one env with `factory` and reset it (`agentrl eval`'s check before any episode runs)."""
    env, stage = None, "construction"
    try:
        env = factory()
        stage = "reset"
        env.reset(seed=seed, options=options or None)
    except Exception as e:  # noqa: BLE001 - reported as the config problem it is
        raise PreflightError(f"{key}: env {label!r} failed at {stage}: {type(e).__name__}: {_one_line(e)}") from None
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001
                pass


def preflight(cfg) -> None:
    """Check a run config's env before training: kwargs against the signature, then one built, reset, stepped env.

    With held-out evaluation on (trainer.eval_episodes > 0) and env.eval_kwargs set, the evaluation env is
    checked the same way under the key env.eval_kwargs.
    """
    try_env(cfg.env.name, dict(cfg.env.kwargs), key="env.kwargs")
    if cfg.env.eval_kwargs and getattr(cfg.trainer, "eval_episodes", 0):
        try_env(cfg.env.name, {**cfg.env.kwargs, **cfg.env.eval_kwargs}, key="env.eval_kwargs", expert_step=False)
