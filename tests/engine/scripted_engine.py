"""A deterministic Engine for tests: returns pre-set token ids with made-up logprobs.

It is a test fixture for masking and tokenization properties (which tokens land where), not a stand-in for
a model: it honours the Engine protocol (stop tokens, max_new_tokens, versions) and records every prompt.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from agentrl.engine.protocol import Generation, SamplingParams


class ScriptedEngine:
    """Engine whose i-th generate call returns outputs[i] (cut at the first stop token or max_new_tokens)."""

    def __init__(self, outputs: Sequence[Sequence[int]], *, version: int = 3, delay_s: float = 0.0,
                 fail_calls: Sequence[int] = (), abort_calls: Sequence[int] = ()):
        self.outputs = [list(o) for o in outputs]
        self.prompts: list[list[int]] = []
        self.sampling: list[SamplingParams] = []
        self.returned: list[Generation] = []
        self._version = version
        self.delay_s = delay_s
        self.fail_calls, self.abort_calls = set(fail_calls), set(abort_calls)

    @property
    def version(self) -> int:
        return self._version

    @staticmethod
    def logprob(i: int) -> float:
        """The made-up logprob of the i-th sampled token overall (distinct, negative)."""
        return -0.01 * (i + 1)

    async def generate(self, input_ids: list[int], sampling: SamplingParams, *, session_id: str | None = None) -> Generation:
        call = len(self.prompts)
        self.prompts.append(list(input_ids))
        self.sampling.append(sampling)
        if self.delay_s:
            await asyncio.sleep(self.delay_s)
        if call in self.fail_calls:
            raise RuntimeError("scripted engine failure")
        if call in self.abort_calls:
            return Generation([], [], "abort", [])
        ids = self.outputs[call % len(self.outputs)]
        out, reason = [], "length"
        for tok in ids:
            if len(out) >= sampling.max_new_tokens:
                break
            out.append(tok)
            if tok in sampling.stop_token_ids:
                reason = "stop"
                break
        else:
            reason = "stop" if len(out) < sampling.max_new_tokens else "length"
        first = sum(len(g.output_ids) for g in self.returned)
        gen = Generation(out, [self.logprob(first + i) for i in range(len(out))], reason, [self._version] * len(out))
        self.returned.append(gen)
        return gen

    async def update_weights(self, state_dict=None, *, path=None, version=None) -> int:
        self._version = version if version is not None else self._version + 1
        return self._version

    async def push_weights(self, model, *, version, staging_dir=None) -> None:
        await self.update_weights(version=version)

    async def pause(self, mode="finish") -> None:
        pass

    async def resume(self) -> None:
        pass

    async def close(self) -> None:
        pass
