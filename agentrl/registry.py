"""Environment registry: envs register with gymnasium as ``agentrl/<name>-v<version>`` and are made by name.

    agentrl.make("calc")                      # the env itself (no gymnasium wrappers, see make)
    gymnasium.make("agentrl/calc-v0")         # the same env, wrapped by gymnasium's checker/order enforcer

Built-in envs are listed in ``agentrl/envs/__init__.py`` (plain data: string entry points, so nothing is
imported before `make`); the registry loads that table by its package's name (BUILTIN_PACKAGE), as it loads a
plugin's entry point, so the core imports nothing from ``envs/``. The same package's NAME_PREFIXES table says
which function registers a name with a prefix (``external:my_agent.py:run``: agentrl.envs.external).
Third-party packages plug in through the entry-point group ``agentrl.envs``; in their pyproject.toml::

    [project.entry-points."agentrl.envs"]
    my_env = "my_pkg.envs:MyEnv"

An env class can also be named directly, without packaging: ``agentrl.make("my_pkg.envs:MyEnv")`` (and
``agentrl train --env my_pkg.envs:MyEnv``).

Registration has one trigger: importing this module (which ``import agentrl`` does) registers the built-ins
and the plugins, once. To use `gymnasium.make` without touching agentrl first, name the module:
``gymnasium.make("agentrl.envs:agentrl/calc-v0")``.
"""

from __future__ import annotations

import difflib
import importlib
import importlib.metadata
import inspect
import logging
import os
import re
import sys
from collections.abc import Callable
from typing import Any

import gymnasium

from agentrl.errors import ConfigError, UnknownEnv

NAMESPACE = "agentrl"
ENTRY_POINT_GROUP = "agentrl.envs"
BUILTIN_PACKAGE = "agentrl.envs"
"""The package of the built-in envs: its BUILTIN_ENVS and NAME_PREFIXES tables (data) are read on first use."""

log = logging.getLogger(__name__)

_envs: dict[str, tuple[str, str | Callable[..., Any], str | None]] = {}
"""name -> (gymnasium id, entry point, description or None to read it from the env class docstring)."""
_hooks: dict[str, str] = {}
"""name -> evaluation hook "module:object" (see agentrl.evaluation)."""
_prefixes: dict[str, str] = {}
"""name prefix -> "module:function" that turns the rest of such a name into (entry point, kwargs, description),
raising ConfigError for a name it cannot register (see NAME_PREFIXES in agentrl/envs/__init__.py)."""
_loaded = False


def gym_id(name: str, version: int = 0) -> str:
    """The gymnasium id of an agentrl env name: "calc" -> "agentrl/calc-v0" ("pkg.mod:Env" -> "agentrl/pkg.mod.Env-v0":
    gymnasium reads a colon in an id as a module to import; other characters it refuses, e.g. the slashes of an
    external agent's path, become dots too)."""
    return f"{NAMESPACE}/{re.sub(r'[^A-Za-z0-9_.-]', '.', name)}-v{version}"


def register(name: str, entry_point: str | Callable[..., Any], *, description: str | None = None,
             version: int = 0, kwargs: dict[str, Any] | None = None, eval_hook: str | None = None,
             **gym_kwargs: Any) -> str:
    """Register an env under ``agentrl/<name>-v<version>`` with gymnasium and in agentrl's table.

    Args:
        name: the short name used by `agentrl.make` and `agentrl envs` (e.g. "calc").
        entry_point: "package.module:EnvClass" (imported only when the env is made) or the class/callable.
        description: one line for `agentrl envs`; default: the first line of the env class docstring.
        version: the gymnasium version suffix.
        kwargs: default keyword arguments for the env constructor.
        eval_hook: "module:object" of the env's evaluation hook (agentrl.evaluation.EvalHook); default: the
            class's `eval_hook` attribute, else the generic hook (tasks are seeds, the reward is the score).
        **gym_kwargs: passed on to `gymnasium.register` (e.g. nondeterministic=True).

    Returns:
        The gymnasium id.
    """
    env_id = gym_id(name, version)
    spec = gymnasium.envs.registry.get(env_id)
    if spec is None or spec.entry_point != entry_point or (spec.kwargs or {}) != (kwargs or {}):
        if spec is not None:
            del gymnasium.envs.registry[env_id]  # re-registration replaces, without gymnasium's warning
        gymnasium.register(id=env_id, entry_point=entry_point, kwargs=kwargs or {}, **gym_kwargs)
    _envs[name] = (env_id, entry_point, description)
    if eval_hook is not None:
        _hooks[name] = eval_hook
    return env_id


