"""external: train an agent program you already have, through the OpenAI-compatible session gateway.

    agentrl train --env external:my_agent.py:run          # a file, and the function in it
    agentrl train --env external:my_pkg.agents:run        # an importable module
    agentrl train --env "external:cmd:python my_agent.py --flag"   # a command line (CommandAgent)

The program is a function ``async def run(task, client) -> reward`` (a plain ``def`` runs in a worker thread,
so a synchronous OpenAI client works too). `client` is an agentrl.gateway.AgentClient: `client.base_url`
(…/sessions/<id>/v1) and `client.api_key` go to any OpenAI-compatible client, or call `await
client.chat(messages, ...)`. What `run` returns is the reward: a number, or a dict with a "reward" key (the
rest is kept as reward_info). Tasks come from the module: a list `TASKS` (an episode draws one with its
seed), or a function `task(seed)`; without either the task is ``{"seed": seed}``. The env kwarg `tasks` (a
JSONL file of task objects, `env.kwargs.tasks=tasks.jsonl`) replaces both.

A command line runs once per episode as a subprocess with OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL and
AGENTRL_TASK (the task as JSON, also written to its stdin) set; the last non-empty line of its stdout is the
reward (a number, or a JSON object with a "reward" key). Its process group is killed when the episode ends.

Every call the program makes is recorded token-in/token-out (agentrl.gateway.session): the trajectory holds
the exact ids the engine sampled. Failures follow the one failure table: the program raising (a command
exiting non-zero), returning a non-number, making no model call, or running past the episode deadline is
env_error (masked, never trained as 0); an engine failure is engine_error (retried); a session budget
(rollout.max_turns calls, max_context_tokens) ends the episode as max_turns / max_tokens, scored with what the
program returns (0 if it raises).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import json
import os
import shlex
import shutil
import signal
import sys
import time
from pathlib import Path
from typing import Any

from agentrl import subreaper
from agentrl.agent_env import AgentEnv
from agentrl.engine.protocol import SamplingParams
from agentrl.errors import ConfigError
from agentrl.gateway import AgentClient, Gateway, SessionLimits
from agentrl.types import TerminationReason as TR
from agentrl.types import user

CMD = "cmd:"
"""Prefix of an agent given as a command line: "cmd:python my_agent.py --flag" (CommandAgent)."""
STDERR_TAIL = 500
"""Characters of a failed command's stderr kept in the episode's termination detail."""
SUBREAPER = subreaper.__file__
"""The wrapper a command runs under, so that nothing it starts outlives it (agentrl/subreaper.py)."""
REAP_S = 10.0
"""Seconds a stopped command's subreaper may take to kill its tree before the process group is killed."""

_modules: dict[str, Any] = {}
_task_files: dict[tuple[str, int], list] = {}  # (path, mtime) -> tasks of the last JSONL file read
_gateways: dict[tuple[int, int, int], list] = {}  # (engine, renderer, loop) -> [Gateway, sessions, start task]


def split_ref(ref: str) -> tuple[str, str]:
    """"my_agent.py:run" -> ("my_agent.py", "run"); the function name defaults to "run"."""
    where, sep, attr = ref.rpartition(":")
    if not sep or not attr.isidentifier():
        return ref, "run"
    return where, attr


def load_agent(ref: str) -> tuple[Any, Any]:
    """(module, function) of an agent reference "path/to/file.py:fn" or "package.module:fn"; ConfigError says
    what is missing."""
    where, attr = split_ref(ref)
    if where.endswith(".py") or "/" in where:
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"agent file {where!r} does not exist (looked for {path})")
        module = _modules.get(str(path))
        if module is None:
            name = "agentrl_external_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            try:
                spec.loader.exec_module(module)
            except Exception as e:
                raise ConfigError(f"importing agent file {where!r} failed: {type(e).__name__}: {e}") from None
            _modules[str(path)] = module
    else:
        try:
            module = importlib.import_module(where)
        except ImportError as e:
            raise ConfigError(f"cannot import agent module {where!r}: {e}") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        public = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        raise ConfigError(f"{where!r} has no function {attr!r} (it has: {', '.join(public) or 'none'}); expected "
                          f"`async def {attr}(task, client) -> reward`")
    return module, fn


