"""swe_real's evaluation hook: swe_lite's (oracles gold / empty / expert, validated tasks), fed swe_real's tasks."""

from __future__ import annotations

from agentrl.envs.swe_lite.evaluation import SweLiteEvalHook, eval_task, validate_task
from agentrl.envs.swe_real.env import _load_user
from agentrl.envs.swe_real.tasks import load_real

from agentrl.evaluation import EvalConfig, EvalTask


class SweRealEvalHook(SweLiteEvalHook):
    """Tasks of a split of the shipped swe_real file (or of --tasks), each validated before the job starts."""

    def tasks(self, job: EvalConfig) -> list[EvalTask]:
        """The split's tasks, validated; seeded by instance id like swe_lite's."""
        split = job.split or "test"
        tasks = (load_real(None, split) if job.tasks_path is None and job.snapshots is None
                 else _load_user(job.tasks_path, job.snapshots, split))
        self._tasks = tasks[: job.limit]
        for task in self._tasks:
            validate_task(task)
        return [eval_task(t) for t in self._tasks]

