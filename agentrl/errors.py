"""Small exception classes, in Gymnasium's manner. User mistakes raise AgentRLError subclasses; the CLI
prints their message as one line and exits 2 instead of showing a traceback."""

from __future__ import annotations


class AgentRLError(Exception):
    """Base class for errors caused by user input or configuration (printed without a traceback)."""


class ConfigError(AgentRLError):
    """The configuration is invalid; the message lists every problem found."""


class UnknownEnv(AgentRLError):
    """An environment name is not registered."""


class ModelLoadError(AgentRLError):
    """A model or tokenizer could not be loaded (bad path, unreachable hub, corrupt cache)."""


class ClusterError(AgentRLError):
    """The Ray cluster cannot host the rollout workers (unreachable, or no node has the resources they need)."""


class EngineError(Exception):
    """A generation engine failed (server error, abort, connection lost past the retry deadline)."""


class SandboxError(Exception):
    """A sandbox is unusable (container gone, daemon unreachable). Command failures are ExecResults, not this."""


class SandboxDead(SandboxError):
    """The sandbox's container or process is gone."""
