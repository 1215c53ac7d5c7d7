"""The SWE env's evaluation hook: its task list and splits, task validation, the gold/empty oracles and the
fields its records carry. The generic evaluator (agentrl.evaluation) calls it; an episode the agent loop ended on
its own budget is graded as it stands by the env itself (SweEnv.end_episode).

Tasks are validated when the job loads them, so a broken task is one clear error instead of a silent 0 %:
the gold patch and the test patch must apply to the snapshot, and the test patch must create every
FAIL_TO_PASS test it names.
"""

from __future__ import annotations

import re
from typing import Any

import agentrl.envs.swe.sources as sources
from agentrl.envs.swe.env import SweEnv
from agentrl.envs.swe.patches import PatchError, apply_patch
from agentrl.envs.swe.tasks import Task, TaskError

from agentrl.evaluation import EvalConfig, EvalHook, EvalTask
from agentrl.rollout.agent_loop import ScriptedPolicy
from agentrl.rollout.seeds import name_seed
from agentrl.tool_calls import format_call


def _test_defined(files: dict[str, str], node_id: str) -> bool:
    """True if pytest node id "path::[Class::]test[param]" names a file and a def that exist in `files`."""
    path, _, rest = node_id.partition("::")
    if path not in files:
        return False
    if not rest:
        return True
    names = [re.sub(r"\[.*\]$", "", part) for part in rest.split("::")]
    text = files[path]
    return all(re.search(rf"^\s*(async\s+def|def|class)\s+{re.escape(n)}\b", text, re.M) for n in names)


def validate_task(task: Task) -> None:
    """Raise TaskError (naming the task) when the gold patch or the test patch does not apply, or a
    FAIL_TO_PASS test is not created by the test patch."""
    where = f"task {task.instance_id}"
    try:
        apply_patch(task.files, task.patch)
    except PatchError as e:
        raise TaskError(f"{where}: the gold patch does not apply to the snapshot: {e}") from None
    try:
        with_tests = apply_patch(task.files, task.test_patch)
    except PatchError as e:
        raise TaskError(f"{where}: the test patch does not apply to the snapshot: {e}") from None
    missing = [t for t in task.FAIL_TO_PASS if not _test_defined(with_tests, t)]
    if missing:
        raise TaskError(f"{where}: FAIL_TO_PASS names test(s) the test patch does not create: {', '.join(missing)}")


class SweEvalHook(EvalHook):
    """Tasks by instance id from a split of the hook's task source (or --tasks); oracles gold (must resolve 100 %),
    empty (must resolve 0 %) and the scripted expert, each a ScriptedPolicy run through the agent loop like a model."""

    oracles = ("gold", "empty", "expert")
    record_fields = ("f2p_pass", "p2p_pass", "resolution", "patch", "suspicious", "grading_reason", "grading_mode",
                     "grading_refused")

    source: str = "corpus"
    """The task source when --tasks is not given (sources.SOURCES); the presets set it."""

    def __init__(self) -> None:
        self.pool = None
        self._tasks: list[Task] = []

    def tasks(self, job: EvalConfig) -> list[EvalTask]:
        """The split's tasks (the hook's source, or --tasks: a JSONL, SWE-bench JSONL + --snapshots), validated;
        each task's seed is name_seed(instance id), so its samples are seeded like a training group's members."""
        # as training finds them: SWE-bench records read their repos from --snapshots, else snapshots/ beside the JSONL
        tasks = sources.load(job.tasks_path or self.source, job.snapshots, job.split or "test",
                             snapshots_option="--snapshots DIR")
        self._tasks = tasks[: job.limit]
        for task in self._tasks:
            validate_task(task)
        return [eval_task(t) for t in self._tasks]

    def env_kwargs(self, job: EvalConfig, tasks: list[EvalTask]) -> dict[str, Any]:
        """The validated task list and one sandbox pool shared by all episodes (the loop owns the budgets), with
        room for every episode's sandboxes at once (SweEnv.sandboxes_per_episode: a real package's grade holds two)."""
        from agentrl.sandboxes import SandboxPool
        from agentrl.sandboxes.base import SandboxConfigError

        per = SweEnv.sandboxes_per_episode({"tasks": self._tasks})
        try:
            self.pool = SandboxPool(backend=job.backend, max_concurrency=max(1, job.concurrency) * per, warm=0)
        except SandboxConfigError as e:
            why = ": a real package's grade holds two" if per > 1 else ""
            raise SandboxConfigError(f"{e} (--concurrency {job.concurrency} × {per} sandbox(es) per episode{why}; "
                                     "lower --concurrency)") from None
        return {"tasks": self._tasks, "pool": self.pool}

    def policy(self, job: EvalConfig) -> ScriptedPolicy:
        """gold: write the fixed files in the agent's sandbox, then submit; empty: submit at once; expert: the
        env's scripted expert."""
        if job.oracle == "gold":
            return ScriptedPolicy(_gold, name="the gold oracle")
        if job.oracle == "empty":
            return ScriptedPolicy(lambda env: format_call("submit", {}), name="the empty oracle")
        return super().policy(job)

    def close(self) -> None:
        """Close the shared sandbox pool."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None


def eval_task(task: Task) -> EvalTask:
    """The EvalTask of an SWE task: reset by instance id, seeded by it."""
    return EvalTask(id=task.instance_id, seed=name_seed(task.instance_id), options={"instance_id": task.instance_id},
                    split=task.split)


def _gold(env) -> str:
    """The gold oracle's one action: the fixed files written straight into the agent's sandbox (not through the
    agent's tools: this checks the grader, not the tools), then submit."""
    from agentrl.envs.swe.grading.grader import REPO

    t = env.task
    fixed = t.fixed_files()
    for path in sorted(set(t.files) | set(fixed)):
        if fixed.get(path) != t.files.get(path):
            if path in fixed:
                env.sandbox.write_file(f"{REPO}/{path}", fixed[path])
            else:
                env.sandbox.exec(f"rm -f -- '{path}'", cwd=REPO)
    return format_call("submit", {})
