"""The SWE env: fix a bug in a Python repo with bash, an editor and submit; graded by hidden tests.

One env for every task source (sources.py): the built-in corpus (the `swe_lite` preset), real packages (the
`swe_real` preset) or a JSONL of your own. Example task (swelite__intervals-0000): "`total_length([(1, 3), (2, 6),
(10, 10)])` returns the wrong result. It gives `3`, but `7` is expected." → view intervals.py → str_replace
`end - start - 1` → run tests → submit.
"""

from __future__ import annotations

import contextlib
import threading
import time
from pathlib import Path
from typing import Any

import agentrl.envs.swe.expert as expert
import agentrl.envs.swe.grading.grader as grading
import agentrl.envs.swe.levels as levels
import agentrl.envs.swe.sources as sources
from agentrl.envs.swe.editor import Editor, SandboxFiles
from agentrl.envs.swe.grading.grader import REPO
from agentrl.envs.swe.observation import bash_observation
from agentrl.envs.swe.tasks import Task, TaskError
from agentrl.sandboxes.base import FileTooLarge
from gymnasium.utils import seeding

from agentrl.agent_env import AgentEnv
from agentrl.errors import SandboxError
from agentrl.tool_calls import FormatError, function_tool
from agentrl.types import Message, tool, user

BASH = function_tool("bash", "Run a shell command in the repo.", {"command": {"type": "string"}})
EDITOR = function_tool(
    "str_replace_editor", "View or edit a file; old_str must occur once.",
    {"command": {"type": "string", "enum": ["view", "str_replace", "insert", "create"]},
     "path": {"type": "string"}, "old_str": {"type": "string"}, "new_str": {"type": "string"},
     "insert_line": {"type": "integer"}, "file_text": {"type": "string"}},
    required=["command", "path"])
DOWNLOAD_CAP_BYTES = 8 << 20  # the agent's repo read back at submit; more is the agent's failure (reward 0)
SUBMIT = function_tool("submit", "Hidden tests grade the fix.", {})
SYSTEM_PROMPT = ("Fix the bug in the issue in the Python repo /workspace/repo: edit the source, not the tests, "
                 "check the fix, then submit. One tool call per turn.")
PROMPT_TOKENS = 348
"""Tokens of the system message (prompt + tool specs + calling convention), SmolLM2 tokenizer; the one place this
count is written (tests/envs/swe_lite/test_prompt_budget.py checks it and holds it ≤ 350)."""


