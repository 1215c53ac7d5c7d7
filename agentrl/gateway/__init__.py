"""An OpenAI-compatible session gateway in front of any agentrl engine, exact token-in/token-out across calls.

See docs/gateway.md. `Gateway` serves sessions over HTTP; `Session` holds one agent program's record (the
exact sampled ids, behaviour logprobs, versions and loss mask of every call) and turns it into trajectory
segments; `AgentClient` is what an agent program is handed.
"""

from agentrl.gateway.client import AgentClient, GatewayError
from agentrl.gateway.server import Gateway
from agentrl.gateway.session import Session, SessionLimits

__all__ = ["AgentClient", "Gateway", "GatewayError", "Session", "SessionLimits"]
