"""A plain tool-using agent written against the `openai` package, trained unchanged through the gateway.

    pip install openai        # already there with agentrl's dev extras
    agentrl train --env external:examples/openai_agent.py:run model.name=smollm2-135m-instruct
    agentrl eval --env external:examples/openai_agent.py:run --model runs/<run>/checkpoints/step_N/model

The agent is an ordinary loop over chat completions with a `calc` tool: it sends OpenAI messages, runs the
tool calls it gets back, appends `tool` messages and stops at the first answer without a call. All it takes
from agentrl is the endpoint of its episode (`client.base_url`, `client.api_key`); everything else is the
OpenAI client as any agent uses it (docs/gateway.md).
"""

from __future__ import annotations

import json
import random

from openai import AsyncOpenAI

SYSTEM = "Solve the arithmetic problem. Use the calc tool for every computation, then answer with the number."
TOOLS = [{"type": "function", "function": {
    "name": "calc", "description": "Evaluate an arithmetic expression with + - * and parentheses.",
    "parameters": {"type": "object", "properties": {"expression": {"type": "string"}}, "required": ["expression"]},
}}]


def task(seed: int | None) -> dict:
    """A two-operation word problem drawn from the episode's seed (its answer kept for the reward)."""
    rng = random.Random(seed)
    a, b, c = rng.randint(2, 12), rng.randint(2, 12), rng.randint(1, 20)
    return {"id": f"{a}x{b}+{c}", "question": f"A box holds {a} rows of {b} eggs, plus {c} loose eggs. How many eggs?",
            "answer": a * b + c}


def calc(expression: str) -> str:
    """The tool: evaluate + - * ( ) on integers (anything else is an error message for the model)."""
    if not expression or set(expression) - set("0123456789+-*() "):
        return "error: only integers, + - * and parentheses are allowed"
    try:
        return str(eval(expression, {"__builtins__": {}}))  # noqa: S307 - the character set above is all it can hold
    except Exception as e:  # noqa: BLE001 - a bad expression is feedback for the model
        return f"error: {type(e).__name__}"


async def run(task: dict, client, max_steps: int = 4) -> float:
    """The agent loop; returns 1.0 if the final answer contains the right number, else 0.0."""
    async with AsyncOpenAI(base_url=client.base_url, api_key=client.api_key) as llm:
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task["question"]}]
        for _ in range(max_steps):
            reply = await llm.chat.completions.create(model="agentrl", messages=messages, tools=TOOLS, max_tokens=96)
            message = reply.choices[0].message
            messages.append(message)
            if not message.tool_calls:
                return float(str(task["answer"]) in (message.content or ""))
            for call in message.tool_calls:
                args = json.loads(call.function.arguments)
                messages.append({"role": "tool", "tool_call_id": call.id,
                                 "content": calc(str(args.get("expression", "")))})
    return 0.0
