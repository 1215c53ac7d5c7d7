"""swe_lite's evaluation hook: its task list and splits, task validation, the gold/empty oracles, and grading
of an episode the agent loop ended on its own budget. The generic evaluator (agentrl.evaluation) calls it.

Tasks are validated when the job loads them, so a broken task is one clear error instead of a silent 0 %:
the gold patch and the test patch must apply to the snapshot, and the test patch must create every
FAIL_TO_PASS test it names.
"""

from __future__ import annotations

import asyncio
import re
from typing import Any

from agentrl.envs.swe_lite.patches import PatchError, apply_patch
from agentrl.envs.swe_lite.tasks import Task, TaskError, load_any

from agentrl.errors import SandboxError
from agentrl.evaluation import EvalConfig, EvalHook, EvalTask


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


class SweLiteEvalHook(EvalHook):
    """Tasks by instance id from a split; oracles gold (must resolve 100 %) and empty (must resolve 0 %)."""

    oracles = ("gold", "empty", "expert")

    def __init__(self) -> None:
        self.pool = None
        self._tasks: list[Task] = []

    def tasks(self, job: EvalConfig) -> list[EvalTask]:
        """The split's tasks (shipped corpus, --tasks JSONL, or SWE-bench JSONL + --snapshots), validated."""
        # as training finds them: SWE-bench records read their repos from --snapshots, else snapshots/ beside the JSONL
        tasks = load_any(job.tasks_path, job.snapshots, job.split or "test", snapshots_option="--snapshots DIR")
        self._tasks = tasks[: job.limit]
        for task in self._tasks:
            validate_task(task)
        return [EvalTask(id=t.instance_id, options={"instance_id": t.instance_id}, split=t.split) for t in self._tasks]

    def env_kwargs(self, job: EvalConfig, tasks: list[EvalTask]) -> dict[str, Any]:
        """The validated task list, one sandbox pool shared by all episodes, and the job's budgets."""
        from agentrl.sandboxes import SandboxPool

        self.pool = SandboxPool(backend=job.backend, max_concurrency=max(1, job.concurrency), warm=0)
        return {"tasks": self._tasks, "pool": self.pool, "max_steps": job.max_turns, "wall_clock_s": job.wall_clock_s}

    async def oracle(self, env, task: EvalTask, kind: str, sample: int) -> dict[str, Any]:
        """gold: write the fixed files in the agent sandbox; empty: change nothing; then submit and grade."""
        if kind == "expert":
            return await super().oracle(env, task, kind, sample)
        return await asyncio.to_thread(self._patch_oracle, env, task, kind, sample)

    def _patch_oracle(self, env, task: EvalTask, kind: str, sample: int) -> dict[str, Any]:
        from agentrl.envs.swe_lite.grading import REPO

        from agentrl.tool_calls import format_call

        try:
            env.reset(seed=sample, options=task.options)
            t = env.task
            if kind == "gold":
                fixed = t.fixed_files()
                for path in sorted(set(t.files) | set(fixed)):
                    if fixed.get(path) != t.files.get(path):
                        if path in fixed:
                            env.sandbox.write_file(f"{REPO}/{path}", fixed[path])
                        else:
                            env.sandbox.exec(f"rm -f -- '{path}'", cwd=REPO)
            _, reward, _, _, info = env.step(format_call("submit", {}))
        except SandboxError as e:
            return {"reward": 0.0, "termination": "sandbox_error", "turns": 0, "info": {"infra_error": True},
                    "error": f"{type(e).__name__}: {e}", "transcript": []}
        return {"reward": reward, "termination": info.get("termination", "done"), "turns": 1, "info": info,
                "transcript": [{"role": "assistant", "content": f"(oracle {kind}) submit"}]}

    def finish(self, env, termination: str) -> dict[str, Any] | None:
        """Grade the repository as it stands when the loop's own budget (tokens, time) ended the episode."""
        if getattr(env, "sandbox", None) is None:
            return None
        try:
            return env.finish(f"loop_{termination}", termination)
        except SandboxError as e:
            return {"infra_error": True, "error": f"{type(e).__name__}: {e}"}

    def close(self) -> None:
        """Close the shared sandbox pool."""
        if self.pool is not None:
            self.pool.close()
            self.pool = None