class SweEnv(AgentEnv):
    """Fix the bug described in an issue; reward 1 when every hidden fail-to-pass and pass-to-pass test passes.

    ## Task
    A Python repo with a planted bug and an issue text, from the env's task source (sources.py: the built-in
    corpus, real packages, or your own swe_lite, swe_real or SWE-bench-style JSONL). The repo has one commit, no history and no bytecode. The issue is shown at a
    difficulty level (levels.py): 0 adds the faulty function's source (one-line fixes only), 1 is the issue as
    generated, 2 the symptom only; `level="auto"` starts at 0 and promotes on the recent resolved rate.
    The system message (prompt + tool specs) is PROMPT_TOKENS tokens long with the SmolLM2 tokenizer.
    ## Actions
    One tool call per turn: `bash(command)`, `str_replace_editor(command, path, ...)`, `submit()`.
    ## Observations
    Tool messages: `<returncode>N</returncode><output>...</output>` for bash (head+tail truncated, ANSI stripped),
    editor text otherwise; a user message naming a format error.
    ## Reward
    float(resolved) at the end, 0 before. resolved = all F2P and P2P pass in a fresh sandbox that holds only the
    agent's allowed source changes plus the hidden tests. `shaped_reward=True`: f2p rate if all P2P pass.
    ## Episode End
    Terminated by submit or a dead sandbox (info["infra_error"], which the trainer masks). The agent loop owns
    every other budget (rollout.max_turns, rollout.episode_timeout_s, format errors in a row) and closes the
    episode through `end_episode`: a turn or time budget is graded as the repo stands (`grade_on_truncation`,
    and always when evaluation asks), format errors score 0 without grading.
    ## Arguments
    tasks (list[Task] | a source name: "corpus" or "real" | a JSONL path | None = the preset's `source`),
    snapshots (folder of repo snapshots for SWE-bench-style JSONL), split ("train", or names joined by commas),
    level (0 | 1 | 2 | "auto"), curriculum (a shared levels.Curriculum for "auto"; promote_at, promote_window size
    a private one), backend, pool (a SandboxPool to share), visibility ("hidden" | "visible"), command_timeout_s,
    shaped_reward, grade_on_truncation, grade_timeout_s.
    ## Version History
    v0: initial version; levels and the shortened prompt added without a version bump (level 1 = v0's issue);
    the env's own turn and clock budgets (max_steps, wall_clock_s) gave way to the loop's.
    """

    tools = (BASH, EDITOR, SUBMIT)
    system_prompt = SYSTEM_PROMPT
    source: str = "corpus"
    """The task source when `tasks` is not given (sources.SOURCES); the presets set it."""

    def __init__(self, tasks: list[Task] | str | Path | None = None, split: str | None = "train", *,
                 snapshots: str | Path | None = None, level: int | str = 1, curriculum: levels.Curriculum | None = None,
                 promote_at: float = 0.5, promote_window: int = 16,
                 backend: str = "auto", pool: Any = None, visibility: str = "hidden", command_timeout_s: float = 30.0,
                 shaped_reward: bool = False, grade_on_truncation: bool = True, grade_timeout_s: float = 120.0):
        self.tasks = tasks if isinstance(tasks, list) else sources.load(tasks or self.source, snapshots, split)
        if not self.tasks:
            raise TaskError(f"no tasks in split {split!r} of {tasks if isinstance(tasks, str) else self.source}")
        self.level_setting = levels.check_level(level)
        if self.level_setting == levels.AUTO:
            self.curriculum = curriculum or levels.Curriculum(0, threshold=promote_at, window=promote_window)
        else:
            self.curriculum = None
            if not self._eligible(self.level_setting):
                raise TaskError(f"level {level} needs tasks whose fix is a one-line edit; none of the "
                                f"{len(self.tasks)} tasks of split {split!r} has one (use level 1)")
        self.level = self.curriculum.level if self.curriculum else self.level_setting
        self.backend, self.pool, self.visibility = backend, pool, visibility
        self.command_timeout_s = command_timeout_s
        self.shaped_reward, self.grade_on_truncation = shaped_reward, grade_on_truncation
        self.grade_timeout_s = grade_timeout_s
        self.task: Task | None = None
        self.sandbox = None
        self._done = True
        self._lock = threading.RLock()  # a step the loop gave up on (its deadline) may still run when it closes out

    @classmethod
    def shared_kwargs(cls, kwargs: dict[str, Any]) -> dict[str, Any]:
        """What every env of one training run shares (build_env_factory): one curriculum for level=auto."""
        if kwargs.get("level") != "auto" or kwargs.get("curriculum") is not None:
            return {}
        return {"curriculum": levels.Curriculum(0, threshold=kwargs.get("promote_at", 0.5),
                                                window=kwargs.get("promote_window", 16))}

    @classmethod
    def sandboxes_per_episode(cls, kwargs: dict[str, Any]) -> int:
        """2 where the tasks may hold a pinned real package's (its grade holds the grading sandbox and the suite
        judge's at once), 1 for the built-in corpus (graded in one): AgentEnv.sandboxes_per_episode."""
        tasks = kwargs.get("tasks")
        if isinstance(tasks, list):
            return 2 if any(grading.package_of(t) is not None for t in tasks) else 1
        return 1 if (tasks or cls.source) == "corpus" else 2

    @classmethod
    def summary_metrics(cls, infos: list[dict[str, Any]]) -> dict[str, float]:
        """Step metrics (AgentEnv.summary_metrics): over the graded episodes, the share whose grading was invalid
        (the core adds the suspicious and refused shares, rollout.collector.integrity_metrics); over all, the mean
        level trained on (also under level=auto)."""
        out, graded = {}, [i for i in infos if i.get("grading_valid") or i.get("grading_reason")]
        if graded:
            out["rollout/invalid_grading_share"] = sum(not i.get("grading_valid") for i in graded) / len(graded)
        levels_ = [i["level"] for i in infos if isinstance(i.get("level"), int)]
        if levels_:
            out["rollout/level_mean"] = sum(levels_) / len(levels_)
        return out

    # ---- sandboxes -------------------------------------------------------------------------------------
    def _acquire(self):
        if self.pool is not None:
            return self.pool.acquire()
        from agentrl.sandboxes import open_sandbox

        return open_sandbox(self.backend)

    @contextlib.contextmanager
    def _fresh(self):
        """A second fresh sandbox while it is needed (the suite judge's, beside the grading sandbox)."""
        sandbox = self._acquire()
        try:
            yield sandbox
        finally:
            self._release(sandbox)

    def _release(self, sandbox) -> None:
        if sandbox is None:
            return
        try:
            self.pool.release(sandbox) if self.pool is not None else sandbox.close()
        except Exception:  # a sandbox that fails to close is the pool's and reaper's business, not the episode's
            pass

    def _offered(self) -> list[Task]:
        """The tasks a seeded reset draws from at the current level (auto: a level without tasks offers all)."""
        return self._eligible(self.curriculum.level if self.curriculum else self.level_setting) or self.tasks

    def task_for_seed(self, seed: int) -> str | None:
        """The instance_id reset(seed=seed) picks at the current level, without a sandbox (AgentEnv.task_for_seed)."""
        offered = self._offered()
        rng, _ = seeding.np_random(seed)
        return offered[int(rng.integers(len(offered)))].instance_id

    # ---- gymnasium API ---------------------------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[Message], dict]:
        """Pick a task (options: instance_id or index; else from the seed), start its sandbox repo, show the issue."""
        super().reset(seed=seed)
        self._release(self.sandbox)
        self.sandbox = None
        options = options or {}
        self.level = self.curriculum.level if self.curriculum else self.level_setting
        offered = self._offered()
        if "instance_id" in options:
            by_id = {t.instance_id: t for t in self.tasks}
            if options["instance_id"] not in by_id:
                raise TaskError(f"unknown instance_id {options['instance_id']!r} in this env's {len(self.tasks)} tasks")
            self.task = by_id[options["instance_id"]]
        elif "index" in options:
            self.task = offered[int(options["index"]) % len(offered)]
        else:
            self.task = offered[int(self.np_random.integers(len(offered)))]
        if self.level < min(self.task.difficulty, 1):  # a named task above its level: shown at the lowest it allows
            self.level = 1
        t0 = time.monotonic()
        self.start = t0
        self.steps = self.format_errors = 0
        self.timings = {"reset_s": 0.0, "tools_s": 0.0, "grade_s": 0.0}
        self._done = False
        self._plan: list[str] | None = None
        self.sandbox = self._acquire()
        grading.setup_repo(self.sandbox, self.task.snapshot(self.visibility), git=True)
        self.editor = Editor(SandboxFiles(self.sandbox, REPO), REPO)
        self.timings["reset_s"] = time.monotonic() - t0
        prompt = f"<issue>\n{levels.render(self.task, self.level)}\n</issue>\n\nFix it in {REPO}, then call submit."
        return [self.system_message(), user(prompt)], {"task_id": self.task.instance_id, "split": self.task.split,
                                                       "level": self.level}

    def _eligible(self, level: int) -> list[Task]:
        """The tasks that can be shown at `level` (level 0: one-line fixes; every task from level 1 on)."""
        return [t for t in self.tasks if min(t.difficulty, 1) <= level]

    def step(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Run one tool call; submit or a dead sandbox ends the episode (graded unless infra failed)."""
        with self._lock:
            return self._step(action)

    def _step(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        if self.task is None or self._done:
            raise RuntimeError("call reset() before step() (the episode is over)")
        self.steps += 1
        call = self.parse_action(action)
        if isinstance(call, FormatError):  # the agent loop counts them and ends the episode (end_episode)
            self.format_errors += 1
            return [user(call.message)], 0.0, False, False, {"format_error": True, "error_kind": call.kind,
                                                              "step": self.steps}
        try:
            if call.name == "submit":
                info = self.finish("submitted")
                return [tool("Submitted.", name="submit")], info["reward"], True, False, info
            t0 = time.monotonic()
            if call.name == "bash":
                timeout = self.command_timeout_s
                res = self.sandbox.exec(call.arguments["command"], timeout=timeout, cwd=REPO)
                text = bash_observation(res.exit_code, res.output, timed_out=res.timed_out, timeout=timeout)
            else:
                args = {k: v for k, v in call.arguments.items() if k != "command"}
                text = self.editor(call.arguments["command"], **args)
            self.timings["tools_s"] += time.monotonic() - t0
        except SandboxError as e:
            return self._infra_failure(e)
        return [tool(text, name=call.name)], 0.0, False, False, {"step": self.steps}

    def _infra_failure(self, error: Exception):
        info = self._final_info(None, "sandbox_error", termination="sandbox_error", infra_error=True)
        info["error"] = f"{type(error).__name__}: {error}"
        self._release(self.sandbox)
        self.sandbox = None
        return [user(f"The sandbox failed ({type(error).__name__}); the episode ends.")], 0.0, True, False, info

    def end_episode(self, termination: str, *, grade: bool) -> dict[str, Any] | None:
        """The agent loop ended the episode on its own budget. Format errors score 0 without grading (no usable
        action came). The turn and time budgets (max_turns, timeout) are graded as the repository stands when
        `grade_on_truncation` (the default), else scored 0; any budget is graded when `grade` (evaluation);
        otherwise (max_tokens in training) the episode keeps its rewards so far. Waits for a step the loop gave
        up on; if that step ended the episode, its final info. Raises SandboxError when grading's sandbox fails."""
        with self._lock:
            if self.task is None:
                return None
            if self._done:
                return getattr(self, "last_info", None)
            if termination == "format_errors":
                return {**self._final_info(None, "format_errors", termination="format_errors"), "format_error": True}
            budget = termination in ("max_turns", "timeout")
            if (grade or budget and self.grade_on_truncation) and self.sandbox is not None:
                return self.finish(f"loop_{termination}", termination)
            if not budget:
                return None
            self._release(self.sandbox)
            self.sandbox = None
            return self._final_info(None, f"loop_{termination}", termination=termination)

    def finish(self, exit_reason: str, termination: str = "done") -> dict[str, Any]:
        """Grade the repository as it is now in a fresh sandbox and end the episode; returns the final info.

        Used by submit, and by end_episode when the agent loop ended the episode on a budget.
        Raises SandboxError when the agent's or the grading sandbox fails (the caller marks infra_error).
        """
        with self._lock:
            return self._finish(exit_reason, termination)

    def _finish(self, exit_reason: str, termination: str) -> dict[str, Any]:
        if self._done:
            return self.last_info
        t0 = time.monotonic()
        final, failure = self._collect_final_tree()
        self._release(self.sandbox)
        self.sandbox = None
        if failure is not None:  # the agent's doing: scored 0 with the reason, never masked as infra
            result = grading.failed_grade(failure, start=t0)
        else:
            result = self._grade_fresh(final, t0)
        self.timings["grade_s"] = time.monotonic() - t0
        return self._final_info(result, exit_reason, termination=termination)

    def _grade_fresh(self, final: dict[str, bytes], t0: float) -> grading.Grade:
        """Grade in a fresh sandbox. If that sandbox dies under the repo's tests while a new one works, the
        repo killed it (a memory or process bomb): a 0 with the reason, not an infra error to mask."""
        grader = self._acquire()
        try:
            return grading.grade(grader, self.task, final, timeout=self.grade_timeout_s, judge_sandbox=self._fresh)
        except SandboxError as e:
            error = e
        finally:
            self._release(grader)
        probe = self._acquire()  # raises SandboxError itself when the backend is what failed
        try:
            if not probe.exec("true", timeout=30).ok:
                raise error
        finally:
            self._release(probe)
        return grading.failed_grade(f"the grading sandbox failed while running this repo's tests: "
                                    f"{type(error).__name__}: {error}"[:500], start=t0)

    def _collect_final_tree(self) -> tuple[dict[str, bytes], str | None]:
        """(files, None), or ({}, why) when the agent left a repo that cannot be read back (too large, unreadable).

        Stops the agent's processes and makes its files readable first, so neither a background writer nor a
        chmod 000 can turn the download into a sandbox fault. Raises SandboxError only when the sandbox is gone.
        """
        self.sandbox.exec("kill -9 -1 2>/dev/null; chmod -R u+rwX . 2>/dev/null; true", timeout=30, cwd=REPO)
        try:
            return self.sandbox.download_tree(REPO, max_total_bytes=DOWNLOAD_CAP_BYTES), None
        except FileTooLarge:
            return {}, f"the repository holds more than {DOWNLOAD_CAP_BYTES >> 20} MiB at submit"
        except SandboxError as e:
            if self.sandbox.alive():
                return {}, f"the repository could not be read back: {e}"
            raise

    def _final_info(self, result: grading.Grade | None, exit_reason: str, *, termination: str,
                    infra_error: bool = False) -> dict[str, Any]:
        self._done = True
        reward = result.reward(self.shaped_reward) if result else 0.0
        self.last_info = {
            "task_id": self.task.instance_id, "reward": reward, "resolved": bool(result and result.resolved),
            "f2p_pass": result.f2p if result else 0.0, "p2p_pass": result.p2p if result else 0.0,
            "resolution": result.resolution if result else "NO", "patch": result.patch if result else "",
            "grading_valid": bool(result and result.valid), "grading_reason": result.reason if result else "",
            "suspicious": bool(result and result.suspicious), "findings": list(result.findings) if result else [],
            "grading_mode": result.grading_mode if result else "", "grading_refused": result.refused if result else "",
            "exit_reason": exit_reason, "termination": termination,
            "n_steps": self.steps, "n_format_errors": self.format_errors, "infra_error": infra_error,
            "timings": {**self.timings, "episode_s": time.monotonic() - self.start},
        }
        self._level_outcome(self.last_info)
        return self.last_info

    def _level_outcome(self, info: dict[str, Any]) -> None:
        """Log the episode's level in its final info and count its outcome for the curriculum (infra failures and
        the scripted expert's episodes aside: the warm start must not promote the policy)."""
        info["level"] = self.level
        if self.curriculum is not None and not info["infra_error"] and self._plan is None:
            self.curriculum.record(self.level, info["resolved"])

    def expert_action(self) -> str | None:
        """The scripted expert's next action (view, str_replace from the gold patch, run tests, submit)."""
        if self.task is None or self._done:
            return None
        if self._plan is None:
            self._plan = expert.plan(self.task, REPO, level=self.level)
        return self._plan[min(self.steps, len(self._plan) - 1)]

    def close(self) -> None:
        """Return the sandbox (to the pool, or close it); safe to call twice."""
        self._release(self.sandbox)
        self.sandbox = None

