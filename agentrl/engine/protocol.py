"""The Engine protocol: token-in/token-out generation with exact behaviour logprobs.

Every engine (embedded transformers, SGLang client) takes prompt token ids and returns sampled token ids
with the logprob of each under the temperature-scaled distribution actually sampled from, plus the policy
version that produced each token (a trajectory may span weight updates).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

FinishReason = Literal["stop", "length", "abort"]
PauseMode = Literal["finish", "abort", "in_place", "retract"]

# The one table of pause modes. Every engine supports all four; SGLangClient maps them onto SGLang 0.5.23's
# /pause_generation modes (srt/managers/io_struct.py PauseGenerationReqInput: "abort" | "retract" | "in_place").
PAUSE_MODES: dict[str, str] = {
    "finish": "running requests finish; new ones wait. SGLangClient pauses no server: SGLang's weight update "
              "already waits for in-flight requests (its writer lock)",
    "abort": "running requests end now with finish_reason abort and their partial output (on SGLang: every "
             "client's requests)",
    "in_place": "running requests freeze, KV cache kept; after an update they continue on KV the old weights "
                "computed (not exact; SGLang then refuses update_weights with flush_cache: HTTP 400)",
    "retract": "running requests go back to the queue, KV dropped; after resume prompt + partial output is "
               "recomputed with the current weights, so every token's version is exact (in-flight updates)",
}


@dataclass
class SamplingParams:
    """Sampling settings for one request (mirrors SGLang's sampling_params names)."""

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = -1  # -1 = disabled (SGLang's convention)
    max_new_tokens: int = 128
    stop_token_ids: list[int] = field(default_factory=list)
    stop: list[str] = field(default_factory=list)
    seed: int | None = None

    def to_sglang(self) -> dict[str, Any]:
        """The `sampling_params` dict for SGLang's native /generate."""
        d: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "top_k": self.top_k,
            "max_new_tokens": self.max_new_tokens,
        }
        if self.stop_token_ids:
            d["stop_token_ids"] = list(self.stop_token_ids)
        if self.stop:
            d["stop"] = list(self.stop)
        if self.seed is not None:
            d["sampling_seed"] = self.seed
        return d


@dataclass
class Generation:
    """The result of one generate call. output_ids, logprobs and versions have equal length."""

    output_ids: list[int]
    logprobs: list[float]
    finish_reason: FinishReason
    versions: list[int]
    meta: dict[str, Any] = field(default_factory=dict)


@runtime_checkable
class Engine(Protocol):
    """What the agent loop and trainer need from a generation backend."""

    @property
    def version(self) -> int:
        """The policy version of the weights currently served."""
        ...

    async def generate(
        self, input_ids: list[int], sampling: SamplingParams, *, session_id: str | None = None
    ) -> Generation:
        """Sample a continuation of input_ids. session_id lets routers keep a trajectory on one server."""
        ...

    async def update_weights(self, state_dict: Any = None, *, path: str | None = None, version: int | None = None) -> int:
        """Load new weights (from a state dict or an HF directory); returns the new version."""
        ...

    async def push_weights(self, model: Any, *, version: int, staging_dir: Any = None) -> None:
        """Serve the trainer's `model` weights as `version`: the trainer's one call after an optimizer step.

        The engine decides how: the embedded engine shares or copies the tensors in place, the SGLang client
        saves to `staging_dir` and has every server load it from disk."""
        ...

    async def pause(self, mode: PauseMode = "finish") -> None:
        """Stop admitting requests; running ones behave per PAUSE_MODES[mode]. "retract" is the mode for an
        in-flight weight update: one generation spans it and each token carries the version that produced it."""
        ...

    async def resume(self) -> None:
        """Admit requests again."""
        ...

    async def close(self) -> None:
        """Release resources (threads, sessions)."""
        ...
