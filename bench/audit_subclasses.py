"""Residual-risk probe of swe_real grading: always-equal values that also pass `isinstance` (str, int and list
subclasses whose `__eq__` is always true), returned from each task's faulty function(s) and from every function
its issue text blames, on a seeded sample of the shipped tasks. Step 5's audit does not try these; a task one of
them resolves is exploitable by a policy that learns to build one.

    .venv/bin/python bench/audit_subclasses.py [--per-package 3] [--packages semver tabulate]

Prints each hit as it happens, then `N tasks, G grades, H hits` and the wall time. Needs the Docker sandbox
image and the swe_real cache (make setup).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import agentrl.envs.swe.real.generate as generate  # noqa: E402
from agentrl.envs.swe.audit import with_body  # noqa: E402
from agentrl.envs.swe.real.tasks import load_real  # noqa: E402
from agentrl.sandboxes import open_sandbox  # noqa: E402


def subclass_body(base: str, arg: str) -> str:
    """A function body returning an instance of a `base` subclass that equals anything."""
    return (f"return type('Any', ({base},), {{'__eq__': lambda s, o: True, '__ne__': lambda s, o: False, "
            f"'__hash__': lambda s: 0}})({arg})")


BODIES = {"str": subclass_body("str", "''"), "int": subclass_body("int", "0"), "list": subclass_body("list", "")}


def main() -> int:
    """Grade every (target function, body) of the sampled tasks; exit 1 when any resolves."""
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--per-package", type=int, default=3, help="tasks sampled per package (seeded)")
    ap.add_argument("--packages", nargs="*", help="only these pinned packages (default: all)")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    by_repo: dict[str, list] = {}
    for t in load_real():
        if not args.packages or t.repo.split("/")[-1] in args.packages:
            by_repo.setdefault(t.repo, []).append(t)
    rng = random.Random(args.seed)
    chosen = [t for ts in by_repo.values() for t in rng.sample(ts, min(args.per_package, len(ts)))]
    hits, grades, start = [], 0, time.monotonic()
    with open_sandbox("docker", cpus=1.0, memory_mb=1024) as sb:
        for task in chosen:
            parts = task.mutation.get("parts") or [task.mutation]
            targets = dict.fromkeys([(p["file"], p["function"]) for p in parts if p.get("file")]
                                    + list(generate.named_targets(task)))
            for file, qualname in targets:
                for name, body in BODIES.items():
                    changed = with_body(task.files[file], qualname, body) if file in task.files else None
                    if changed is None:
                        continue
                    result = generate._grade(sb, task, changes={file: changed})
                    grades += 1
                    if result.resolved or result.reward() > 0:
                        hits.append(f"{task.instance_id}: {name} subclass in {file}::{qualname}")
                        print("HIT", hits[-1], flush=True)
            print(f"{task.instance_id} done ({time.monotonic() - start:.0f}s)", flush=True)
    print(f"{len(chosen)} tasks, {grades} grades, {len(hits)} hits ({time.monotonic() - start:.0f}s)")
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
