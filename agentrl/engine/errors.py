"""Errors raised by engines, more specific than agentrl.errors.EngineError (which they subclass).

- EngineRequestError: the request itself is invalid (SGLang answers 400); retrying cannot help.
- EngineUnavailable: no server answered (connection refused/reset, 503) before the retry deadline.
- EngineClosed: the engine was closed while the request waited or ran.
"""

from __future__ import annotations

from agentrl.errors import EngineError


class EngineRequestError(EngineError):
    """An invalid request (bad sampling params, empty or too long input); carries the HTTP status if remote."""

    def __init__(self, message: str, *, status: int = 400, url: str | None = None):
        super().__init__(message if url is None else f"{url}: HTTP {status}: {message}")
        self.status = status
        self.url = url
        self.reason = message


class EngineUnavailable(EngineError):
    """No server could be reached (or all answered 503) within the retry deadline."""


class EngineClosed(EngineError):
    """The engine was closed; requests in flight or queued end with this error."""