def absolute_ref(ref: str) -> str:
    """The reference with a file path made absolute (so it loads from any working directory, any worker)."""
    where, attr = split_ref(ref)
    if where.endswith(".py") or "/" in where:
        where = str(Path(where).expanduser().resolve())
    return f"{where}:{attr}"


def command_argv(command: str) -> list[str]:
    """The argv of a command line, checked and made location-independent: the program must be on PATH (a bare
    name, kept bare) or an existing executable file; every relative argument that names an existing file (the
    program's path, its script) becomes absolute, so workers in other directories run the same thing."""
    try:
        argv = shlex.split(command)
    except ValueError as e:
        raise ConfigError(f"cannot split the agent command {command!r}: {e}") from None
    if not argv:
        raise ConfigError('the agent command is empty; expected e.g. "external:cmd:python my_agent.py"')
    program = argv[0]
    if "/" not in program:
        if shutil.which(program) is None:
            raise ConfigError(f"agent command program {program!r} is not on PATH")
    else:
        path = Path(program).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"agent command program {program!r} does not exist (looked for {path})")
        if not os.access(path, os.X_OK):
            raise ConfigError(f"agent command program {program!r} is not executable (chmod +x it, or name its "
                              f"interpreter: cmd:python {program})")
        argv[0] = str(path)
    return argv[:1] + [str(Path(a).resolve()) if not a.startswith("-") and Path(a).exists() else a for a in argv[1:]]


def resolve_agent(ref: str) -> str:
    """The location-independent form of an agent reference ("cmd:<command>" or "file.py:fn"), after checking it
    loads or runs; ConfigError says what is wrong."""
    if ref.startswith(CMD):
        return CMD + shlex.join(command_argv(ref[len(CMD):]))
    load_agent(ref)
    return absolute_ref(ref)


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


class AgentFailed(Exception):
    """An agent program's failure, already in words (the episode's termination detail)."""


class PythonAgent:
    """The program is a function `run(task, client)`; its module may carry TASKS or task(seed)."""

    def __init__(self, ref: str):
        self.module, self.fn = load_agent(ref)
        self.tasks, self.make_task = getattr(self.module, "TASKS", None), getattr(self.module, "task", None)
        self.note = ""

    async def __call__(self, task: Any, client: AgentClient) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(task, client)
        return await asyncio.to_thread(self.fn, task, client)


class CommandAgent:
    """The program is a command line, started once per episode in its own session (process group).

    Its environment is this process's plus OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL and AGENTRL_TASK; the
    task JSON is also written to its stdin. The reward is the last non-empty line of its stdout. However the call
    ends (exit, deadline, cancellation), everything it started is killed before it returns, processes that left
    its session included: it runs under agentrl/subreaper.py, which reaps every orphan below it (Linux), and the
    process group is killed after that.
    """

    tasks = make_task = None

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.note = ""  # exit code and stderr tail of the last run, for any env_error detail

    async def __call__(self, task: Any, client: AgentClient) -> Any:
        payload = json.dumps(task)
        env = {**os.environ, "OPENAI_BASE_URL": client.base_url, "OPENAI_API_KEY": client.api_key,
               "OPENAI_MODEL": client.model, "AGENTRL_TASK": payload}
        self.note = ""
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-I", SUBREAPER, "--", *self.argv, stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env, start_new_session=True)
        try:
            out, err = await proc.communicate((payload + "\n").encode())
        finally:
            if proc.returncode is None:
                self.note = "its process group was killed"
                try:
                    proc.terminate()  # the subreaper kills every process below it, then ends
                except ProcessLookupError:
                    pass  # it ended just now
                try:
                    await asyncio.wait_for(asyncio.shield(proc.wait()), REAP_S)
                except TimeoutError:
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: pgid == pid; also any children it left
            except ProcessLookupError:
                pass
            if proc.returncode is None:
                await proc.wait()
        tail = err.decode(errors="replace")[-STDERR_TAIL:].strip()
        self.note = f"exit code {proc.returncode}; stderr: {tail!r}"
        if proc.returncode != 0:
            raise AgentFailed(f"the agent command exited non-zero ({self.note})")
        lines = [x.strip() for x in out.decode(errors="replace").splitlines() if x.strip()]
        return parse_reward(lines[-1] if lines else "", self.note)


