"""Observation text for tool results.

Bash results read `<returncode>N</returncode>\\n<output>\\n...\\n</output>`. Long output keeps its head and
its tail (errors and test summaries sit at the end) with an `<elided_chars>` marker between, ANSI escapes
are stripped, `\\r\\n` becomes `\\n`. The truncated text is what goes into trajectories.
"""

from __future__ import annotations

import re

ANSI = re.compile(r"\x1B[@-_][0-?]*[ -/]*[@-~]")
OUTPUT_LIMIT = 10_000
HEAD = TAIL = 5_000
EDITOR_LIMIT = 16_000
EMPTY = "Your command ran successfully and did not produce any output."
CLIPPED = ("<response clipped><NOTE>To save on context only part of this file has been shown to you. Use "
           "`view_range` or `grep -n` to see the lines you need.</NOTE>")


def clean(text: str) -> str:
    """Strip ANSI escape sequences and other control characters (tabs and newlines kept); CRLF -> LF."""
    text = ANSI.sub("", text).replace("\r\n", "\n").replace("\r", "\n")
    return "".join(c for c in text if c in "\n\t" or ord(c) >= 32)


def head_tail(text: str, limit: int = OUTPUT_LIMIT, head: int = HEAD, tail: int = TAIL) -> str:
    """`text` unchanged when at most `limit` chars; else a warning, the first `head` and last `tail` chars."""
    if len(text) <= limit:
        return text
    elided = len(text) - head - tail
    return ("The output of your last command was too long. Use a command that prints less (e.g. `head`, `tail`, "
            "`grep`, `sed -n`), or redirect it to a file and search it.\n"
            f"{text[:head]}\n<elided_chars>\n{elided} characters elided\n</elided_chars>\n{text[-tail:]}")


def bash_observation(exit_code: int, output: str, *, timed_out: bool = False, timeout: float | None = None,
                     limit: int = OUTPUT_LIMIT) -> str:
    """The observation for one bash command."""
    body = clean(output)
    if timed_out:
        exit_code = 124
        note = (f"Command timed out after {timeout:g}s and was killed (all processes started by it were "
                "terminated)." if timeout else "Command timed out and was killed.")
        body = f"{body.rstrip()}\n{note}" if body.strip() else note
    elif not body.strip():
        body = EMPTY if exit_code == 0 else "(no output)"
    body = head_tail(body, limit)
    return f"<returncode>{exit_code}</returncode>\n<output>\n{body.rstrip(chr(10))}\n</output>"


def clip(text: str, limit: int = EDITOR_LIMIT) -> str:
    """Editor output capped at `limit` chars with SWE-agent's `<response clipped>` note."""
    text = clean(text)
    return text if len(text) <= limit else text[:limit] + "\n" + CLIPPED
