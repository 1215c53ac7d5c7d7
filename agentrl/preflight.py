"""Preflight: prove the configured env can be built and run before any rollout starts.

A run whose env cannot be built used to "train" anyway: every episode ended as a masked env error, a
checkpoint was written and the command exited 0. `preflight` builds one env with the resolved kwargs
(checked against the class signature first), resets it and takes the scripted expert's first step where the
env has one, and turns any failure into one line: under the config key when it is one (a bad kwarg, or an
AgentRLError the env raises about what it was given), else as the env's own error, with where it was raised:

    env.kwargs.taks is not an argument of SweLiteEnv (did you mean "tasks"?); it takes: tasks, split, ...
    env.kwargs: env 'swe_lite' failed at reset with env.kwargs={...}: TaskError: ...: missing required field(s) ...
    env 'my_pkg.envs:MyEnv' failed at reset: KeyError: 'prompt' (raised at my_pkg/envs.py:42 in reset; the env's own error with env.kwargs={})

`agentrl train` and `agentrl sft` call `preflight` before they load a model; `agentrl eval` checks its
kwargs against the signature and builds and resets one env (`try_factory`) before any episode.
"""

from __future__ import annotations

from typing import Any

from agentrl.agent_env import reset_problem, step_problem
from agentrl.errors import ConfigError


class PreflightError(ConfigError):
    """The configured env cannot be built, reset or stepped (the message names the config key)."""


class _Shape(Exception):
    """An env call returned something of the wrong shape (reported as the env's own error, at that call)."""


def _one_line(text: str, limit: int = 400) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _raised_at(e: BaseException) -> str:
    """Where `e` was raised: 'path:line in function' of the innermost frame (path relative to the cwd if below it)."""
    import os

    tb = e.__traceback__
    if tb is None:
        return "an unknown place"
    while tb.tb_next is not None:
        tb = tb.tb_next
    path = tb.tb_frame.f_code.co_filename
    rel = os.path.relpath(path) if os.path.isabs(path) else path
    return f"{path if rel.startswith('..') else rel}:{tb.tb_lineno} in {tb.tb_frame.f_code.co_name}"


def failure_message(e: BaseException, *, name: str, stage: str, key: str, kwargs: dict[str, Any] | None) -> str:
    """One line for an env that failed in a preflight. An AgentRLError is the env reporting a problem with what
    it was given (a task file, a split), so it is put under the config key; any other exception is the env's own
    error, reported as such with where it was raised (the kwargs are shown, not blamed)."""
    from agentrl.errors import AgentRLError

    cause = f"{type(e).__name__}: {_one_line(e)}"
    given = f" with {key}={kwargs!r}" if kwargs is not None else ""
    if isinstance(e, AgentRLError):
        return f"{key}: env {name!r} failed at {stage}{given}: {cause}"
    return f"env {name!r} failed at {stage}: {cause} (raised at {_raised_at(e)}; the env's own error{given})"


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
        _shaped(reset_problem, env, env.reset(seed=0))
        if expert_step:
            stage = "the scripted expert's first step"
            action = env.expert_action()
            if action is not None:
                _shaped(step_problem, env, env.step(action))
    except _Shape as e:
        raise PreflightError(f"env {name!r} failed at {stage}: {e}") from None
    except Exception as e:  # noqa: BLE001 - every failure here is reported, as a config problem or the env's own
        raise PreflightError(failure_message(e, name=name, stage=stage, key=key, kwargs=kwargs)) from None
    finally:
        if env is not None:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - a failing close must not hide the real result
                pass


def _shaped(problem, env, result) -> None:
    """Raise _Shape with check_env's words if `result` (of env.reset or env.step) has the wrong shape."""
    found = problem(type(getattr(env, "unwrapped", env)).__name__, result)
    if found is not None:
        raise _Shape(found)


def try_factory(factory, *, key: str, label: str, seed: int | None = 0, options: dict | None = None) -> None:
    """Build one env with `factory` and reset it (`agentrl eval`'s check before any episode runs)."""
    env, stage = None, "construction"
    try:
        env = factory()
        stage = "reset"
        _shaped(reset_problem, env, env.reset(seed=seed, options=options or None))
    except _Shape as e:
        raise PreflightError(f"env {label!r} failed at {stage}: {e}") from None
    except Exception as e:  # noqa: BLE001 - reported, as a config problem or the env's own
        raise PreflightError(failure_message(e, name=label, stage=stage, key=key, kwargs=None)) from None
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
