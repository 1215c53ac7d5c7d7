"""Chat-template rendering for token-in/token-out rollouts: prompts, action tokens, observation deltas, drift.

The first prompt is the chat template rendered once. After that the sequence only grows by appending:
the model's sampled ids verbatim, and observation deltas tokenized with the fixed-base trick: render a
fixed short conversation that ends with an assistant turn, render it again with the new messages and the
generation prompt, and keep only the tokens after the base's end-of-turn token. The delta never depends on
re-tokenizing the model's text.

After each observation the text of the running sequence is compared with a full re-render of the
conversation. For an append-only template they are equal; when they differ (the template re-renders
history, e.g. drops old reasoning or counts turns in the system prompt) the conversation forks: a new
segment starts from a fresh full render, and the old segment keeps the tokens that were actually sampled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentrl.types import Message, Segment, assistant, system, user

BASE_MESSAGES: list[Message] = [system("You are a helpful assistant."), user("Hello."), assistant("Hi.")]
"""The fixed base conversation for observation deltas (ends with an assistant turn)."""


class TemplateError(ValueError):
    """The chat template cannot be used for token-in/token-out rollouts (e.g. assistant turns lack an end token)."""


class ChatRenderer:
    """Renders messages with a tokenizer's chat template and computes the token deltas the agent loop appends.

    Args:
        tokenizer: a Hugging Face tokenizer with a chat template.
        chat_template: optional template string used instead of the tokenizer's own.
        eot_token_id: the token that ends an assistant turn (default: the tokenizer's eos, <|im_end|> for SmolLM2).
        base: the fixed base conversation for deltas; must end with an assistant message.
    """

    def __init__(self, tokenizer: Any, *, chat_template: str | None = None, eot_token_id: int | None = None,
                 base: Sequence[Message] | None = None):
        self.tokenizer = tokenizer
        self.chat_template = chat_template
        self.eot_token_id = int(tokenizer.eos_token_id if eot_token_id is None else eot_token_id)
        self.base = list(base or BASE_MESSAGES)
        self._base_closed = self.ids(self.base)
        if self.eot_token_id not in self._base_closed:
            eot = tokenizer.convert_ids_to_tokens(self.eot_token_id)
            raise TemplateError(f"the chat template does not end assistant turns with {eot!r} (id {self.eot_token_id}); "
                                "pass eot_token_id= the token that does")
        self._eot_at = len(self._base_closed) - 1 - self._base_closed[::-1].index(self.eot_token_id)
        self._base_open = self.ids(self.base[:-1], add_generation_prompt=True)
        self.glue_ids = self._base_closed[self._eot_at + 1:]
        """Template tokens that follow the end-of-turn token of an assistant turn (SmolLM2: a newline)."""

    @property
    def stop_token_ids(self) -> list[int]:
        """Token ids that end a generation: the end-of-turn token (and eos if different)."""
        ids = [self.eot_token_id]
        if self.tokenizer.eos_token_id is not None and self.tokenizer.eos_token_id not in ids:
            ids.append(int(self.tokenizer.eos_token_id))
        return ids

    def text(self, messages: Sequence[Message], add_generation_prompt: bool = False) -> str:
        """The conversation rendered by the chat template, as text."""
        return self.tokenizer.apply_chat_template(list(messages), tokenize=False, chat_template=self.chat_template,
                                                  add_generation_prompt=add_generation_prompt)

    def ids(self, messages: Sequence[Message], add_generation_prompt: bool = False) -> list[int]:
        """The conversation rendered and tokenized once (special tokens come from the template text)."""
        return list(self.tokenizer.encode(self.text(messages, add_generation_prompt), add_special_tokens=False))

    def decode(self, ids: Sequence[int]) -> str:
        """Token ids back to text, special tokens kept (display and drift checks only, never re-encoded)."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=False, clean_up_tokenization_spaces=False)

    def content(self, sampled_ids: Sequence[int]) -> str:
        """The assistant message content for sampled ids: their text without the end-of-turn token."""
        ids = list(sampled_ids)
        if ids and ids[-1] == self.eot_token_id:
            ids = ids[:-1]
        return self.decode(ids)

    def action_ids(self, content: str) -> list[int]:
        """The ids a model would sample to write `content` as its turn: content tokens plus end-of-turn.

        Taken from the template's own rendering of an assistant message after the generation prompt, so a
        scripted expert's action is tokenized exactly as the template would; falls back to encoding the
        content alone where the template merges it with the generation prompt.
        """
        full = self.ids(self.base[:-1] + [assistant(content)])
        body = full[len(self._base_open):] if full[: len(self._base_open)] == self._base_open else []
        if self.eot_token_id in body:
            body = body[: body.index(self.eot_token_id) + 1]
            if self.decode(body[:-1]) == content:
                return body
        return list(self.tokenizer.encode(content, add_special_tokens=False)) + [self.eot_token_id]

    def observation_ids(self, messages: Sequence[Message]) -> list[int]:
        """Tokens that follow an assistant turn's end-of-turn token: template glue, `messages`, generation prompt.

        Fixed-base trick: render BASE + messages with the generation prompt and strip the rendered base.
        Raises TemplateError if the template renders the base differently once messages follow it.
        """
        full = self.ids(self.base + list(messages), add_generation_prompt=True)
        if full[: len(self._base_closed)] != self._base_closed:
            raise TemplateError("the chat template is not append-only: it re-renders earlier messages")
        return full[self._eot_at + 1:]


class Conversation:
    """One episode's messages and token segments, grown by appending sampled ids and observation deltas."""

    def __init__(self, renderer: ChatRenderer, messages: Sequence[Message]):
        self.renderer = renderer
        self.messages: list[Message] = [dict(m) for m in messages]
        self.segments: list[Segment] = [Segment()]
        self.segments[0].append_prompt(renderer.ids(self.messages, add_generation_prompt=True))
        self.forks = 0
        self._closed = True  # whether the last action ended with the end-of-turn token

    @property
    def current(self) -> Segment:
        """The segment the next generation continues."""
        return self.segments[-1]

    @property
    def prompt_ids(self) -> list[int]:
        """The token ids to send to the engine for the next turn."""
        return list(self.current.token_ids)

    def append_action(self, ids: Sequence[int], logprobs: Sequence[float], versions: Sequence[int]) -> tuple[str, tuple[int, int]]:
        """Append an action's ids verbatim with mask 1; returns its text (display only) and token span."""
        start = len(self.current)
        self.current.append_sampled(list(ids), list(logprobs), list(versions))
        self._closed = bool(ids) and ids[-1] == self.renderer.eot_token_id
        text = self.renderer.content(ids)
        self.messages.append(assistant(text))
        return text, (start, len(self.current))

    def observation_ids(self, messages: Sequence[Message]) -> list[int]:
        """The mask-0 ids to append after the last action: end-of-turn if it was cut off, then the delta."""
        try:
            delta = self.renderer.observation_ids(messages)
        except TemplateError:
            delta = []  # cannot be expressed as a delta: append_observation will fork
        return ([] if self._closed else [self.renderer.eot_token_id]) + delta

    def append_observation(self, messages: Sequence[Message], ids: Sequence[int] | None = None) -> tuple[int, int]:
        """Append observation messages (mask 0); fork a new segment if the template drifted.

        Returns the observation's token span in the segment of the preceding action (empty after a fork,
        where the observation is part of the new segment's prompt).
        """
        ids = self.observation_ids(messages) if ids is None else list(ids)
        self.messages.extend(dict(m) for m in messages)
        expected = self.renderer.text(self.messages, add_generation_prompt=True)
        start = len(self.current)
        if self.renderer.decode(self.current.token_ids + list(ids)) == expected:
            self.current.append_prompt(list(ids))
            self._closed = True
            return start, len(self.current)
        self.forks += 1
        fresh = Segment()
        fresh.append_prompt(self.renderer.ids(self.messages, add_generation_prompt=True))
        self.segments.append(fresh)
        self._closed = True
        return start, start
