"""Grading cost: the judge (tests on the host, the repo in a sandboxed worker) vs the in-process pytest harness,
on the same tasks in the same run, interleaved, in one sandbox per backend.

For each task (by default the first of every corpus module) both modes grade the gold patch and the empty
patch; the bench prints the median seconds per grade of each mode, their ratio (judge / harness), and any task
whose verdicts differ between the modes (none is expected).

Run: .venv/bin/python bench/grading_cost.py [--per-module 1] [--backend docker] [--rounds 2] [--tasks PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def main() -> None:
    """Grade, time and compare; exit 1 when the two modes disagree on a verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-module", type=int, default=1, help="tasks per corpus module")
    parser.add_argument("--backend", default="docker", help="docker | bwrap")
    parser.add_argument("--rounds", type=int, default=2, help="times each (task, patch, mode) is graded")
    parser.add_argument("--tasks", default=None, help="a tasks JSONL (default: the shipped corpus)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from agentrl.envs.swe_lite.generate import self_check_sample
    from agentrl.envs.swe_lite.grading import grade
    from agentrl.envs.swe_lite.tasks import load_tasks
    from agentrl.sandboxes import open_sandbox

    tasks = self_check_sample(load_tasks(args.tasks, split=None), args.per_module)
    times: dict[str, list[float]] = {"judge": [], "in_process": []}
    disagree = []
    with open_sandbox(args.backend) as sb:
        grade(sb, tasks[0], changes={}, mode="in_process")  # warm-up: image caches, first docker exec
        for i, task in enumerate(tasks):
            fixed = task.fixed_files()
            patches = {"gold": {p: t for p, t in fixed.items() if task.files.get(p) != t}, "empty": {}}
            for label, changes in patches.items():
                verdicts = {}
                for r in range(args.rounds):
                    modes = ("judge", "in_process") if (i + r) % 2 == 0 else ("in_process", "judge")
                    for mode in modes:
                        t0 = time.perf_counter()
                        g = grade(sb, task, changes=changes, mode=mode)
                        times[mode].append(time.perf_counter() - t0)
                        if g.grading_mode != mode:
                            raise SystemExit(f"{task.instance_id}: asked for {mode}, graded {g.grading_mode}")
                        verdicts.setdefault(mode, (g.resolved, g.f2p, g.p2p))
                if verdicts["judge"] != verdicts["in_process"]:
                    disagree.append(f"{task.instance_id} {label}: judge {verdicts['judge']} vs "
                                    f"harness {verdicts['in_process']}")
            print(f"{i + 1}/{len(tasks)} {task.instance_id}", flush=True)
    judge_s, harness_s = statistics.median(times["judge"]), statistics.median(times["in_process"])
    print(f"\n{len(tasks)} tasks x gold/empty x {args.rounds} rounds on {args.backend}")
    print(f"median grade: judge {judge_s:.3f}s, in-process harness {harness_s:.3f}s, "
          f"ratio judge/harness {judge_s / harness_s:.2f}x")
    print(f"verdicts that differ between the modes: {len(disagree)}")
    for line in disagree:
        print("  " + line)
    raise SystemExit(1 if disagree else 0)


if __name__ == "__main__":
    main()
