"""Core data types that cross module boundaries: messages, turns, segments, trajectories.

A trajectory is one episode. Its token sequence is built by appending (token-in/token-out):
sampled ids verbatim (loss_mask 1, behaviour logprob from the engine, policy version from the engine)
and observation deltas (loss_mask 0, logprob 0.0, version -1). When a chat template is not
append-only the trajectory forks into a new segment; all segments share id, reward and advantage.
"""

from __future__ import annotations

import enum
import json
from dataclasses import asdict, dataclass, field
from typing import Any

Message = dict[str, Any]
"""A chat message: {"role": "system"|"user"|"assistant"|"tool", "content": str, ...}."""

TRAJECTORY_FORMAT = "agentrl-trajectory-2"
"""Version 2 moved `termination_detail` and `expert` out of `metrics` into fields; version 1 lines still load."""


def system(content: str) -> Message:
    """A system message."""
    return {"role": "system", "content": content}


def user(content: str) -> Message:
    """A user message."""
    return {"role": "user", "content": content}


def assistant(content: str) -> Message:
    """An assistant message."""
    return {"role": "assistant", "content": content}


def tool(content: str, name: str | None = None) -> Message:
    """A tool-result message (an observation)."""
    msg: Message = {"role": "tool", "content": content}
    if name is not None:
        msg["name"] = name
    return msg


class TerminationReason(str, enum.Enum):
    """Why an episode ended. Each reason maps to one failure-policy action (see FAILURE_POLICY)."""

    DONE = "done"
    MAX_TURNS = "max_turns"
    MAX_TOKENS = "max_tokens"
    TIMEOUT = "timeout"
    FORMAT_ERRORS = "format_errors"
    ENV_ERROR = "env_error"
    SANDBOX_ERROR = "sandbox_error"
    ENGINE_ERROR = "engine_error"


class FailureAction(str, enum.Enum):
    """What the trainer does with an episode that ended for a given reason."""

    SCORE = "score"  # train on it with its reward
    MASK = "mask"  # keep it out of the loss (infrastructure failures never train as reward 0)
    RETRY = "retry"  # run the episode again


FAILURE_POLICY: dict[TerminationReason, FailureAction] = {
    TerminationReason.DONE: FailureAction.SCORE,
    TerminationReason.MAX_TURNS: FailureAction.SCORE,
    TerminationReason.MAX_TOKENS: FailureAction.SCORE,
    TerminationReason.TIMEOUT: FailureAction.SCORE,
    TerminationReason.FORMAT_ERRORS: FailureAction.SCORE,
    TerminationReason.ENV_ERROR: FailureAction.MASK,
    TerminationReason.SANDBOX_ERROR: FailureAction.RETRY,
    TerminationReason.ENGINE_ERROR: FailureAction.RETRY,
}
"""The one failure table: agent-caused endings are scored, infrastructure failures never train (or count) as 0.
Training drops unscored episodes from the loss, evaluation leaves them out of the rates, the collectors rerun
RETRY endings."""


def scored(termination: TerminationReason | str) -> bool:
    """True if an episode that ended this way counts with its reward (FAILURE_POLICY says SCORE); False for an
    infrastructure failure, which is masked out of training and left out of evaluation's rates."""
    return FAILURE_POLICY[TerminationReason(termination)] is FailureAction.SCORE


@dataclass
class Segment:
    """One contiguous token sequence of a trajectory (a new one starts when the template is not append-only).

    All lists have the same length. loss_mask is 1 exactly on sampled tokens; behaviour_logprobs is the
    engine's logprob there and 0.0 elsewhere; versions is the policy version that sampled the token, -1
    for prompt/observation tokens.
    """

    token_ids: list[int] = field(default_factory=list)
    loss_mask: list[int] = field(default_factory=list)
    behaviour_logprobs: list[float] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.token_ids)

    def append_prompt(self, ids: list[int]) -> None:
        """Append tokens that were not sampled (prompt, template glue, observations): mask 0."""
        self.token_ids.extend(ids)
        self.loss_mask.extend([0] * len(ids))
        self.behaviour_logprobs.extend([0.0] * len(ids))
        self.versions.extend([-1] * len(ids))

    def append_sampled(self, ids: list[int], logprobs: list[float], versions: list[int]) -> None:
        """Append tokens sampled by the engine verbatim: mask 1 with their behaviour logprobs and versions."""
        if not (len(ids) == len(logprobs) == len(versions)):
            raise ValueError(
                f"sampled ids/logprobs/versions differ in length: {len(ids)}/{len(logprobs)}/{len(versions)}"
            )
        self.token_ids.extend(ids)
        self.loss_mask.extend([1] * len(ids))
        self.behaviour_logprobs.extend(float(x) for x in logprobs)
        self.versions.extend(int(v) for v in versions)

    @property
    def num_action_tokens(self) -> int:
        return sum(self.loss_mask)


@dataclass
class Turn:
    """One action/observation exchange, for display and per-turn metrics.

    Spans are [start, end) token offsets inside segment `segment`.
    """

    segment: int
    action_span: tuple[int, int]
    observation_span: tuple[int, int]
    action_text: str
    observation_text: str = ""
    finish_reason: str = ""
    timings: dict[str, float] = field(default_factory=dict)
    reward: float = 0.0
    """The env's reward for this step (before any closing grade; turn-level credit, agentrl.algo.credit)."""
    format_error: bool = False
    """The env reported this action as unparseable (info["format_error"])."""


