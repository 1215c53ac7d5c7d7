"""`parse`: ast.parse under one process-wide lock.

CPython 3.11 converts the parser's tree to Python objects with an interpreter-wide recursion counter; two
threads parsing at once can trip it ("SystemError: AST constructor recursion depth mismatch"). Envs parse in
worker threads (training builds and grades episodes concurrently), so every runtime parse goes through here.
"""

from __future__ import annotations

import ast
import threading

_LOCK = threading.Lock()


def parse(source: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """ast.parse(source, filename, mode), one thread at a time."""
    with _LOCK:
        return ast.parse(source, filename, mode)
