"""The `agentrl` command: train | sft | eval | serve | sandbox | envs | plot.

Each subcommand lives in `agentrl/commands/<name>.py` with `add_arguments(parser)` and `run(args) -> int`,
and imports heavy libraries (torch, transformers) only inside `run`, so `--help` stays fast. User mistakes
(AgentRLError) print one line and exit 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from agentrl import __version__
from agentrl.errors import AgentRLError

# name -> one-line help. Order is the order shown in --help.
COMMANDS: dict[str, str] = {
    "train": "train a policy with GRPO-family RL on an environment",
    "sft": "supervised warm start from an env's scripted expert",
    "eval": "run sandboxed evaluation episodes of a model (or an oracle) on an env split",
    "serve": "serve a model over HTTP with SGLang's native API (embedded engine), or print the SGLang launch command",
    "gateway": "serve an OpenAI-compatible session gateway in front of a model (train or record existing agents)",
    "envs": "list the registered environments",
    "sandbox": "build, list, reap sandboxes; run one command in a fresh sandbox",
    "plot": "write a PNG dashboard of a run's metrics",
}


class _Parser(argparse.ArgumentParser):
    """argparse that reports a usage mistake as one line (exit 2) instead of the whole usage block."""

    def error(self, message: str) -> None:  # noqa: D102
        self.exit(2, f"{self.prog}: error: {message} (see '{self.prog} --help')\n")


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every subcommand's arguments."""
    parser = _Parser(prog="agentrl", description="Reinforcement learning for multi-turn, tool-using LLM agents.")
    parser.add_argument("--version", action="version", version=f"agentrl {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    parser.commands = {}  # name -> the subcommand's parser (main names its options in a did-you-mean)
    for name, help_text in COMMANDS.items():
        module = importlib.import_module(f"agentrl.commands.{name}")
        p = sub.add_parser(
            name, help=help_text, description=module.__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
        )
        module.add_arguments(p)
        p.set_defaults(_module=module)
        parser.commands[name] = p
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `agentrl` console script."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)  # as typed: what `trainer.ranks=N` starts each rank with
    if extra and isinstance(getattr(args, "overrides", None), list) and all(_is_override(x) for x in extra):
        args.overrides += extra  # `train --env calc a=1 --resume RUN b=2`: overrides after an option count too
    elif extra:
        command = parser.commands.get(args.command) if args.command else None
        if command is None:
            parser.parse_args(argv)  # reports the unrecognized arguments as argparse does (one line, exit 2)
        command.error(f"unrecognized arguments: {' '.join(extra)}{did_you_mean(command, extra)}")
    if args.command is None:
        parser.print_help()
        return 2
    from agentrl.sandboxes import reaper

    # SIGTERM acts as Ctrl-C (the command unwinds and says how to resume; exit 143), and no sandbox this process
    # made, in any thread and those still being created included, outlives it (reaper.cleanup_own at exit)
    reaper.install_sigterm_hook(interrupt=True)
    try:
        return int(args._module.run(args) or 0)
    except AgentRLError as e:
        print(f"agentrl {args.command}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"agentrl {args.command}: {interrupted_how()}", file=sys.stderr)
        return interrupted_status()


def did_you_mean(parser: argparse.ArgumentParser, extra: list[str]) -> str:
    """' (did you mean --limit?)' for the first unrecognized option close to one of the parser's own, else ''."""
    import difflib

    options = [o for o in parser._option_string_actions if o.startswith("--")]
    for arg in extra:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.partition("=")[0], options, n=1, cutoff=0.6)
            if close:
                return f" (did you mean {close[0]}?)"
    return ""


def _is_override(arg: str) -> bool:
    """A dotted KEY=VALUE override (not an option)."""
    return not arg.startswith("-") and "=" in arg


def interrupted_how() -> str:
    """'terminated (SIGTERM)' or 'interrupted', for the line a command prints when it is stopped."""
    from agentrl.sandboxes import reaper

    return "terminated (SIGTERM)" if reaper.terminated else "interrupted"


def interrupted_status() -> int:
    """The exit status of a stopped command: 143 after SIGTERM, 130 after Ctrl-C (128 + the signal number)."""
    from agentrl.sandboxes import reaper

    return 143 if reaper.terminated else 130


if __name__ == "__main__":
    sys.exit(main())
