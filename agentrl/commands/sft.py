"""Supervised warm start: roll out the env's scripted expert through the agent loop and fit it (loss only on
action tokens), then write a checkpoint that 'agentrl train --init-from DIR' starts from.

Example:
  agentrl sft --env calc --episodes 64
"""

from __future__ import annotations

import argparse

from agentrl.commands.train import add_common, no_empty_run_folder, pin_run_dir, resolve


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `agentrl sft`."""
    add_common(parser)
    parser.add_argument("--episodes", type=int, default=None, help="expert episodes (default sft.episodes, else 64)")


def run(args: argparse.Namespace) -> int:
    """Run SFT only (trainer.steps=0) and print the checkpoint path."""
    if args.episodes is not None:
        args.overrides = [*args.overrides, f"sft.episodes={args.episodes}"]
    args.overrides = [*args.overrides, "trainer.steps=0"]
    cfg = resolve(args)
    if cfg is None:
        return 0
    if cfg.sft.episodes == 0:
        cfg.sft.episodes = 64
    if "{env}-{time}" in cfg.trainer.run_dir:
        cfg.trainer.run_dir = cfg.trainer.run_dir.replace("{env}-{time}", "sft-{env}-{time}")
    from agentrl.preflight import preflight
    from agentrl.trainer.loop import train

    run_dir = pin_run_dir(cfg)
    preflight(cfg)
    with no_empty_run_folder(run_dir):
        train(cfg)
    return 0
