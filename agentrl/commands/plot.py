"""Write a PNG dashboard of a run directory's metrics (reward, entropy, KL, IS weights, clip fractions,
lengths, zero-std groups, termination mix, time per phase)."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """RUN_DIR and --out."""
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run directory written by 'agentrl train'")
    parser.add_argument("--out", default=None, help="PNG path (default RUN_DIR/dashboard.png)")


def run(args: argparse.Namespace) -> int:
    """Plot and print where the PNG is."""
    from agentrl.trainer.plot import plot_run

    print(plot_run(args.run_dir, args.out))
    return 0
