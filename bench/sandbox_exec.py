"""Sandbox overheads, each as a ratio against a baseline measured in the same run:

1. exec round trip of DockerSandbox.exec("true") vs a raw docker SDK `exec_run("true")` on the same container
   (our wrapper adds `timeout`, a kill-what-is-left wrapper, streaming, and an exec_inspect);
2. SandboxPool claim latency with a warm pool vs a cold create (the point of the pool);
3. bwrap exec vs docker exec;
4. bwrap exec with its per-sandbox cgroup (join the cgroup as root, then `setpriv` to the sandbox uid) vs the
   same sandbox without it (the earlier route: straight to the sandbox uid), measured interleaved in one run.

Run: .venv/bin/python bench/sandbox_exec.py [--n 30] [--bwrap-only]
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings


def timed(fn, n: int) -> float:
    """Median seconds of `n` calls of fn (after one warm-up call)."""
    fn()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    """Print the three ratios (skipping the parts whose backend is missing)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=30, help="samples per measurement")
    parser.add_argument("--bwrap-only", action="store_true", help="only part 4 (and 3 without docker)")
    args = parser.parse_args()
    n = args.n
    warnings.simplefilter("ignore")
    from agentrl.sandboxes import SandboxConfig, SandboxPool
    from agentrl.sandboxes.bwrap_backend import BwrapSandbox, bwrap_available
    from agentrl.sandboxes.docker_backend import DockerSandbox, DockerUnavailable, docker_client

    config = SandboxConfig(memory_mb=512, workspace_mb=128, tmp_mb=64, ttl_s=600)
    print("(timings on a shared machine: compare the ratios, not the milliseconds)")
    try:
        if args.bwrap_only:
            raise DockerUnavailable("--bwrap-only")
        docker_client()
    except DockerUnavailable as e:
        print(f"docker: skipped ({e})")
        docker_exec = None
    else:
        with DockerSandbox(config) as sb:
            container = docker_client().containers.get(sb.id)
            raw = timed(lambda: container.exec_run(["true"], user="1000:1000"), n)
            ours = timed(lambda: sb.exec("true"), n)
            docker_exec = ours
            print(f"exec round trip: agentrl {ours * 1e3:.1f} ms vs raw exec_run {raw * 1e3:.1f} ms "
                  f"-> ratio {ours / raw:.2f}x")
        cold = timed(lambda: DockerSandbox(config).close(), max(3, n // 6))
        with SandboxPool(config, backend="docker", warm=1, max_concurrency=2, reap=False) as pool:
            def claim_release() -> None:
                deadline = time.monotonic() + 30
                while not pool._free and time.monotonic() < deadline:  # measure warm claims only
                    time.sleep(0.01)
                t0 = time.perf_counter()
                sb = pool.acquire()
                warm_samples.append(time.perf_counter() - t0)
                pool.release(sb)
            warm_samples: list[float] = []
            for _ in range(max(3, n // 3)):
                claim_release()
            warm = statistics.median(warm_samples)
        print(f"pool claim: warm {warm * 1e3:.1f} ms vs cold create+close {cold * 1e3:.0f} ms "
              f"-> cold/warm ratio {cold / warm:.1f}x")
    reason = bwrap_available()
    if reason:
        print(f"bwrap: skipped ({reason})")
    else:
        with BwrapSandbox(config) as sb, BwrapSandbox(config, cgroups=False) as plain:
            with_cg, without = [], []
            for _ in range(max(1, n // 5)):  # interleaved rounds, so load changes hit both alike
                with_cg.append(timed(lambda: sb.exec("true"), 5))
                without.append(timed(lambda: plain.exec("true"), 5))
            bw, bw_plain = statistics.median(with_cg), statistics.median(without)
        line = f"bwrap exec {bw * 1e3:.1f} ms"
        if docker_exec:
            line += f" vs docker exec {docker_exec * 1e3:.1f} ms -> bwrap/docker ratio {bw / docker_exec:.2f}x"
        print(line)
        print(f"bwrap exec with cgroup {bw * 1e3:.1f} ms vs without {bw_plain * 1e3:.1f} ms "
              f"-> ratio {bw / bw_plain:.2f}x (target <= 1.20x)")


if __name__ == "__main__":
    main()
