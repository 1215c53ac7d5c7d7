"""List the registered environments (built-in and from installed plugins) with a one-line description."""

from __future__ import annotations

import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """No options."""


def run(args: argparse.Namespace) -> int:
    """Print one line per registered env: its name, gymnasium id and description; then what else --env takes."""
    from agentrl.registry import env_descriptions

    rows = env_descriptions()
    width = max((len(name) for name in rows), default=0)
    for name, (gym_id, description) in sorted(rows.items()):
        print(f"{name:<{width}}  {gym_id:<24}  {description}")
    print("\nAlso accepted by --env: a class (my_pkg.envs:MyEnv), and your own agent program: "
          "external:my_agent.py:run (a function using an OpenAI client) or \"external:cmd:python my_agent.py\" "
          "(any command); docs/gateway.md.")
    return 0
