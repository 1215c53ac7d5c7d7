"""One gateway session: the token-in/token-out record of every call an agent program makes.

Each call's choices are nodes of a tree. A node holds the mask-0 ids its call added after its parent (the
whole rendered prompt for a root) and the ids the engine sampled, verbatim. A new request *extends* a node
when the node's messages (the earlier request plus the assistant message the gateway answered) are a prefix
of the new request's messages: the prompt is then the node's exact tokens plus the delta of the new messages,
tokenized with the fixed-base trick (chat.ChatRenderer.observation_ids), so the model's output is never
re-tokenized. A request that extends no node (the agent edited or dropped history) is rendered fresh: a new
segment. So is one whose delta does not reproduce the template's own rendering of the whole conversation (a
template that re-renders history), as the agent loop's drift fork does.

At the end every leaf of the tree becomes one segment of the trajectory. A node shared by two leaves (`n` > 1,
or an agent that retried a call) is trained once: in the first segment; later segments carry it as context.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from agentrl.engine.protocol import Generation, SamplingParams
from agentrl.gateway.protocol import RequestError, assistant_reply, canonical, template_message
from agentrl.rollout.chat import ChatRenderer, TemplateError
from agentrl.tool_calls import tools_prompt
from agentrl.types import Segment, Turn


@dataclass
class SessionLimits:
    """Budgets of one session (training sets them from the rollout config)."""

    max_calls: int = 1_000_000
    """Chat-completion calls before the session answers 400 and the episode ends as max_turns."""
    max_context_tokens: int = 1_000_000
    """Prompt tokens (and prompt + max_tokens) before the session answers 400 and the episode ends as max_tokens."""
    max_new_tokens: int = 1024
    """Sampled tokens per choice: the default and the cap of a request's max_tokens."""


@dataclass(eq=False)
class _Node:
    """One choice of one call: what it appended after its parent, and the assistant message returned."""

    parent: _Node | None
    prompt_ids: list[int]
    gen: Generation
    messages: list[str]  # canonical messages of the request + the returned assistant message
    template_messages: list[dict[str, str]]  # the same as the template renders them (assistant = raw text)
    tools: str
    closed: bool  # the sampled ids end with the end-of-turn token
    action_text: str
    observation_text: str
    extended: bool = False

    def token_ids(self) -> list[int]:
        """Every token of this node's path, root first."""
        path, node = [], self
        while node is not None:
            path.append(node)
            node = node.parent
        return [t for n in reversed(path) for t in n.prompt_ids + n.gen.output_ids]


@dataclass
class Plan:
    """The prompt of one call: its token ids, the node it extends (None: a new segment) and the delta."""

    prompt_ids: list[int]
    parent: _Node | None
    delta_ids: list[int]
    canon: list[str]
    template_messages: list[dict[str, str]]
    tools: str
    observation_text: str
    fork: str = ""  # "" (extends or first call), "history" (no earlier call is a prefix) or "template"


@dataclass
class SessionStats:
    """Counts for gateway/* metrics."""

    calls: int = 0
    prefix_mismatches: int = 0
    template_forks: int = 0
    errors: int = 0


