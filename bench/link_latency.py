"""Line round trips between two sandboxes: relayed by the host (what the suite judge did before link folders) vs a
FIFO pair the host shares between them (sandboxes/link.py), on the same backend in the same run.

A "judge" process in one sandbox sends N short JSON lines and waits for each answer of an echoing "worker" in the
other. Relayed: both are execs whose stdin/stdout the host reads and writes (Dialogue), and the host passes each
line on, as suite.py's relay did. FIFO: the two talk directly and the host only starts them. Prints microseconds
per round trip for each, their ratio, and the CPU model.

Run: .venv/bin/python bench/link_latency.py [--backend docker|bwrap] [--lines 2000]
"""

from __future__ import annotations

import argparse
import time

from grading_cost import cpu_model

WORKER = ("import os, sys\nif len(sys.argv) > 1:\n    r = open(sys.argv[1] + '/req', 'rb'); w = os.open(sys.argv[1] + "
          "'/ans', os.O_WRONLY)\nelse:\n    r = sys.stdin.buffer; w = 1\nfor line in r:\n    os.write(w, b'ok ' + line)\n")
JUDGE = ("import os, sys, time\nn = int(sys.argv[1])\nif len(sys.argv) > 2:\n    w = os.open(sys.argv[2] + '/req', "
         "os.O_WRONLY); r = open(sys.argv[2] + '/ans', 'rb')\nelse:\n    w = 1; r = sys.stdin.buffer\n"
         "for i in range(n + 50):\n    if i == 50:\n        t = time.perf_counter()\n"
         "    os.write(w, b'W {\"op\": \"getattr\", \"name\": \"x\"}\\n'); r.readline()\n"
         "sys.stderr.write('US %.1f\\n' % ((time.perf_counter() - t) / n * 1e6))\n")


def relayed(judge_sb, worker_sb, n: int) -> float:
    """µs per round trip with the host passing every line between two execs."""
    from agentrl.sandboxes.dialogue import Dialogue

    worker, judge = Dialogue(), Dialogue()
    worker.start(lambda d: worker_sb.exec(["python3", "-c", WORKER], timeout=120, stdin=d))
    judge.start(lambda d: judge_sb.exec(["python3", "-c", JUDGE, str(n)], timeout=120, stdin=d))
    while True:
        line = judge.read_line(time.monotonic() + 60, 1 << 20)
        if line is None:
            break
        worker.send(line + b"\n")
        judge.send(b"w " + worker.read_line(time.monotonic() + 60, 1 << 20) + b"\n")
    worker.abort()
    return _us(judge.wait(60))


def fifo(judge_sb, worker_sb, n: int) -> float:
    """µs per round trip over a FIFO pair shared by the two sandboxes."""
    from agentrl.sandboxes.dialogue import Dialogue
    from agentrl.sandboxes.link import Pipes

    pipes = Pipes(worker_sb, judge_sb, ["req", "ans"])
    try:
        worker = Dialogue()
        worker.start(lambda d: worker_sb.exec(["python3", "-c", WORKER, worker_sb.link_path], timeout=120, stdin=d))
        result = judge_sb.exec(["python3", "-c", JUDGE, str(n), judge_sb.link_path], timeout=120)
        worker.abort()
    finally:
        pipes.close()
    return _us(result)


def _us(result) -> float:
    for line in result.output.splitlines():
        if line.startswith("US "):
            return float(line[3:])
    raise SystemExit(f"the judge process failed: {result.output[-300:]!r}")


def main() -> None:
    """Measure both channels, alternating, and print the ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", default="docker")
    parser.add_argument("--lines", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from agentrl.sandboxes import open_sandbox
    from agentrl.sandboxes.link import linked

    with open_sandbox(args.backend) as a, open_sandbox(args.backend) as b:
        if not linked(a, b):
            raise SystemExit(f"{args.backend} sandboxes here have no link folders (sandboxes/link.py)")
        got: dict[str, list[float]] = {"relayed": [], "fifo": []}
        for _ in range(args.rounds):
            got["relayed"].append(relayed(a, b, args.lines))
            got["fifo"].append(fifo(a, b, args.lines))
    r, f = min(got["relayed"]), min(got["fifo"])
    print(f"{args.backend}, {cpu_model()}, {args.lines} lines x {args.rounds} rounds (best round):")
    print(f"  relayed by the host: {r:7.1f} us per round trip   {got['relayed']}")
    print(f"  FIFO pair:           {f:7.1f} us per round trip   {got['fifo']}")
    print(f"  relayed / FIFO: {r / f:.1f}x")


if __name__ == "__main__":
    main()
