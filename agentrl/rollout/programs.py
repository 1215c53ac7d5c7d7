"""Agent programs: an agent you already have plays an episode through its own OpenAI-compatible gateway session.

    agentrl train --env external:my_agent.py:run          # a file, and the function in it
    agentrl train --env external:my_pkg.agents:run        # an importable module
    agentrl train --env "external:cmd:python my_agent.py --flag"   # a command line (CommandAgent)

An env that sets `AgentEnv.agent_program` (agentrl.envs.external does) has its episodes played by the program
instead of the loop's policy: `rollout.agent_loop.run_episode` resets the env (its info["task"] is the
program's task), then `play` starts a gateway in front of the episode's engine, opens one session with the
loop's budgets (rollout.max_turns calls, max_context_tokens, max_new_tokens per call) and sampling, runs the
program until it returns or the episode deadline, and closes the gateway: nothing outlives the episode. The
agent loop records the outcome with the same code as any other episode.

A Python program is ``async def run(task, client) -> reward``, or a plain ``def`` (run in a daemon thread of
its own, so a blocking client works, and a call that never returns neither holds the other episodes' worker
threads nor keeps the process from exiting). `client` is an agentrl.gateway.AgentClient. What `run` returns is
the reward: a number, or a dict with a "reward" key (the rest is kept as reward_info). The agent file's folder
(or, for a module, the current folder) is appended to the import path, so the agent imports its sibling modules.

A command line runs once per episode as a subprocess with OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL and
AGENTRL_TASK (the task as JSON, also written to its stdin) set; the last non-empty line of its stdout is the
reward (a number, or a JSON object with a "reward" key). Everything it started is killed when the episode ends.

Outcomes follow the one failure table: the program raising (a command exiting non-zero), returning a
non-number, making no model call, or running past the episode deadline is env_error (masked, never trained as
0); an engine failure is engine_error (retried); a session budget ends the episode as max_turns / max_tokens,
scored with what the program returns (0 if it raises).
"""

from __future__ import annotations

import asyncio
import ctypes
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
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import agentrl.subreaper as subreaper
from agentrl.engine.protocol import Engine, SamplingParams
from agentrl.errors import ConfigError
from agentrl.gateway import AgentClient, Gateway, SessionLimits
from agentrl.registry import import_here
from agentrl.rollout.chat import ChatRenderer
from agentrl.types import Segment, Turn
from agentrl.types import TerminationReason as TR

CMD = "cmd:"
"""Prefix of an agent given as a command line: "cmd:python my_agent.py --flag" (CommandAgent)."""
STDERR_TAIL = 500
"""Characters of a failed command's stderr kept in the episode's termination detail."""
SUBREAPER = subreaper.__file__
"""The wrapper a command runs under, so that nothing it starts outlives it (agentrl/subreaper.py)."""
REAP_S = 10.0
"""Seconds a stopped command's subreaper may take to kill its tree before the process group is killed."""

_modules: dict[str, Any] = {}  # agent file path -> its module, executed once per process
_modules_lock = threading.Lock()


def split_ref(ref: str) -> tuple[str, str]:
    """"my_agent.py:run" -> ("my_agent.py", "run"); the function name defaults to "run"."""
    where, sep, attr = ref.rpartition(":")
    if not sep or not attr.isidentifier():
        return ref, "run"
    return where, attr


