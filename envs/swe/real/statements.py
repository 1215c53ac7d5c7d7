"""Issue texts for swe_real tasks, made from the package's own failing tests (no LLM).

Level 1 (the text as stored) is a one-sentence symptom plus the failing test's output: the test's own failing
line (`>`) and pytest's error lines (`E`). Never the test's name, never a frame inside the package (that would
point at the bug). Level 2 (levels.symptom_only) keeps only the sentence; level 0 adds the faulty function.
"""

from __future__ import annotations

import ast
import random
import re

from agentrl import safe_ast

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
_CUT_ADDRESS = re.compile(r"\.\.\.x[0-9a-f]{4,16}>")  # pytest's shortened repr kept an address's tail: `<m....x7f5e..>`
_EXC = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Warning|Exit|Interrupt))\b")
MAX_E_LINES = 6
MAX_LINE = 160
TEMPLATES = (
    "{sentence}\n\nReproduction (the package's own test output):\n\n```\n{output}\n```",
    "Since a recent change in `{package}`, {sentence_lc}\n\nReproduction from the test suite:\n\n```\n{output}\n```",
    "Bug in `{package}`: {sentence_lc}\n\nReproduction:\n\n```\n{output}\n```",
)


def _clean(line: str) -> str:
    line = _CUT_ADDRESS.sub("...>", _ADDRESS.sub("", line.rstrip()))  # an address differs from run to run
    return line if len(line) <= MAX_LINE else line[: MAX_LINE - 3] + "..."


def failure_excerpt(text: str) -> tuple[str, list[str]]:
    """(the test's first `>` line, the last traceback's `E` lines) of a pytest failure text."""
    lines = text.splitlines()
    first = next((ln[1:].strip() for ln in lines if ln.startswith(">")), "")
    errors: list[str] = []
    for ln in reversed(lines):  # the E lines of the innermost frame are at the end
        if ln.startswith("E "):
            errors.append(ln)
        elif errors:
            break
    errors.reverse()
    return first, [_clean(e) for e in errors[:MAX_E_LINES]]


def _called_names(line: str, names: set[str]) -> list[str]:
    """Names defined in the package that the failing line calls or reads, in order of appearance."""
    try:
        tree = safe_ast.parse(line.strip().removeprefix("assert ").strip(), mode="exec")
    except SyntaxError:
        return []
    found: list[str] = []
    for node in ast.walk(tree):
        name = node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
        if name in names and name not in found:
            found.append(name)
    return found


def sentence(package: str, first: str, errors: list[str], names: set[str]) -> str:
    """One sentence saying what goes wrong, naming the package function the failing line uses (if any)."""
    called = _called_names(first, names)
    subject = f"`{called[0]}`" if called else f"`{package}`"
    err = errors[0][1:].strip() if errors else ""
    exc = _EXC.match(err)
    if exc and exc.group(1) != "AssertionError":
        return f"{subject} raises `{exc.group(1)}` where it should not."
    if "DID NOT RAISE" in err:
        return f"{subject} no longer raises the error it should."
    return f"{subject} gives a wrong result."


def problem_statement(package: str, failures: list[str], names: set[str], rng: random.Random) -> str:
    """The issue text for one bug (one failure text) or several (one paragraph each)."""
    parts = []
    template = TEMPLATES[rng.randrange(len(TEMPLATES))]
    for i, text in enumerate(failures):
        first, errors = failure_excerpt(text)
        said = sentence(package, first, errors, names)
        output = "\n".join(([f">   {_clean(first)}"] if first else []) + errors) or "(the test fails)"
        form = template if i == 0 else TEMPLATES[0]
        said_lc = said if said.startswith("`") else said[0].lower() + said[1:]
        parts.append(form.format(sentence=said if i == 0 else f"Also, {said_lc}", sentence_lc=said_lc,
                                 package=package, output=output))
    return "\n\n".join(parts)


def defined_names(sources: dict[str, str]) -> set[str]:
    """Every function, method and class name defined in the package's source files (what a symptom may name)."""
    names: set[str] = set()
    for text in sources.values():
        try:
            tree = safe_ast.parse(text)
        except SyntaxError:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) and not node.name.startswith("__"):
                names.add(node.name)
    return names


NAMED = re.compile(r"`(\w+)` (?:gives a wrong result|raises `|no longer raises)")


def named_in(statement: str) -> list[str]:
    """The names the issue text's sentences blame (`name` gives a wrong result, raises ..., no longer raises), in
    order: where a policy that reads the issue looks first."""
    found: list[str] = []
    for name in NAMED.findall(statement):
        if name not in found:
            found.append(name)
    return found
