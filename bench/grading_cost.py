"""Grading cost: the judges vs the in-process pytest harness, on the same tasks in the same run, interleaved.

- `--corpus lite` (default): swe_lite's judge (tests on the host, the repo in a sandboxed worker) on the first task
  of every corpus module (`--per-module`).
- `--corpus real`: swe_real's suite judge (the package's tests in a judge sandbox, the repo in a worker sandbox) on
  every shipped swe_real task (`--limit N`: the first N of each package). The suite judge's second sandbox is
  started once, as the training pool keeps it warm; its start is not counted.

Both sandboxes are reset (processes killed, /workspace and /tmp wiped) before every grade, untimed, as the training
pool resets one between episodes.

For each task both modes grade the gold patch and the empty patch; the bench prints the median seconds per grade
of each mode, their ratio (judge / harness), per package for `real`, the CPU model, and any task whose verdicts
(resolved, F2P rate, P2P rate) differ between the modes (none is expected).

Run: .venv/bin/python bench/grading_cost.py [--corpus lite|real] [--per-module 1] [--limit N] [--backend docker]
     [--rounds 1] [--tasks PATH]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings
from collections import defaultdict


def cpu_model() -> str:
    """The CPU's model name (agentrl.precision.cpu_model; imported here, late: it loads torch)."""
    from agentrl.precision import cpu_model as model

    return model()


def load(args):
    """(tasks, the judge's mode) of the corpus asked for."""
    if args.corpus == "real":
        from agentrl.envs.swe.real.tasks import load_real

        tasks, taken = [], defaultdict(int)
        for task in load_real(args.tasks):
            if not args.limit or taken[task.repo] < args.limit:
                tasks.append(task)
                taken[task.repo] += 1
        return tasks, "suite_judge"
    from agentrl.envs.swe.lite.generate import self_check_sample
    from agentrl.envs.swe.tasks import load_tasks

    return self_check_sample(load_tasks(args.tasks, split=None), args.per_module), "judge"


def main() -> None:
    """Grade, time and compare; exit 1 when the two modes disagree on a verdict."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", choices=("lite", "real"), default="lite")
    parser.add_argument("--per-module", type=int, default=1, help="lite: tasks per corpus module")
    parser.add_argument("--limit", type=int, default=0, help="real: tasks per package (0 = all)")
    parser.add_argument("--backend", default="docker", help="docker | bwrap")
    parser.add_argument("--rounds", type=int, default=1, help="times each (task, patch, mode) is graded")
    parser.add_argument("--tasks", default=None, help="a tasks JSONL (default: the shipped file)")
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    from agentrl.envs.swe.grading.grader import grade
    from agentrl.sandboxes import open_sandbox
    from agentrl.sandboxes.link import linked

    tasks, judge = load(args)
    modes = (judge, "in_process")
    times: dict[str, list[float]] = {m: [] for m in modes}
    by_repo: dict[str, dict[str, list[float]]] = defaultdict(lambda: {m: [] for m in modes})
    disagree = []
    start = time.monotonic()
    with open_sandbox(args.backend) as sb, open_sandbox(args.backend) as second:
        channel = "judge and worker over a FIFO pair" if linked(sb, second) else "the host relays every line"
        grade(sb, tasks[0], changes={}, mode="in_process")  # warm-up: image caches, first docker exec
        for i, task in enumerate(tasks):
            fixed = task.fixed_files()
            patches = {"gold": {p: t for p, t in fixed.items() if task.files.get(p) != t}, "empty": {}}
            for label, changes in patches.items():
                verdicts, statuses = {}, {}
                for r in range(args.rounds):
                    for mode in (modes if (i + r) % 2 == 0 else modes[::-1]):
                        # fresh /workspace and /tmp for every grade, as the training pool resets a sandbox between
                        # episodes: an in-process grade's pytest folders in the worker's /tmp once changed what
                        # click's test_file_lazy_mode saw there under the suite judge (2 of the 626 verdicts of a full run)
                        sb.reset()
                        second.reset()
                        t0 = time.perf_counter()
                        g = grade(sb, task, changes=changes, mode=mode, timeout=300, judge_sandbox=second)
                        seconds = time.perf_counter() - t0
                        times[mode].append(seconds)
                        by_repo[task.repo][mode].append(seconds)
                        if g.grading_mode != mode:
                            raise SystemExit(f"{task.instance_id}: asked for {mode}, graded {g.grading_mode}")
                        verdicts.setdefault(mode, (g.resolved, round(g.f2p, 6), round(g.p2p, 6)))
                        statuses.setdefault(mode, dict(g.statuses))
                if verdicts[judge] != verdicts["in_process"]:
                    tests = sorted(t for t in {*statuses[judge], *statuses["in_process"]}
                                   if statuses[judge].get(t) != statuses["in_process"].get(t))
                    disagree.append(f"{task.instance_id} {label}: {judge} {verdicts[judge]} vs "
                                    f"harness {verdicts['in_process']}; tests that differ: " + ", ".join(
                                        f"{t} ({statuses[judge].get(t)} vs {statuses['in_process'].get(t)})"
                                        for t in tests[:5]))
            print(f"{i + 1}/{len(tasks)} {task.instance_id}", flush=True)
    judge_s, harness_s = statistics.median(times[judge]), statistics.median(times["in_process"])
    print(f"\n{len(tasks)} tasks x gold/empty x {args.rounds} rounds on {args.backend} ({channel}), {cpu_model()}, "
          f"{time.monotonic() - start:.0f}s")
    if args.corpus == "real":
        for repo, t in by_repo.items():
            j, h = statistics.median(t[judge]), statistics.median(t["in_process"])
            print(f"  {repo:<32} {judge} {j:6.2f}s  harness {h:6.2f}s  ratio {j / h:.2f}x")
    print(f"median grade: {judge} {judge_s:.3f}s, in-process harness {harness_s:.3f}s, "
          f"ratio {judge}/harness {judge_s / harness_s:.2f}x; total {sum(times[judge]):.0f}s vs "
          f"{sum(times['in_process']):.0f}s")
    print(f"verdicts that differ between the modes: {len(disagree)}")
    for line in disagree:
        print("  " + line)
    raise SystemExit(1 if disagree else 0)


if __name__ == "__main__":
    main()