def load_agent(ref: str) -> tuple[Any, Any]:
    """(module, function) of an agent reference "path/to/file.py:fn" or "package.module:fn"; ConfigError says
    what is missing. The file's folder (for a module: the current folder, as `python -m` has it) is appended to
    the import path first, so the agent imports its sibling modules."""
    where, attr = split_ref(ref)
    if where.endswith(".py") or "/" in where:
        path = Path(where).expanduser().resolve()
        if not path.is_file():
            raise ConfigError(f"agent file {where!r} does not exist (looked for {path})")
        with _modules_lock:  # episodes' envs are made in worker threads: the file must run once, not once each
            if str(path.parent) not in sys.path:
                sys.path.append(str(path.parent))
            module = _modules.get(str(path)) or _exec_file(path, where)
            _modules[str(path)] = module
    else:
        try:
            module = import_here(where)
        except ImportError as e:
            raise ConfigError(f"cannot import agent module {where!r}: {e} (the current folder and PYTHONPATH are "
                              "searched)") from None
    fn = getattr(module, attr, None)
    if not callable(fn):
        public = [n for n in dir(module) if not n.startswith("_") and callable(getattr(module, n))]
        raise ConfigError(f"{where!r} has no function {attr!r} (it has: {', '.join(public) or 'none'}); expected "
                          f"`async def {attr}(task, client) -> reward`")
    return module, fn


def _exec_file(path: Path, where: str) -> Any:
    """Run an agent file as a module of its own (named after its path); ConfigError if it raises."""
    name = "agentrl_external_" + hashlib.sha256(str(path).encode()).hexdigest()[:12]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as e:
        raise ConfigError(f"importing agent file {where!r} failed: {type(e).__name__}: {e}") from None
    return module


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


class AgentFailed(Exception):
    """An agent program's failure, already in words (the episode's termination detail)."""


class ProgramStopped(BaseException):
    """Raised inside a plain-def program's thread once its episode is over (a BaseException, so an agent's
    `except Exception` retry loop does not swallow it)."""


async def in_daemon_thread(fn: Any, *args: Any) -> Any:
    """`fn(*args)` in a daemon thread of its own; returns or raises what it does.

    Unlike asyncio.to_thread (the shared default executor, whose threads the interpreter joins at exit), a call
    that never returns neither takes a worker thread from the other episodes nor keeps the process alive at
    exit. When the awaiting task is cancelled (the episode deadline), ProgramStopped is raised in the thread:
    that stops Python code at once; a call blocked in C (a sleep, a read without a timeout) runs on until it
    returns, and its gateway calls fail from then on (the session is closed)."""
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    lock = threading.Lock()
    state = {"phase": "new"}  # new -> running -> finished, or new -> stopped; the stop is sent only while running

    def settle(ok: bool, value: Any) -> None:
        if not done.done():
            done.set_result(value) if ok else done.set_exception(value)

    def target() -> None:
        try:  # a stop sent while running lands inside this try, never in threading's own code
            with lock:
                if state["phase"] == "stopped":
                    return
                state["phase"] = "running"
            try:
                outcome = (True, fn(*args))
            except BaseException as e:  # noqa: BLE001 - handed to the awaiting task as the program's failure
                outcome = (False, e)
            with lock:
                state["phase"] = "finished"
            loop.call_soon_threadsafe(settle, *outcome)
        except BaseException:  # noqa: BLE001 - the stop arrived, or the loop has closed: nobody is waiting
            pass

    thread = threading.Thread(target=target, name=f"agent program {getattr(fn, '__name__', fn)}", daemon=True)
    thread.start()
    try:
        return await done
    except asyncio.CancelledError:
        with lock:
            if state["phase"] == "running":
                stop = ctypes.py_object(ProgramStopped)
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread.ident), stop)
            elif state["phase"] == "new":
                state["phase"] = "stopped"
        raise


class PythonAgent:
    """The program is a function `run(task, client)` (async, or a plain def run by in_daemon_thread)."""

    def __init__(self, ref: str):
        self.module, self.fn = load_agent(ref)
        self.note = ""

    async def __call__(self, task: Any, client: AgentClient) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(task, client)
        try:
            return await in_daemon_thread(self.fn, task, client)
        except asyncio.CancelledError:
            self.note = ("ProgramStopped was raised in its thread; a plain def blocked in a call runs on until the "
                         "call returns: give blocking calls a timeout")
            raise