def parse_reward(line: str, note: str) -> Any:
    """A command's reward line: a number, or a JSON object with a "reward" key (kept whole: the rest is info)."""
    try:
        return float(line)
    except ValueError:
        pass
    try:
        value = json.loads(line)
    except ValueError:
        value = None
    if isinstance(value, dict) and "reward" in value:
        return value
    raise AgentFailed(f"the agent command's last stdout line {line!r:.200} is not a number or a JSON object with "
                      f'"reward" ({note})')


def make_program(agent: str) -> PythonAgent | CommandAgent:
    """The program an agent reference names: "cmd:<command line>" or "file.py:fn" / "module:fn"."""
    if agent.startswith(CMD):
        return CommandAgent(command_argv(agent[len(CMD):]))
    return PythonAgent(absolute_ref(agent))


async def _acquire(engine: Any, renderer: Any) -> Gateway:
    """The gateway of this engine on this event loop, started by the first session that needs it."""
    key = (id(engine), id(renderer), id(asyncio.get_running_loop()))
    entry = _gateways.get(key)
    if entry is None:
        gw = Gateway(engine, renderer)
        entry = _gateways[key] = [gw, 0, asyncio.ensure_future(gw.start())]
    entry[1] += 1
    try:
        await asyncio.shield(entry[2])
    except BaseException:
        await _release(entry[0])
        raise
    return entry[0]


async def _release(gw: Gateway) -> None:
    """One session fewer; the last one stops the gateway (nothing outlives the episodes that use it)."""
    for key, entry in list(_gateways.items()):
        if entry[0] is gw:
            entry[1] -= 1
            if entry[1] == 0:
                del _gateways[key]
                await asyncio.gather(entry[2], return_exceptions=True)
                await gw.close()


