"""Train a policy with GRPO-family RL on an environment.

Examples:
  agentrl train --env calc
  agentrl train --env swe_lite --config configs/demo.yaml
  agentrl train --env calc trainer.lr=1e-6 rollout.group_size=8
  agentrl train --env calc --resume runs/calc-20261129-101500
Config precedence: defaults < configs/<env>.yaml < --config FILE < dotted overrides. `--env` also takes a
class, `--env my_pkg.envs:MyEnv`, or your own agent program: `--env external:my_agent.py:run` (a Python function
using an OpenAI client) or `--env "external:cmd:python my_agent.py"` (any command; docs/gateway.md). `--resume RUN` continues RUN with its own config.yaml; only trainer.steps,
logging, checkpoint/eval cadence and similar keys may be overridden then (agentrl.trainer.resume.SAFE_ON_RESUME).
"""

from __future__ import annotations

import argparse
import shutil
import sys
from contextlib import contextmanager, nullcontext
from pathlib import Path

RESULTS = ("checkpoints", "metrics.jsonl", "sft_metrics.jsonl", "trajectories.jsonl", "samples")
"""What a run folder holds once a run has done something (config.yaml and an empty tb/ are written at start-up)."""


def add_common(parser: argparse.ArgumentParser) -> None:
    """--env, --config and dotted overrides (shared with `agentrl sft`)."""
    parser.add_argument("--env", default=None, help="registered env name (see 'agentrl envs') or module:Class; loads configs/<env>.yaml; "
                             "required unless --config FILE sets env.name (or --resume): no env is assumed")
    parser.add_argument("--config", default=None, metavar="FILE", help="YAML config file (overrides the env preset)")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="dotted overrides, e.g. trainer.lr=1e-6")
    parser.add_argument("--print-config", action="store_true", help="print the resolved config and exit")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of `agentrl train`."""
    add_common(parser)
    parser.add_argument("--resume", default=None, metavar="RUN_OR_CKPT", help="continue a run from its latest (or this) checkpoint")
    parser.add_argument("--init-from", default=None, metavar="DIR", help="start from this checkpoint or model directory (e.g. an 'agentrl sft' result)")


def resolve(args: argparse.Namespace):
    """Load the config (a resumed run's own config.yaml), check the env exists, and honour --print-config."""
    from agentrl.config import dump_config, load_config
    from agentrl.registry import resolve as resolve_env

    if getattr(args, "resume", None):
        from agentrl.trainer.resume import resume_config

        cfg = resume_config(args.resume, args.overrides, env=args.env, config_file=args.config)
    else:
        cfg = load_config(args.env, args.config, args.overrides)
        check_env_given(args, cfg)
    resolve_env(cfg.env.name)  # raises UnknownEnv with a suggestion and how to register one
    if args.print_config:
        print(config_header(args, cfg) + dump_config(cfg), end="")
        return None
    from agentrl.models import check_name

    check_name(cfg.model.name)  # a missing model fails here, not after torch and the trainer are loaded
    return cfg


def check_env_given(args: argparse.Namespace, cfg) -> None:
    """Refuse a fresh run that names no env (no --env, and neither --config FILE nor an env.name= override sets
    env.name): it would train the default env with none of its preset, as `agentrl eval` refuses it too."""
    if args.env is None and "name" not in cfg.env.model_fields_set:
        from agentrl.errors import ConfigError

        command = getattr(args, "command", None) or "train"
        where = f"{args.config} does not set env.name" if args.config else "no --config file sets env.name"
        raise ConfigError(f"no env given ({where}): pass --env NAME (see 'agentrl envs'), e.g. "
                          f"agentrl {command} --env calc; no env is assumed")


def config_header(args: argparse.Namespace, cfg) -> str:
    """The comment lines --print-config puts above the YAML: what it is, what it was resolved from, how to use it."""
    command = args.command if getattr(args, "command", None) else "train"
    if getattr(args, "resume", None):
        sources = f"the run's own config.yaml ({args.resume})"
    else:
        from agentrl.config import CONFIG_DIR

        preset = CONFIG_DIR / f"{args.env}.yaml" if args.env else None
        sources = "the defaults" + (f" < configs/{args.env}.yaml" if preset and preset.is_file() else "")
        sources += f" < {args.config}" if args.config else ""
    sources += " < the command-line overrides" if args.overrides else ""
    return (f"# agentrl {command}: the resolved config of this command for env {cfg.env.name!r}, from {sources}.\n"
            f"# Every key is documented in agentrl/config.py. Save it and run it with: agentrl {command} --config FILE\n")


def check_init_from(path: str | None) -> None:
    """--init-from names a checkpoint or model directory: one that is not there is said to be missing (before
    the model loader would call it an unknown model name)."""
    if path is None:
        return
    from pathlib import Path

    from agentrl.errors import ConfigError

    p = Path(path)
    if not p.exists():
        raise ConfigError(f"--init-from {path}: {p.resolve()} does not exist (give a checkpoint directory, e.g. "
                          "runs/sft-calc-…/checkpoints/step_000000, or a model directory)")
    if not p.is_dir():
        raise ConfigError(f"--init-from {path}: is a file, not a checkpoint or model directory")


def pin_run_dir(cfg, resume: str | None = None) -> Path:
    """The run's folder, its name fixed now (trainer.run_dir's {time} filled in), so that what the command says
    afterwards (the resume hint, a removed folder) names the folder the run wrote."""
    from agentrl.trainer.loop import resolve_run_dir

    run_dir = resolve_run_dir(cfg, resume)
    if not resume:
        cfg.trainer.run_dir = str(run_dir)
    return run_dir


def holds_results(run_dir: Path) -> bool:
    """True once the run has written something worth keeping (a checkpoint, metrics, trajectories, samples)."""
    return any((run_dir / name).exists() for name in RESULTS)


@contextmanager
def no_empty_run_folder(run_dir: Path):
    """Remove the run folder again when the command stops (an error, Ctrl-C, SIGTERM) before the run wrote
    anything but its config: a missing model or a signal during start-up leaves no folder holding only
    config.yaml. A folder that existed before the command (a resumed run) is never removed."""
    created = not run_dir.exists()
    try:
        yield
    except BaseException:
        if created and run_dir.is_dir() and not holds_results(run_dir):
            shutil.rmtree(run_dir, ignore_errors=True)
        raise


def run(args: argparse.Namespace) -> int:
    """Resolve the config, preflight the env, and run the loop; Ctrl-C or SIGTERM says how to continue."""
    cfg = resolve(args)
    if cfg is None:
        return 0
    from agentrl.cli import interrupted_how, interrupted_status
    from agentrl.preflight import preflight
    from agentrl.trainer.distributed import under_launcher
    from agentrl.trainer.loop import train
    from agentrl.trainer.strategy import build_strategy, check_warm_start, rank_failure

    check_init_from(args.init_from)
    check_warm_start(cfg, resume=args.resume, init_from=args.init_from)  # before any rank joins a group
    if cfg.trainer.ranks > 1 and cfg.cluster.backend != "ray" and not under_launcher():
        from agentrl.trainer.launch import launch

        return launch(cfg.trainer.ranks, args.argv, command="train")  # every rank runs this command line
    # trainer.strategy=fsdp: join the ranks torchrun (or Ray) started; rank 0 leads the run and speaks for it
    strategy = build_strategy(cfg)
    run_dir = pin_run_dir(cfg, args.resume)
    # only the leading rank writes the run folder, so only it may remove an empty one
    keep_clean = no_empty_run_folder(run_dir) if strategy.is_main else nullcontext()
    try:
        if strategy.is_main:
            preflight(cfg)
        with keep_clean:
            result = train(cfg, resume=args.resume, init_from=args.init_from, strategy=strategy)
    except KeyboardInterrupt:
        if not strategy.is_main:  # the launcher stopping the group: rank 0 says how to continue
            return interrupted_status()
        sharded = strategy.world is not None and strategy.world.size > 1
        run_dir = strategy.run_dir or run_dir
        from agentrl.trainer.launch import launched_here

        torchrun = sharded and not launched_here()  # trainer.ranks=N: `agentrl train --resume` starts them again
        if (run_dir / "checkpoints").is_dir():
            how = f"the same launch with --resume {run_dir}" if torchrun else f"agentrl train --resume {run_dir}"
            hint = f"continue from its last checkpoint with: {how}"
        else:
            hint = "no checkpoint was written yet, so there is nothing to resume"
            hint += "" if run_dir.exists() else " (the run's empty folder was removed)"
        if torchrun:
            hint += " (torchrun stops every rank when one fails; its report names that rank)"
        print(f"agentrl train: {interrupted_how()}; run {run_dir}: {hint}", file=sys.stderr)
        return interrupted_status()
    except Exception as e:
        if (line := rank_failure(e, strategy, run_dir)) is None:
            raise
        print(f"agentrl train: error: {line}", file=sys.stderr)
        return 1
    finally:
        strategy.close()
    if result is None:  # a rank other than 0 of a sharded run: done when rank 0 said so
        return 0
    if result.nothing_trained() is not None:
        print(f"agentrl train: {nothing_trained(cfg, result, args)}", file=sys.stderr)
        return 1
    return 0


def nothing_trained(cfg, result, args: argparse.Namespace) -> str:
    """What to say when every step was SKIPPED: why, and the choices that apply to this run (trainer/diagnose.py).
    The command exits 1: its checkpoint holds the starting weights, which a script must not take for a trained
    policy (docs/metrics.md)."""
    from agentrl.trainer.diagnose import explain
    from agentrl.trainer.plot import read_metrics

    rows = read_metrics(result.run_dir) if result.metrics.is_file() else []
    text = explain(cfg, result.run_dir, rows, result.skipped, init_from=args.init_from, resumed=bool(args.resume))
    return f"{text}\nIts checkpoint holds the weights the run started from (exit status 1: nothing was trained)."
