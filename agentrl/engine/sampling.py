"""Logits → sampled tokens and their behaviour logprobs, one torch.Generator per request.

What the logprob is (the contract of the embedded engine):
- temperature T > 0: the logprob of the sampled token under the distribution actually sampled from, i.e.
  log_softmax(logits / T) restricted to the top-k / top-p support and renormalised over it. With top_k=-1
  and top_p=1 this equals SGLang's value; with truncation SGLang reports the full-vocabulary value instead
  (SGLang 0.5.23's `output_token_logprobs`), so the embedded engine is the exact one.
- temperature 0: greedy argmax; the logprob is log_softmax(logits) of the unscaled distribution (as SGLang).

Each row draws with its own generator (seeded from the request's seed), so the random draw does not depend on
which other requests share its batch, and a fixed seed reproduces it. The logits themselves are not
batch-invariant on CPU (~1e-6), so a draw that lands within that of a CDF boundary can still flip with the
batch; `EmbeddedEngine(max_batch_size=1)` makes samples a function of the seed alone.

A decode step on a GPU must not wait for the device per row or per branch. `RowSampling` holds the running rows'
settings as device tensors plus host facts about them (which truncations any row uses, the largest top-k), built
once when the rows change; `sample_rows` then samples every row and `finished` tests stop tokens and length
budgets on the device, with no host read. The uniforms come from each request's own host generator, drawn in
blocks (`UniformStream`), and cross to the device as one (B,) tensor per step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from agentrl.engine.errors import EngineRequestError
from agentrl.engine.protocol import SamplingParams

MAX_STOP_STRINGS = 32


def validate(sampling: SamplingParams) -> None:
    """Raise EngineRequestError (SGLang's 400 wording) if sampling holds a value SGLang would refuse."""
    t = sampling.temperature
    if not isinstance(t, (int, float)) or not math.isfinite(t) or t < 0:
        raise EngineRequestError(f"temperature must be a finite number >= 0, got {t!r}")
    if not 0 < sampling.top_p <= 1:
        raise EngineRequestError(f"top_p must be in (0, 1], got {sampling.top_p!r}")
    if not (sampling.top_k == -1 or sampling.top_k >= 1):
        raise EngineRequestError(f"top_k must be -1 (disabled) or at least 1, got {sampling.top_k!r}")
    if sampling.max_new_tokens < 0:
        raise EngineRequestError(f"max_new_tokens must be at least 0, got {sampling.max_new_tokens!r}")
    if len(sampling.stop) > MAX_STOP_STRINGS:
        raise EngineRequestError(f"at most {MAX_STOP_STRINGS} stop strings are allowed, got {len(sampling.stop)}")
    if any(not s for s in sampling.stop):
        raise EngineRequestError("stop strings must be non-empty")


def make_generator(seed: int, device: torch.device | str = "cpu") -> torch.Generator:
    """A generator for one request, on the device its probabilities live on."""
    g = torch.Generator(device=device)
    g.manual_seed(int(seed) & 0xFFFF_FFFF_FFFF_FFFF)
    return g


@dataclass(frozen=True)
class Truncation:
    """Host facts about a batch's sampling settings, so that sampling branches without reading the device."""

    scaled: bool  # some row divides its logits by a temperature other than 1
    top_k: int  # the largest top-k of a sampling row that truncates (0: none does)
    top_p: bool  # some sampling row truncates by top-p

    @classmethod
    def of(cls, params: list[SamplingParams]) -> Truncation:
        """What the rows with these settings need."""
        sampling = [p for p in params if p.temperature > 0]
        return cls(scaled=any(p.temperature != 1 for p in sampling),
                   top_k=max((p.top_k for p in sampling if p.top_k > 0), default=0),
                   top_p=any(p.top_p < 1 for p in sampling))


def sampling_logprobs(
    logits: torch.Tensor, temperature: torch.Tensor, top_k: torch.Tensor, top_p: torch.Tensor,
    truncation: Truncation | None = None,
) -> torch.Tensor:
    """Log-probabilities of each row's sampling distribution (-inf outside its top-k/top-p support).

    logits (B, V) float32; temperature (B,) with 0 = greedy (unscaled); top_k (B,) int with -1 = off;
    top_p (B,). Rows are independent: the result of a row depends only on that row's inputs. `truncation`
    (the same settings, known on the host) spares the device reads that decide which steps run.
    """
    greedy = temperature <= 0
    scale = torch.where(greedy, torch.ones_like(temperature), temperature)
    if truncation is None:
        truncation = Truncation(scaled=bool((scale != 1).any()),
                                top_k=int(torch.where((top_k > 0) & ~greedy, top_k, 0).max()) if top_k.numel() else 0,
                                top_p=bool(((top_p < 1) & ~greedy).any()))
    scaled = logits / scale.unsqueeze(-1) if truncation.scaled else logits  # (B, V)
    truncate_k = (top_k > 0) & ~greedy
    if truncation.top_k:
        vocab = scaled.shape[-1]
        k = torch.where(truncate_k, top_k.clamp(max=vocab), torch.full_like(top_k, vocab))
        kth = torch.topk(scaled, min(truncation.top_k, vocab), dim=-1).values  # (B, kmax)
        kth = kth.gather(-1, (k.clamp(max=kth.shape[-1]) - 1).unsqueeze(-1))  # (B, 1); rows without top-k: unused
        scaled = scaled.masked_fill(truncate_k.unsqueeze(-1) & (scaled < kth), float("-inf"))
    truncate_p = (top_p < 1) & ~greedy
    if truncation.top_p:
        sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
        probs = torch.softmax(sorted_logits, dim=-1)
        mass_before = torch.cumsum(probs, dim=-1) - probs  # (B, V): mass of strictly more likely tokens
        drop_sorted = (mass_before >= top_p.unsqueeze(-1)) & truncate_p.unsqueeze(-1)
        drop_sorted[:, 0] = False  # always keep the most likely token
        drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
        scaled = scaled.masked_fill(drop, float("-inf"))
    return torch.log_softmax(scaled, dim=-1)


def sample(
    logits: torch.Tensor,
    temperature: torch.Tensor,
    top_k: torch.Tensor,
    top_p: torch.Tensor,
    generators: list[torch.Generator],
) -> tuple[torch.Tensor, torch.Tensor]:
    """Draw one token per row with that row's generator; returns (tokens (B,), logprobs (B,))."""
    logprobs = sampling_logprobs(logits.float(), temperature, top_k, top_p)  # (B, V)
    greedy = temperature <= 0
    if bool(greedy.all()):
        tokens = torch.argmax(logprobs, dim=-1)
    else:
        u = torch.cat([
            torch.full((1,), 0.5, device=logits.device) if g else torch.rand(1, generator=gen, device=logits.device)
            for g, gen in zip(greedy.tolist(), generators, strict=True)
        ])
        tokens = inverse_cdf(logprobs.exp(), u)
        if bool(greedy.any()):
            tokens = torch.where(greedy, torch.argmax(logprobs, dim=-1), tokens)
    return tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


@dataclass
class RowSampling:
    """The running rows' sampling settings on the device, and what the host knows about them (rebuilt whenever the
    rows change; the per-step state, `remaining`, is updated on the device)."""

    temperature: torch.Tensor  # (B,) float32, 0 = greedy
    top_k: torch.Tensor  # (B,) long, -1 = off
    top_p: torch.Tensor  # (B,) float32
    stop_ids: torch.Tensor  # (B, S) long: each row's stop tokens, padded with -1
    remaining: torch.Tensor  # (B,) long: tokens each row may still emit, before this step's
    truncation: Truncation
    greedy: list[bool]  # host: rows that take the argmax (their uniform is not drawn)

    @classmethod
    def build(cls, params: list[SamplingParams], stop_ids: list[frozenset[int]], produced: list[int],
              device: torch.device | str) -> RowSampling:
        """Rows with these settings, stop-token sets and tokens already produced, on `device` (one copy each)."""
        temperature, top_k, top_p = params_tensors(params, device)
        width = max((len(s) for s in stop_ids), default=0) or 1
        stops = [sorted(s) + [-1] * (width - len(s)) for s in stop_ids]
        budget = [p.max_new_tokens - n for p, n in zip(params, produced, strict=True)]
        return cls(temperature, top_k, top_p, torch.tensor(stops, dtype=torch.long, device=device),
                   torch.tensor(budget, dtype=torch.long, device=device), Truncation.of(params),
                   [p.temperature <= 0 for p in params])


def sample_rows(logits: torch.Tensor, rows: RowSampling, u: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """One token per row from logits (B, V) with the rows' settings and uniforms u (B,) (ignored by greedy rows);
    returns (tokens (B,), logprobs (B,)), without reading the device on the host."""
    logprobs = sampling_logprobs(logits.float(), rows.temperature, rows.top_k, rows.top_p, rows.truncation)
    if all(rows.greedy):
        tokens = torch.argmax(logprobs, dim=-1)
    else:
        tokens = inverse_cdf(logprobs.exp(), u)
        if any(rows.greedy):
            tokens = torch.where(rows.temperature <= 0, torch.argmax(logprobs, dim=-1), tokens)
    return tokens, logprobs.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)


def finished(tokens: torch.Tensor, rows: RowSampling) -> torch.Tensor:
    """(B,) bool: the row emitted one of its stop tokens or its last allowed token (then counts the token)."""
    done = (tokens.unsqueeze(-1) == rows.stop_ids).any(-1) | (rows.remaining <= 1)
    rows.remaining -= 1
    return done


class UniformStream:
    """A request's uniforms in [0, 1) from its own seeded host generator, drawn in blocks: the i-th sampled token
    of a request always uses its i-th uniform, whatever shares its batch, across retractions too."""

    BLOCK = 64

    def __init__(self, seed: int):
        self._gen = make_generator(seed)
        self._block: list[float] = []
        self._next = 0

    def next(self) -> float:
        """The next uniform."""
        if self._next == len(self._block):
            self._block, self._next = torch.rand(self.BLOCK, generator=self._gen).tolist(), 0
        self._next += 1
        return self._block[self._next - 1]


def inverse_cdf(probs: torch.Tensor, u: torch.Tensor, block: int = 1024) -> torch.Tensor:
    """Per row, the token where the CDF of probs (B, V) first exceeds u (B,) ∈ [0, 1) of the row's mass.

    Two levels (block sums, then one block) instead of a full-vocabulary cumsum, which is slow on CPU.
    Never returns a zero-probability token: rounding at the top end is clamped to the last positive one.
    """
    rows, vocab = probs.shape
    nblocks = -(-vocab // block)
    if nblocks * block != vocab:
        probs = torch.nn.functional.pad(probs, (0, nblocks * block - vocab))
    padded = probs.view(rows, nblocks, block)
    mass = padded.sum(-1)  # (B, nblocks)
    cdf = mass.cumsum(-1)
    target = (u * cdf[:, -1]).unsqueeze(-1)  # (B, 1)
    last_block = (cdf < cdf[:, -1:]).sum(-1, keepdim=True)  # last block with positive mass
    b = torch.searchsorted(cdf, target, right=True).clamp(max=last_block)  # (B, 1)
    rest = target - (cdf.gather(-1, b) - mass.gather(-1, b))
    inner = padded[torch.arange(rows, device=probs.device), b.squeeze(-1)].cumsum(-1)  # (B, block)
    last = (inner < inner[:, -1:]).sum(-1, keepdim=True)
    t = torch.searchsorted(inner, rest, right=True).clamp(max=last)
    return (b * block + t).squeeze(-1)


def params_tensors(params: list[SamplingParams], device: torch.device | str) -> tuple[torch.Tensor, ...]:
    """(temperature, top_k, top_p) tensors, one entry per row, for sample()."""
    temperature = torch.tensor([float(p.temperature) for p in params], dtype=torch.float32, device=device)
    top_k = torch.tensor([int(p.top_k) for p in params], dtype=torch.long, device=device)
    top_p = torch.tensor([float(p.top_p) for p in params], dtype=torch.float32, device=device)
    return temperature, top_k, top_p


def recompute_logprobs(model, input_ids: list[int], output_ids: list[int], sampling: SamplingParams) -> list[float]:
    """Behaviour logprobs of output_ids recomputed with one full-sequence forward (for tests and checks)."""
    ids = torch.tensor([list(input_ids) + list(output_ids)], device=next(model.parameters()).device)
    with torch.inference_mode():
        logits = model(input_ids=ids).logits[0, len(input_ids) - 1 : -1].float()  # (T, V)
    n = logits.shape[0]
    temperature, top_k, top_p = params_tensors([sampling] * n, logits.device)
    lp = sampling_logprobs(logits, temperature, top_k, top_p)
    return lp.gather(-1, torch.tensor(output_ids, device=logits.device).unsqueeze(-1)).squeeze(-1).tolist()


