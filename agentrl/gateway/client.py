"""What an agent program gets: its session's OpenAI-compatible base URL and key, plus a minimal client.

Point any OpenAI-compatible client at `client.base_url` with `client.api_key` (``openai.AsyncOpenAI(
base_url=client.base_url, api_key=client.api_key)``, LangChain's ``ChatOpenAI(base_url=…)``, …), or use
`client.chat(...)`, a dependency-free call of /chat/completions that returns the response as a dict (awaited in
async code, called directly from a plain def).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp


class GatewayError(Exception):
    """A chat call the gateway answered with an error; `status` and `body` are its HTTP status and JSON."""

    def __init__(self, status: int, body: Any):
        message = body.get("error", {}).get("message") if isinstance(body, dict) else None
        super().__init__(f"HTTP {status}: {message or body}")
        self.status, self.body = status, body


@dataclass
class AgentClient:
    """A session's endpoint: `base_url` ends in /v1, as OpenAI clients expect."""

    base_url: str
    api_key: str
    model: str = "agentrl"
    timeout_s: float | None = None
    """Limit of one call; None: none (in training the episode deadline, rollout.episode_timeout_s, bounds it)."""

    @property
    def headers(self) -> dict[str, str]:
        """The bearer-key header of this session."""
        return {"Authorization": f"Bearer {self.api_key}"}

    def chat(self, messages: list[dict[str, Any]], **params: Any) -> Any:
        """POST /chat/completions with `messages` and any OpenAI parameters; the response JSON.

        In async code (an event loop runs in this thread) it returns an awaitable: ``await client.chat(...)``.
        Elsewhere (a plain `def run`, which runs in a thread of its own; a script) it makes the call and returns
        the response. Raises GatewayError when the gateway answers with an error (a spent budget, a bad request)."""
        call = self._chat(messages, **params)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(call)
        return call

    async def _chat(self, messages: list[dict[str, Any]], **params: Any) -> dict[str, Any]:
        body = {"model": self.model, "messages": messages, **params}
        timeout = aiohttp.ClientTimeout(total=self.timeout_s)  # not aiohttp's default 5 minutes
        async with aiohttp.ClientSession(timeout=timeout) as http, \
                http.post(f"{self.base_url}/chat/completions", json=body, headers=self.headers) as resp:
            data = await resp.json(content_type=None)
            if resp.status != 200:
                raise GatewayError(resp.status, data)
            return data