class ExternalEnv(AgentEnv):
    """Runs an agent program against its own gateway session; the reward is what the program returns.

    ## Task
    One of `tasks` or the module's `TASKS` (drawn with the episode's seed), `task(seed)`, or {"seed": seed}.

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
        self.program = make_program(agent)
        self.tasks = read_tasks(tasks) if tasks else self.program.tasks
        self.task: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw the task; the messages are only for display (the program writes its own)."""
        super().reset(seed=seed)
        tasks, make = self.tasks, self.program.make_task
        if isinstance(tasks, (list, tuple)) and tasks:
            index = int(self.np_random.integers(len(tasks)))
            self.task, task_id = tasks[index], str(index)
        elif callable(make):
            self.task, task_id = make(seed), str(seed)
        else:
            self.task, task_id = {"seed": seed}, str(seed)
        if isinstance(self.task, dict) and "id" in self.task:
            task_id = str(self.task["id"])
        return [user(str(self.task))], {"task_id": task_id}

    def step(self, action: str):
        """Not used: the agent program drives the episode (see run_agent)."""
        raise NotImplementedError("ExternalEnv is driven by its agent program; the agent loop calls run_agent")

    async def run_agent(self, engine: Any, renderer: Any, cfg: Any, traj: Any, *, seed: int | None,
                        options: dict | None, sampling_seed: int | None) -> None:
        """One episode: reset, open a session, run the program with the episode's deadline, fill `traj` with
        the session's segments, reward and termination. Never raises (failures end the episode)."""
        start = time.monotonic()
        try:
            _, info = self.reset(seed=seed, options=options)
        except Exception as e:  # noqa: BLE001 - a broken task source fails this episode, not the run
            traj.termination, traj.termination_detail = TR.ENV_ERROR, f"drawing the task failed: {type(e).__name__}: {e}"
            return
        traj.task_id = info["task_id"]
        try:
            gw = await _acquire(engine, renderer)
        except Exception as e:  # noqa: BLE001 - no gateway (no free port): this episode is an infra failure
            traj.termination, traj.termination_detail = TR.ENV_ERROR, f"starting the gateway failed: {type(e).__name__}: {e}"
            return
        session = gw.open_session(
            session_id=traj.id, sampling_seed=sampling_seed, fixed_sampling=True,
            sampling=SamplingParams(temperature=cfg.temperature, top_p=cfg.top_p, top_k=cfg.top_k),
            limits=SessionLimits(max_calls=cfg.max_turns, max_context_tokens=cfg.max_context_tokens,
                                 max_new_tokens=cfg.max_new_tokens))
        result, failure = None, None
        try:
            client = AgentClient(session.base_url, session.api_key, gw.model_name)
            result = await asyncio.wait_for(self.program(self.task, client), cfg.timeout_s)
        except TimeoutError:
            failure = f"the agent program ran past the episode deadline ({cfg.timeout_s:g}s); its session was closed"
        except AgentFailed as e:
            failure = str(e)
        except Exception as e:  # noqa: BLE001 - the program's crash is this episode's ending
            failure = f"the agent program raised {type(e).__name__}: {e}"
        finally:
            gw.close_session(session.id)
            await _release(gw)
        self._finish(traj, session, result, failure)
        note = self.program.note  # a command's exit code and stderr tail (or that it was killed)
        if traj.termination is TR.ENV_ERROR and note and note not in traj.termination_detail:
            traj.termination_detail += f" ({note})"
        traj.metrics["timing/episode_s"] = time.monotonic() - start

    def _finish(self, traj: Any, session: Any, result: Any, failure: str | None) -> None:
        """Reward and termination from the program's outcome and the session's record."""
        traj.segments, traj.turns = session.segments()
        reward, info = result, {}
        if isinstance(result, dict):
            reward, info = result.get("reward"), {k: v for k, v in result.items() if k != "reward"}
        valid = isinstance(reward, (int, float)) and reward == reward  # a number, not NaN
        if session.ending is not None and session.ending[0] == "engine_error":
            traj.termination, traj.termination_detail = TR.ENGINE_ERROR, session.ending[1]
        elif session.ending is not None:
            traj.termination, traj.termination_detail = TR(session.ending[0]), session.ending[1]
            traj.reward = float(reward) if valid and failure is None else 0.0
        elif failure is not None:
            traj.termination, traj.termination_detail = TR.ENV_ERROR, failure
        elif not valid:
            traj.termination = TR.ENV_ERROR
            traj.termination_detail = f"the agent program returned {result!r:.200}; expected a number (the reward)"
        elif not traj.segments:
            traj.termination, traj.termination_detail = TR.ENV_ERROR, "the agent program made no model call"
        else:
            traj.termination, traj.reward = TR.DONE, float(reward)
        traj.reward_info = {k: v for k, v in info.items() if isinstance(v, (str, int, float, bool, type(None)))}
        traj.metrics.update({
            "rollout/turns": len(traj.turns),
            "rollout/forks": max(len(traj.segments) - 1, 0),
            "rollout/format_errors": 0,
            "rollout/length_truncated_actions": sum(t.finish_reason == "length" for t in traj.turns),
            "rollout/tokens": traj.num_tokens,
            "rollout/action_tokens": traj.num_action_tokens,
            **session.metrics(),
        })
