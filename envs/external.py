"""external: train an agent program you already have, through the OpenAI-compatible session gateway.

    agentrl train --env external:my_agent.py:run          # a file, and the function in it
    agentrl train --env external:my_pkg.agents:run        # an importable module

The program is a function ``async def run(task, client) -> reward`` (a plain ``def`` runs in a worker thread,
so a synchronous OpenAI client works too). `client` is an agentrl.gateway.AgentClient: `client.base_url`
(…/sessions/<id>/v1) and `client.api_key` go to any OpenAI-compatible client, or call `await
client.chat(messages, ...)`. What `run` returns is the reward: a number, or a dict with a "reward" key (the
rest is kept as reward_info). Tasks come from the module: a list `TASKS` (an episode draws one with its
seed), or a function `task(seed)`; without either the task is ``{"seed": seed}``.

Every call the program makes is recorded token-in/token-out (agentrl.gateway.session): the trajectory holds
the exact ids the engine sampled. Failures follow the one failure table: the program raising, returning a
non-number, making no model call, or running past the episode deadline is env_error (masked, never trained
as 0); an engine failure is engine_error (retried); a session budget (rollout.max_turns calls,
max_context_tokens) ends the episode as max_turns / max_tokens, scored with what the program returns (0 if
it raises).
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import importlib.util
import inspect
import time
from pathlib import Path
from typing import Any

from agentrl.agent_env import AgentEnv
from agentrl.errors import ConfigError
from agentrl.gateway import AgentClient, Gateway, SessionLimits
from agentrl.rollout.engine import SamplingParams
from agentrl.types import TerminationReason as TR
from agentrl.types import user

_modules: dict[str, Any] = {}
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
    One of the module's `TASKS` (drawn with the episode's seed), `task(seed)`, or {"seed": seed}.

    ## Actions / Observations
    The program's chat-completion calls; the trajectory records them token-in/token-out.

    ## Reward
    The number `run(task, client)` returns (or its dict's "reward").

    ## Episode End
    When `run` returns, raises (env_error), or runs past rollout.episode_timeout_s (env_error).

    ## Arguments
    agent: "path/to/file.py:fn" or "package.module:fn".
    """

    def __init__(self, agent: str):
        self.agent = absolute_ref(agent)
        self.module, self.fn = load_agent(self.agent)
        self.task: Any = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        """Draw the task; the messages are only for display (the program writes its own)."""
        super().reset(seed=seed)
        tasks, make = getattr(self.module, "TASKS", None), getattr(self.module, "task", None)
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

    async def _call(self, client: AgentClient) -> Any:
        if inspect.iscoroutinefunction(self.fn):
            return await self.fn(self.task, client)
        return await asyncio.to_thread(self.fn, self.task, client)

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
            result = await asyncio.wait_for(self._call(AgentClient(session.base_url, session.api_key)), cfg.timeout_s)
        except TimeoutError:
            failure = f"the agent program ran past the episode deadline ({cfg.timeout_s:g}s); its session was closed"
        except Exception as e:  # noqa: BLE001 - the program's crash is this episode's ending
            failure = f"the agent program raised {type(e).__name__}: {e}"
        finally:
            gw.close_session(session.id)
            await _release(gw)
        self._finish(traj, session, result, failure)
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
