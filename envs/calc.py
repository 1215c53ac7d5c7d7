"""calc: arithmetic word problems solved step by step with a `calculator` tool.

Example task (difficulty 2): "Mia has 24 marbles. Then she gets 17 more. Then she splits them equally
into 3 bags and keeps one bag. How many marbles does Mia have now?" → calculator("24 + 17") → 41 …
→ answer(value=...) ends the episode.
"""

from __future__ import annotations

import ast
import hashlib
import math
import operator
from dataclasses import dataclass
from typing import Any

from agentrl import safe_ast
from agentrl.agent_env import AgentEnv
from agentrl.tool_calls import FormatError, format_call, function_tool
from agentrl.types import Message, tool, user

NAMES = [("Mia", "she"), ("Leo", "he"), ("Ava", "she"), ("Sam", "he"), ("Zoe", "she"), ("Omar", "he")]
ITEMS = ["marbles", "apples", "stickers", "coins", "pencils", "cards", "shells", "books"]
# (low, high) for operands and number of operations per difficulty level
LEVELS = {1: (10, 99, 1), 2: (10, 99, 2), 3: (10, 999, 3)}

CALCULATOR = function_tool("calculator", "Evaluate an arithmetic expression (+, -, *, /, parentheses).",
                           {"expression": {"type": "string", "description": "e.g. 12 * 7"}})
ANSWER = function_tool("answer", "Give the final answer; this ends the episode.",
                       {"value": {"type": "number", "description": "the final number"}})

SYSTEM_PROMPT = ("Solve the arithmetic word problem. Use the calculator tool for every operation, one call "
                 "per turn, then give the final number with the answer tool.")

_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
        ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}


@dataclass(frozen=True)
class Task:
    """One problem: its question, the (expression, value) steps that solve it, and the answer."""

    id: str
    question: str
    steps: tuple[tuple[str, int], ...]
    answer: int


def make_task(rng: Any, difficulty: int) -> Task:
    """A random word problem of `difficulty` operations, every intermediate a positive integer."""
    low, high, n_ops = LEVELS[difficulty]
    name, pronoun = NAMES[int(rng.integers(len(NAMES)))]
    item = ITEMS[int(rng.integers(len(ITEMS)))]
    value = int(rng.integers(low, high + 1))
    sentences = [f"{name} has {value} {item}."]
    steps = []
    for _ in range(n_ops):
        op = str(rng.choice(["+", "-", "*", "/"]))
        divisors = [d for d in range(2, 10) if value % d == 0]
        if op == "/" and not divisors:
            op = "+"
        if op == "-" and value <= low:
            op = "*"
        if op == "+":
            b = int(rng.integers(low, high + 1))
            sentences.append(f"Then {pronoun} gets {b} more.")
        elif op == "-":
            b = int(rng.integers(1, value))
            sentences.append(f"Then {pronoun} gives away {b}.")
        elif op == "*":
            b = int(rng.integers(2, 10))
            sentences.append(f"Then the number of {item} becomes {b} times as many.")
        else:
            b = divisors[int(rng.integers(len(divisors)))]
            sentences.append(f"Then {pronoun} splits them equally into {b} bags and keeps one bag.")
        expression = f"{value} {op} {b}"
        value = int(_OPS[{"+": ast.Add, "-": ast.Sub, "*": ast.Mult, "/": ast.FloorDiv}[op]](value, b))
        steps.append((expression, value))
    question = " ".join(sentences) + f" How many {item} does {name} have now?"
    task_id = f"calc-d{difficulty}-" + hashlib.sha1(question.encode()).hexdigest()[:10]
    return Task(id=task_id, question=question, steps=tuple(steps), answer=value)


def calculate(expression: str) -> str:
    """Evaluate + - * / // % ** and parentheses on numbers; errors come back as text for the model."""
    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            return -ev(node.operand) if isinstance(node.op, ast.USub) else ev(node.operand)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            left, right = ev(node.left), ev(node.right)
            if isinstance(node.op, ast.Pow) and (abs(right) > 64 or abs(left) > 1e6):
                raise ValueError("exponent too large")
            return _OPS[type(node.op)](left, right)
        raise ValueError(f"unsupported syntax: {ast.unparse(node)!r}")

    text = expression.replace("×", "*").replace("÷", "/").replace("^", "**").strip()
    try:
        value = ev(safe_ast.parse(text, mode="eval").body)
    except ZeroDivisionError:
        return "Error: division by zero"
    except (SyntaxError, ValueError, TypeError, OverflowError, RecursionError) as e:
        return f"Error: {e}" if not isinstance(e, SyntaxError) else f"Error: {expression!r} is not an arithmetic expression"
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    return str(round(value, 6) if isinstance(value, float) else value)