class CommandAgent:
    """The program is a command line, started once per episode in its own session (process group).

    Its environment is this process's plus OPENAI_BASE_URL, OPENAI_API_KEY, OPENAI_MODEL and AGENTRL_TASK; the
    task JSON is also written to its stdin. The reward is the last non-empty line of its stdout. However the call
    ends (exit, deadline, cancellation), everything it started is killed before it returns, processes that left
    its session included: it runs under agentrl/subreaper.py, which reaps every orphan below it (Linux), and the
    process group is killed after that.
    """

    module = None  # no TASKS or task(seed): its tasks are env.kwargs.tasks or the seed

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


@dataclass
class ProgramOutcome:
    """How a program's episode ended, with the session's record (the agent loop records it like any episode)."""

    termination: TR
    detail: str = ""
    reward: float = 0.0
    info: dict[str, Any] = field(default_factory=dict)
    segments: list[Segment] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)


async def play(program: Any, task: Any, engine: Engine, renderer: ChatRenderer, *, sampling: SamplingParams,
               limits: SessionLimits, session_id: str, sampling_seed: int | None, deadline: float,
               budget_s: float) -> ProgramOutcome:
    """Run `program(task, client)` against a gateway of its own, one session with `limits` and `sampling` (fixed:
    requests cannot change it), until it returns or `deadline` (time.monotonic(); `budget_s` is the episode's
    budget, for the message); never raises for the program's failures. The gateway is closed before this
    returns, calls in flight included."""
    gateway = Gateway(engine, renderer, drain_s=0.0)
    try:
        await gateway.start()
    except Exception as e:  # noqa: BLE001 - no gateway (no free port): this episode is an infrastructure failure
        return ProgramOutcome(TR.ENV_ERROR, f"starting the gateway failed: {type(e).__name__}: {e}")
    session = gateway.open_session(session_id=session_id, sampling_seed=sampling_seed, fixed_sampling=True,
                                   sampling=sampling, limits=limits)
    result, failure = None, None
    try:
        client = AgentClient(session.base_url, session.api_key, gateway.model_name)
        result = await asyncio.wait_for(program(task, client), max(deadline - time.monotonic(), 0.0))
    except TimeoutError:
        failure = f"the agent program ran past the episode deadline ({budget_s:g}s); its session was closed"
    except AgentFailed as e:
        failure = str(e)
    except Exception as e:  # noqa: BLE001 - the program's crash is this episode's ending
        failure = f"the agent program raised {type(e).__name__}: {e}"
    finally:
        gateway.close_session(session.id)
        await gateway.close()
    out = _outcome(session, result, failure)
    if out.termination is TR.ENV_ERROR and program.note and program.note not in out.detail:
        out.detail += f" ({program.note})"  # a command's exit code and stderr tail (or that it was killed)
    return out


def _outcome(session: Any, result: Any, failure: str | None) -> ProgramOutcome:
    """The ending, reward and info of a program's episode from what it returned (or why it failed) and what
    its session recorded."""
    segments, turns = session.segments()
    reward, info = result, {}
    if isinstance(result, dict):
        reward, info = result.get("reward"), {k: v for k, v in result.items() if k != "reward"}
    valid = isinstance(reward, (int, float)) and reward == reward  # a number, not NaN
    out = ProgramOutcome(TR.DONE, info=info, segments=segments, turns=turns, metrics=session.metrics())
    if session.ending is not None and session.ending[0] == "engine_error":
        out.termination, out.detail = TR.ENGINE_ERROR, session.ending[1]
    elif session.ending is not None:
        out.termination, out.detail = TR(session.ending[0]), session.ending[1]
        out.reward = float(reward) if valid and failure is None else 0.0
    elif failure is not None:
        out.termination, out.detail = TR.ENV_ERROR, failure
    elif not valid:
        out.termination = TR.ENV_ERROR
        out.detail = f"the agent program returned {result!r:.200}; expected a number (the reward)"
    elif not segments:
        out.termination, out.detail = TR.ENV_ERROR, "the agent program made no model call"
    else:
        out.reward = float(reward)
    return out