def eval_hook_ref(name: str) -> str | None:
    """The evaluation hook registered for an env ("module:object"), or None."""
    env_id = resolve(name)
    return next((_hooks.get(short) for short, (i, _, _) in _envs.items() if i == env_id), None)


def load_object(ref: str) -> Any:
    """Import "module:attr" and return the attribute."""
    return _load(ref)


def load_plugins() -> list[str]:
    """Register the envs of installed packages (entry-point group "agentrl.envs"); returns their names."""
    names = []
    for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        if ":" not in ep.value:
            log.warning('ignoring agentrl.envs entry point %s = "%s": expected "module:EnvClass"', ep.name, ep.value)
            continue
        register(ep.name, ep.value)
        names.append(ep.name)
    return names


def _ensure_loaded() -> None:
    """Register built-in and plugin envs once (the built-in table is data: importing it registers nothing)."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    builtin = importlib.import_module(BUILTIN_PACKAGE)  # by name, like an entry point: the core never imports envs/
    for name, (entry_point, description, eval_hook) in builtin.BUILTIN_ENVS.items():
        register(name, entry_point, description=description, eval_hook=eval_hook)
    _prefixes.update(builtin.NAME_PREFIXES)
    load_plugins()


def registered_env_ids() -> list[str]:
    """The gymnasium ids of all registered agentrl envs, sorted (e.g. ["agentrl/calc-v0", ...])."""
    _ensure_loaded()
    return sorted(env_id for env_id, _, _ in _envs.values())


def _load(entry_point: str | Callable[..., Any]) -> Any:
    if callable(entry_point):
        return entry_point
    module, _, attr = entry_point.partition(":")
    return getattr(importlib.import_module(module), attr)


def _is_class_path(name: str) -> bool:
    """True for "package.module:ClassName", the form entry points use (an env named without registering)."""
    module, sep, attr = name.partition(":")
    return bool(sep and module and attr.isidentifier() and all(p.isidentifier() for p in module.split(".")))


def import_here(module: str) -> Any:
    """Import a module named on the command line (--env my_env:MyEnv, external:my_agent:run), which may live in
    the folder the user is in: the current folder is appended to the import path first, as `python -m` has it.
    Raises ImportError."""
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.append(os.getcwd())
    return importlib.import_module(module)


def _register_class_path(name: str) -> str:
    """Register "module:Class" under its own name after checking it imports; UnknownEnv says what is wrong."""
    module, _, attr = name.partition(":")
    try:
        mod = import_here(module)
    except ImportError as e:
        raise UnknownEnv(f'cannot import module {module!r} of env "{name}": {e}. Is the package installed, '
                         "or the folder holding it on PYTHONPATH?") from None
    if not hasattr(mod, attr):
        close = difflib.get_close_matches(attr, [n for n in dir(mod) if not n.startswith("_")], n=1)
        hint = f' Did you mean "{module}:{close[0]}"?' if close else ""
        raise UnknownEnv(f"module {module!r} has no attribute {attr!r}.{hint}")
    return register(name, name)


def _register_prefixed(name: str, prefix: str) -> str:
    """Register a name with a known prefix ("external:my_agent.py:run") through its package's function, which
    checks it (the agent loads, the command's program exists); UnknownEnv says what is wrong."""
    try:
        entry_point, kwargs, description = _load(_prefixes[prefix])(name[len(prefix):])
    except ConfigError as e:
        raise UnknownEnv(f'env "{name}": {e}') from None
    return register(name, entry_point, kwargs=kwargs, description=description)


def env_class(name: str) -> Any:
    """The class (or callable) an env name makes: "calc", "calc-v0", "agentrl/calc-v0" or "module:Class"."""
    spec = gymnasium.spec(resolve(name))
    return _load(spec.entry_point)


def registered_class(name: str) -> Any | None:
    """The class (or callable) of an env already registered as `name` (a short name or gymnasium id), else None:
    no plugin scan, no module:Class import, no error. For reading an env's class-level hooks
    (AgentEnv.summary_metrics) from a trajectory's env_id."""
    _ensure_loaded()
    env_id = _lookup(name)
    try:
        return _load(gymnasium.spec(env_id).entry_point) if env_id else None
    except Exception:  # noqa: BLE001 - an env that no longer imports has no hooks to read
        return None


def env_parameters(name: str) -> dict[str, inspect.Parameter] | None:
    """The constructor parameters of env `name` (None when its callable has no readable signature)."""
    try:
        return dict(inspect.signature(env_class(name)).parameters)
    except (TypeError, ValueError):
        return None


def check_kwargs(name: str, kwargs: dict[str, Any], key: str = "env.kwargs") -> None:
    """Refuse constructor kwargs the env class does not take, naming `key.<kwarg>` and the accepted ones.

    Checked against the signature at config time, so a typo (`env.kwargs.taks`) stops the run before any
    rollout instead of turning every episode into a masked env error. Classes taking **kwargs accept anything.
    """
    cls = env_class(name)
    params = env_parameters(name)
    if params is None:  # builtins or C callables without a signature: nothing to check
        return
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return
    accepted = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    problems = []
    for kw in kwargs:
        if kw not in accepted:
            close = difflib.get_close_matches(kw, accepted, n=1)
            problems.append(f"{key}.{kw} is not an argument of {getattr(cls, '__name__', name)}"
                            + (f' (did you mean "{close[0]}"?)' if close else ""))
    if problems:
        raise ConfigError("; ".join(problems) + f"; it takes: {', '.join(accepted) or 'no arguments'}")


def _first_doc_line(obj: Any) -> str:
    doc = inspect.getdoc(obj) or ""
    return doc.strip().splitlines()[0] if doc.strip() else ""


def env_descriptions() -> dict[str, tuple[str, str]]:
    """{name: (gymnasium id, one-line description)} for every registered env (used by `agentrl envs`)."""
    _ensure_loaded()
    rows = {}
    for name, (env_id, entry_point, description) in _envs.items():
        if description is None:
            try:
                description = _first_doc_line(_load(entry_point))
            except Exception as e:  # a broken plugin must not break the listing
                description = f"(cannot import {entry_point}: {type(e).__name__}: {e})"
        rows[name] = (env_id, description)
    return rows


def _lookup(name: str) -> str | None:
    for short, (env_id, _, _) in _envs.items():
        if name in (short, env_id, env_id.split("/", 1)[1]):
            return env_id
    return None


def resolve(name: str) -> str:
    """The gymnasium id for "calc", "calc-v0", "agentrl/calc-v0" or "module:Class"; raises UnknownEnv with a
    suggestion and both ways to make a new env known (an entry point, or naming module:Class)."""
    _ensure_loaded()
    env_id = _lookup(name)
    prefix = next((p for p in _prefixes if name.startswith(p)), None)
    if env_id is None and prefix is not None:
        return _register_prefixed(name, prefix)
    if env_id is None and _is_class_path(name):
        return _register_class_path(name)
    if env_id is None:
        load_plugins()  # a package installed since the first lookup
        env_id = _lookup(name)
    if env_id is None:
        known = sorted(_envs)
        close = difflib.get_close_matches(name.removeprefix(f"{NAMESPACE}/").split("-v")[0], known, n=1)
        hint = f' Did you mean "{close[0]}"?' if close else ""
        raise UnknownEnv(f'"{name}" is not registered.{hint} Known envs: {", ".join(known) or "none"} '
                         '("agentrl envs" lists them). To add one, name its class as module:Class (--env '
                         'my_pkg.envs:MyEnv) or register it as an entry point in group "agentrl.envs" '
                         '(see docs/envs.md).')
    return env_id


def make(name: str, **kwargs: Any) -> Any:
    """Create a registered env by name.

    Returns the env itself (``.unwrapped``), not gymnasium's wrapper stack: the agent loop calls AgentEnv
    methods (`areset`, `astep`, `expert_action`) that gymnasium 1.x wrappers do not forward, and it enforces
    its own turn limit. Use `gymnasium.make` for the wrapped env.

    Args:
        name: "calc", "calc-v0", "agentrl/calc-v0", or "my_pkg.envs:MyEnv" (a class, registered on first use).
        **kwargs: keyword arguments for the env constructor (override the registered defaults).

    Returns:
        The AgentEnv instance (its `.spec` is set).

    Raises:
        UnknownEnv: the name is not registered (the message suggests the closest known name).
    """
    return gymnasium.make(resolve(name), disable_env_checker=True, **kwargs).unwrapped


_ensure_loaded()