@dataclass
class Trajectory:
    """One episode, ready for training: token segments, reward, termination, metrics. JSONL-serializable."""

    id: str
    group_id: str
    env_id: str
    task_id: str
    segments: list[Segment] = field(default_factory=list)
    turns: list[Turn] = field(default_factory=list)
    reward: float = 0.0
    reward_info: dict[str, Any] = field(default_factory=dict)
    termination: TerminationReason = TerminationReason.DONE
    termination_detail: str = ""
    """Why it ended, in words (the exception of an env/engine/sandbox error, the budget that ran out)."""
    expert: bool = False
    """True if the actions came from the env's scripted expert (the supervised warm start), not the policy."""
    metrics: dict[str, Any] = field(default_factory=dict)

    @property
    def num_tokens(self) -> int:
        return sum(len(s) for s in self.segments)

    @property
    def num_action_tokens(self) -> int:
        return sum(s.num_action_tokens for s in self.segments)

    def to_dict(self) -> dict[str, Any]:
        """A JSON-safe dict (lossless: from_dict(to_dict(t)) == t)."""
        d = asdict(self)
        d["termination"] = self.termination.value
        d["format"] = TRAJECTORY_FORMAT
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Trajectory:
        """Inverse of to_dict; also reads version 1 lines (termination_detail and expert inside metrics)."""
        d = dict(d)
        d.pop("format", None)
        metrics = d["metrics"] = dict(d.get("metrics", {}))
        for key in ("termination_detail", "expert"):
            if key in metrics:
                d.setdefault(key, metrics.pop(key))
        d["segments"] = [Segment(**s) for s in d.get("segments", [])]
        d["turns"] = [
            Turn(**{**t, "action_span": tuple(t["action_span"]), "observation_span": tuple(t["observation_span"])})
            for t in d.get("turns", [])
        ]
        d["termination"] = TerminationReason(d.get("termination", "done"))
        return cls(**d)

    def to_json(self) -> str:
        """One JSONL line."""
        return json.dumps(self.to_dict(), ensure_ascii=False)

    @classmethod
    def from_json(cls, line: str) -> Trajectory:
        """Parse one JSONL line written by to_json."""
        return cls.from_dict(json.loads(line))

    def render(self, tokenizer: Any = None, *, max_chars: int | None = None) -> str:
        """Readable text of the trajectory with prompt, action and observation spans marked (to debug masks).

        With a tokenizer, every span is decoded from the token ids, so what you read is exactly what the
        trainer sees; action spans (loss_mask 1) are shown as ``>>> action`` with their mean behaviour logprob.
        Without one, the turns' stored texts are shown instead.

        Args:
            tokenizer: a Hugging Face tokenizer to decode token ids, or None.
            max_chars: cut each span's text to this many characters (None: no limit).
        """
        def clip(text: str) -> str:
            if max_chars is None or len(text) <= max_chars:
                return text
            return text[:max_chars] + f"... [{len(text) - max_chars} more chars]"

        lines = [
            f"=== trajectory {self.id} env={self.env_id} task={self.task_id} group={self.group_id}",
            f"    reward={self.reward} termination={self.termination.value} segments={len(self.segments)} "
            f"tokens={self.num_tokens} action_tokens={self.num_action_tokens} turns={len(self.turns)}",
        ]
        if tokenizer is None:
            for i, turn in enumerate(self.turns):
                lines.append(f"--- >>> action (turn {i}, finish={turn.finish_reason})")
                lines.append(clip(turn.action_text))
                lines.append(f"--- <<< observation (turn {i})")
                lines.append(clip(turn.observation_text))
            return "\n".join(lines)
        turn_of = {(t.segment, t.action_span[0]): i for i, t in enumerate(self.turns)}
        for s, seg in enumerate(self.segments):
            lines.append(f"=== segment {s}: {len(seg)} tokens, {seg.num_action_tokens} action tokens")
            start = 0
            while start < len(seg):
                end = start
                while end < len(seg) and seg.loss_mask[end] == seg.loss_mask[start]:
                    end += 1
                text = tokenizer.decode(seg.token_ids[start:end], skip_special_tokens=False)
                if seg.loss_mask[start]:
                    lps = seg.behaviour_logprobs[start:end]
                    turn = turn_of.get((s, start))
                    label = f">>> action [{start}:{end}] mask=1" + (f" turn {turn}" if turn is not None else "")
                    label += f" mean_logprob={sum(lps) / len(lps):.3f} versions={sorted(set(seg.versions[start:end]))}"
                else:
                    kind = "prompt" if start == 0 else "observation"
                    label = f"<<< {kind} [{start}:{end}] mask=0"
                lines.append(f"--- {label}")
                lines.append(clip(text))
                start = end
        last = self.turns[-1] if self.turns else None
        if last and last.observation_span[0] == last.observation_span[1] and last.segment == len(self.segments) - 1:
            lines.append("--- <<< final observation (not tokenized)")
            lines.append(clip(last.observation_text))
        return "\n".join(lines)