class CalcEnv(AgentEnv):
    """Arithmetic word problems solved with a calculator tool; reward 1 for the right answer.

    ## Task
    A word problem generated from the reset seed: a starting quantity changed by `difficulty` operations.
    ## Actions
    One tool call per turn: ``calculator(expression)`` or ``answer(value)`` (Hermes, XML or JSON forms).
    ## Observations
    A tool message with the calculator's result, or a user message naming a format error.
    ## Reward
    1.0 when the answered value equals the true answer (to 1e-6), else 0.0. With `step_reward` > 0, a calculator
    result that equals the solution's next intermediate value (in order, each once) also earns step_reward: a
    per-turn signal for turn-level credit (algo.credit).
    ## Episode End
    Terminated by `answer`. Turn, token and format-error budgets belong to the agent loop.
    ## Arguments
    difficulty: 1 (one operation, two-digit numbers), 2 (two operations), 3 (three, up to three digits).
    step_reward: reward of each intermediate value reached with the calculator (default 0: outcome only).
    ## Expert
    `expert_action` computes each step with the calculator, then answers (for the supervised warm start).
    ## Version History
    v0: initial version. v1: optional step_reward (default 0 leaves v0's rewards unchanged).
    """

    tools = (CALCULATOR, ANSWER)
    system_prompt = SYSTEM_PROMPT

    def __init__(self, difficulty: int = 1, step_reward: float = 0.0):
        if difficulty not in LEVELS:
            raise ValueError(f"difficulty must be one of {sorted(LEVELS)}, got {difficulty!r}")
        if not (isinstance(step_reward, (int, float)) and 0 <= step_reward <= 1):
            raise ValueError(f"step_reward must be a number in [0, 1], got {step_reward!r}")
        self.difficulty = difficulty
        self.step_reward = float(step_reward)
        self.task: Task | None = None
        self._calls = 0
        self._reached = 0  # intermediate values of the solution reached so far (step_reward)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[list[Message], dict[str, Any]]:
        """A new problem from the seed; options={"difficulty": d} overrides the level for this episode."""
        super().reset(seed=seed)
        difficulty = int((options or {}).get("difficulty", self.difficulty))
        if difficulty not in LEVELS:
            raise ValueError(f"difficulty must be one of {sorted(LEVELS)}, got {difficulty!r}")
        self.task = make_task(self.np_random, difficulty)
        self._calls = self._reached = 0
        return [self.system_message(), user(self.task.question)], {"task_id": self.task.id, "difficulty": difficulty}

    def step(self, action: str) -> tuple[list[Message], float, bool, bool, dict[str, Any]]:
        """Run the calculator or grade the answer; a malformed action gets a format-error message."""
        assert self.task is not None, "call reset() before step()"
        call = self.parse_action(action)
        if isinstance(call, FormatError):
            return [user(call.message)], 0.0, False, False, {"format_error": True, "error_kind": call.kind}
        if call.name == "calculator":
            self._calls += 1
            result = calculate(call.arguments["expression"])
            return [tool(result, name="calculator")], self._step_credit(result), False, False, {}
        correct = math.isclose(float(call.arguments["value"]), self.task.answer, abs_tol=1e-6)
        info = {"correct": correct, "expected": self.task.answer, "given": call.arguments["value"]}
        return [tool("Correct." if correct else "Wrong.", name="answer")], float(correct), True, False, info

    def _step_credit(self, result: str) -> float:
        """step_reward if the calculator's result is the solution's next intermediate value, else 0."""
        if not self.step_reward or self._reached >= len(self.task.steps):
            return 0.0
        if result != str(self.task.steps[self._reached][1]):
            return 0.0
        self._reached += 1
        return self.step_reward

    def expert_action(self) -> str | None:
        """The next calculator step (from the true intermediate values), then the answer."""
        if self.task is None:
            return None
        if self._calls < len(self.task.steps):
            expression = self.task.steps[self._calls][0]
            return f"Step {self._calls + 1}: {expression}.\n" + format_call("calculator", {"expression": expression})
        return f"The answer is {self.task.answer}.\n" + format_call("answer", {"value": self.task.answer})
