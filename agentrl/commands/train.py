"""Train a policy with GRPO-family RL on an environment.

Examples:
  agentrl train --env calc
  agentrl train --env swe_lite --config configs/demo.yaml
  agentrl train --env calc trainer.lr=1e-6 rollout.group_size=8
  agentrl train --env calc --resume runs/calc-20261129-101500
Config precedence: defaults < configs/<env>.yaml < --config FILE < dotted overrides.
"""

from __future__ import annotations

import argparse


def add_common(parser: argparse.ArgumentParser) -> None:
    """--env, --config and dotted overrides (shared with `agentrl sft`)."""
    parser.add_argument("--env", default=None, help="registered env name (see 'agentrl envs'); loads configs/<env>.yaml")
    parser.add_argument("--config", default=None, metavar="FILE", help="YAML config file (overrides the env preset)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted overrides, e.g. trainer.lr=1e-6")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `agentrl train`."""
    add_common(parser)
    parser.add_argument("--resume", default=None, metavar="RUN_OR_CKPT", help="continue a run from its latest (or this) checkpoint")
    parser.add_argument("--init-from", default=None, metavar="DIR", help="start from this checkpoint or model directory (e.g. an 'agentrl sft' result)")


def resolve(args: argparse.Namespace):
    """Load the config, check the env exists, and honour --print-config."""
    from agentrl.config import dump_config, load_config

    cfg = load_config(args.env, args.config, args.overrides)
    from agentrl.registry import env_descriptions

    if cfg.env.name not in env_descriptions():
        from agentrl.registry import make

        make(cfg.env.name)  # raises UnknownEnv with a suggestion
    if args.print_config:
        print(dump_config(cfg), end="")
        return None
    return cfg


def run(args: argparse.Namespace) -> int:
    """Resolve the config and run the loop."""
    cfg = resolve(args)
    if cfg is None:
        return 0
    from agentrl.trainer.loop import train

    train(cfg, resume=args.resume, init_from=args.init_from)
    return 0