class Session:
    """The TITO state of one agent program's session (`prepare` → engine → `record`, then `segments`)."""

    def __init__(self, renderer: ChatRenderer, *, session_id: str | None = None, api_key: str | None = None,
                 limits: SessionLimits | None = None, sampling: SamplingParams | None = None,
                 fixed_sampling: bool = False, sampling_seed: int | None = None):
        self.renderer = renderer
        self.sampling = sampling
        """This session's sampling settings (None: the gateway's)."""
        self.fixed_sampling = fixed_sampling
        """True in training: a request's temperature/top_p are ignored, so behaviour logprobs are of the
        distribution the trainer assumes."""
        self.sampling_seed = sampling_seed
        """With a seed, call k samples with turn_seed(sampling_seed, k) (choice c: + c), as the agent loop's turn k."""
        self.id = session_id or uuid.uuid4().hex
        self.api_key = api_key or "sk-agentrl-" + uuid.uuid4().hex
        self.limits = limits or SessionLimits()
        self.nodes: list[_Node] = []
        self.stats = SessionStats()
        self.ending: tuple[str, str] | None = None
        """(termination reason, detail) once a budget or the engine ended the session's episode."""
        self.base_url = ""
        self._raw: dict[str, str] = {}  # canonical assistant message -> the text the model sampled for it
        template = renderer.chat_template or getattr(renderer.tokenizer, "chat_template", None) or ""
        self._native_tools = "tools" in template

    # ---- rendering ----

    def _with_tools(self, msgs: list[dict[str, str]], tools: list[dict[str, Any]]) -> list[dict[str, str]]:
        """Templates without tool support get the tool list in the system message (agentrl.tool_calls)."""
        if not tools or self._native_tools:
            return msgs
        text = tools_prompt(tools)
        if msgs and msgs[0]["role"] == "system":
            return [{**msgs[0], "content": msgs[0]["content"] + "\n\n" + text}, *msgs[1:]]
        return [{"role": "system", "content": text}, *msgs]

    def _text(self, msgs: list[dict[str, str]], tools: list[dict[str, Any]]) -> str:
        kwargs = {"tools": tools} if tools and self._native_tools else {}
        return self.renderer.tokenizer.apply_chat_template(
            msgs, tokenize=False, chat_template=self.renderer.chat_template, add_generation_prompt=True, **kwargs)

    def _fresh(self, messages: list[dict[str, Any]], canon: list[str], tools: list[dict[str, Any]]) -> tuple[list, list]:
        """Render the whole request (known assistant turns as the text the model sampled): a new segment."""
        msgs = self._with_tools([template_message(m, self._raw.get(c)) for m, c in zip(messages, canon, strict=True)],
                                tools)
        try:
            text = self._text(msgs, tools)
        except Exception as e:  # noqa: BLE001 - a template that refuses these messages is the caller's problem
            raise RequestError(f"the chat template cannot render these messages: {type(e).__name__}: {e}") from None
        return list(self.renderer.tokenizer.encode(text, add_special_tokens=False)), msgs

    # ---- one call ----

    def _extends(self, canon: list[str], tools: str) -> _Node | None:
        """The node with the longest message list that is a prefix of `canon` (latest on ties)."""
        best = None
        for node in self.nodes:
            k = len(node.messages)
            if node.tools == tools and k <= len(canon) and canon[:k] == node.messages:
                if best is None or k >= len(best.messages):
                    best = node
        return best

    def prepare(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Plan:
        """The prompt ids for a request: the exact tokens of the call it extends plus the new messages' delta,
        or a fresh render (a new segment). Raises RequestError when a budget is spent."""
        if self.ending is not None:
            raise RequestError(f"this session has ended ({self.ending[0]}: {self.ending[1]})", code=self.ending[0])
        if self.stats.calls >= self.limits.max_calls:
            self._end("max_turns", f"more than {self.limits.max_calls} calls")
        self.stats.calls += 1
        canon = [canonical(m) for m in messages]
        tkey = json.dumps(tools, sort_keys=True)
        parent, fork = self._extends(canon, tkey), ""
        if parent is not None:
            new = messages[len(parent.messages):]
            new_tm = [template_message(m, self._raw.get(c)) for m, c in zip(new, canon[len(parent.messages):],
                                                                               strict=True)]
            plan = self._delta(parent, new_tm, canon, tkey, tools)
            if plan is not None:
                return plan
            fork = "template"
            self.stats.template_forks += 1
        elif self.nodes:
            fork = "history"
            self.stats.prefix_mismatches += 1
        ids, msgs = self._fresh(messages, canon, tools)
        return Plan(ids, None, ids, canon, msgs, tkey, "", fork)

    def _delta(self, parent: _Node, new_tm: list[dict[str, str]], canon: list[str], tkey: str,
               tools: list[dict[str, Any]]) -> Plan | None:
        """Extend `parent` by the new messages' delta; None if the result is not what the template renders."""
        try:
            delta = self.renderer.observation_ids(new_tm)
        except TemplateError:
            return None
        delta = ([] if parent.closed else [self.renderer.eot_token_id]) + delta
        prompt = parent.token_ids() + delta
        msgs = parent.template_messages + new_tm
        if self.renderer.decode(prompt) != self._text(msgs, tools):
            return None
        return Plan(prompt, parent, delta, canon, msgs, tkey, "\n".join(m["content"] for m in new_tm))

    def max_new_tokens(self, plan: Plan, requested: int | None) -> int:
        """Tokens this call may sample: the request's max_tokens capped by the per-call and context budgets."""
        room = self.limits.max_context_tokens - len(plan.prompt_ids)
        if room <= 0:
            self._end("max_tokens", f"the prompt has {len(plan.prompt_ids)} tokens; the session's context budget "
                                    f"is {self.limits.max_context_tokens}", code="context_length_exceeded")
        return max(1, min(requested or self.limits.max_new_tokens, self.limits.max_new_tokens, room))

    def _end(self, reason: str, detail: str, code: str | None = None) -> None:
        self.ending = (reason, detail)
        raise RequestError(f"session budget spent: {detail}", code=code or reason)

    def fail(self, reason: str, detail: str) -> None:
        """Record an infrastructure failure (the engine's) that ends the session's episode."""
        self.stats.errors += 1
        if self.ending is None:
            self.ending = (reason, detail)

    def record(self, plan: Plan, gens: list[Generation], tools: list[dict[str, Any]], *, parse_tools: bool,
               stop: list[str]) -> list[dict[str, Any]]:
        """Add one node per choice and return the choices ({"message", "finish_reason"}) to answer with."""
        choices = []
        for i, gen in enumerate(gens):
            closed = bool(gen.output_ids) and gen.output_ids[-1] == self.renderer.eot_token_id
            raw = self.renderer.content(gen.output_ids)
            shown = raw
            matched = (gen.meta.get("finish_reason") or {}).get("matched") if isinstance(gen.meta, dict) else None
            if isinstance(matched, str) and matched in stop and matched in shown:
                shown = shown[: shown.index(matched)]  # OpenAI leaves the stop sequence out of the content
            reply = assistant_reply(shown, tools, parse=parse_tools, id_prefix=f"call_{self.stats.calls}_{i}",
                                    truncated=gen.finish_reason == "length")
            key = canonical(reply)
            self._raw[key] = raw
            self.nodes.append(_Node(plan.parent, plan.delta_ids, gen, plan.canon + [key],
                                    plan.template_messages + [{"role": "assistant", "content": raw}], plan.tools,
                                    closed, raw, plan.observation_text))
            finish = "tool_calls" if reply.get("tool_calls") else gen.finish_reason
            choices.append({"message": reply, "finish_reason": finish})
        if plan.parent is not None:
            plan.parent.extended = True
        return choices

    # ---- the record ----

    def segments(self) -> tuple[list[Segment], list[Turn]]:
        """Every leaf as a segment (in call order) and the turns; each sampled token is trained once."""
        segments: list[Segment] = []
        turns: list[Turn] = []
        trained: set[int] = set()
        for leaf in (n for n in self.nodes if not n.extended):
            path, node = [], leaf
            while node is not None:
                path.append(node)
                node = node.parent
            seg, last = Segment(), None
            for node in reversed(path):
                start = len(seg)
                seg.append_prompt(node.prompt_ids)
                if last is not None:
                    last.observation_span, last.observation_text = (start, len(seg)), node.observation_text
                last = None
                if id(node) in trained:
                    seg.append_prompt(node.gen.output_ids)
                    continue
                trained.add(id(node))
                a = len(seg)
                seg.append_sampled(node.gen.output_ids, node.gen.logprobs, node.gen.versions)
                last = Turn(segment=len(segments), action_span=(a, len(seg)), observation_span=(len(seg), len(seg)),
                            action_text=node.action_text, finish_reason=node.gen.finish_reason)
                turns.append(last)
            segments.append(seg)
        return segments, turns

    def metrics(self) -> dict[str, float]:
        """gateway/* counts of this session (rates over the calls that could have extended an earlier one)."""
        s = self.stats
        leaves = sum(not n.extended for n in self.nodes)
        return {
            "gateway/calls": s.calls,
            "gateway/prefix_mismatches": s.prefix_mismatches,
            "gateway/prefix_mismatch_rate": s.prefix_mismatches / (s.calls - 1) if s.calls > 1 else 0.0,
            "gateway/template_forks": s.template_forks,
            "gateway/segments": leaves,
            "gateway/errors": s.errors,
        }
