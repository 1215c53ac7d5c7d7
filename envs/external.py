"""external: the env of an agent program you already have, trained through the OpenAI-compatible gateway.

    agentrl train --env external:my_agent.py:run          # a file, and the function in it
    agentrl train --env external:my_pkg.agents:run        # an importable module
    agentrl train --env "external:cmd:python my_agent.py --flag"   # a command line

This env holds the tasks; the program plays each episode (AgentEnv.agent_program: the agent loop runs it through
a gateway session, agentrl.rollout.programs). Tasks come from the agent's module: a list `TASKS` (an episode
draws one with its seed), or a function `task(seed)`; without either the task is ``{"seed": seed}``. The env
kwarg `tasks` (a JSONL file of task objects, `env.kwargs.tasks=tasks.jsonl`) replaces both.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentrl.agent_env import AgentEnv
from agentrl.errors import ConfigError
from agentrl.rollout.programs import make_program, resolve_agent
from agentrl.types import user

_task_files: dict[tuple[str, int], list] = {}  # (path, mtime) -> tasks of the last JSONL file read


def registration(ref: str) -> tuple[str, dict[str, Any], str]:
    """(entry point, kwargs, description) of "external:<ref>" for the registry (NAME_PREFIXES), after checking
    that the agent loads or its command's program exists (ConfigError says what is wrong)."""
    return ("agentrl.envs.external:ExternalEnv", {"agent": resolve_agent(ref)},
            f"agent program {ref} through the gateway")


def read_tasks(path: str) -> list[dict[str, Any]]:
    """The task objects of a JSONL file (blank lines skipped; read once per file version, not per episode);
    ConfigError names the file and line."""
    file = Path(path).expanduser().resolve()
    if not file.is_file():
        raise ConfigError(f"env.kwargs.tasks: {path!r} does not exist (looked for {file})")
    key = (str(file), file.stat().st_mtime_ns)
    if key not in _task_files:
        _task_files.clear()
        _task_files[key] = _parse_tasks(file, path)
    return _task_files[key]


def _parse_tasks(file: Path, path: str) -> list[dict[str, Any]]:
    tasks = []
    for i, line in enumerate(file.read_text().splitlines(), 1):
        if line.strip():
            try:
                tasks.append(json.loads(line))
            except ValueError as e:
                raise ConfigError(f"env.kwargs.tasks: {path}:{i} is not JSON: {e}") from None
            if not isinstance(tasks[-1], dict):
                raise ConfigError(f"env.kwargs.tasks: {path}:{i} is not a JSON object")
    if not tasks:
        raise ConfigError(f"env.kwargs.tasks: {path!r} holds no tasks")
    return tasks


class ExternalEnv(AgentEnv):
    """The tasks of an agent program, which plays each episode against its own gateway session.

    ## Task
    One of `tasks` or the module's `TASKS` (drawn with the episode's seed), `task(seed)`, or {"seed": seed};
    reset's info["task"] is what the program gets.

    ## Actions / Observations
    The program's chat-completion calls; the trajectory records them token-in/token-out.

    ## Reward
    The number `run(task, client)` returns (or its dict's "reward"); a command's last stdout line.

    ## Episode End
    When `run` returns, raises or a command exits non-zero (env_error), or runs past
    rollout.episode_timeout_s (env_error).

    ## Arguments
    agent: "path/to/file.py:fn", "package.module:fn" or "cmd:<command line>".
    tasks: a JSONL file of task objects (drawn with the episode's seed; an "id" key is the task_id).
    """

    def __init__(self, agent: str, tasks: str | None = None):
        self.agent_program = make_program(agent)
        module = self.agent_program.module
        self.tasks = read_tasks(tasks) if tasks else getattr(module, "TASKS", None)
        self.make_task = getattr(module, "task", None)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw the task (info["task"]); the messages are only for display (the program writes its own)."""
        super().reset(seed=seed)
        if isinstance(self.tasks, (list, tuple)) and self.tasks:
            index = int(self.np_random.integers(len(self.tasks)))
            task, task_id = self.tasks[index], str(index)
        elif callable(self.make_task):
            task, task_id = self.make_task(seed), str(seed)
        else:
            task, task_id = {"seed": seed}, str(seed)
        if isinstance(task, dict) and "id" in task:
            task_id = str(task["id"])
        return [user(str(task))], {"task_id": task_id, "task": task}

    def step(self, action: str):
        """Not used: the agent program plays the episode (AgentEnv.agent_program)."""
        raise NotImplementedError("ExternalEnv is played by its agent program (agent_program), not stepped")
