"""Diffs, patch application and git tree ids over in-memory trees, checked against real git."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from agentrl.envs.swe.patches import PatchError, apply_patch, changed_paths, make_diff, tree_id

OLD = {"pkg/mod.py": "def f(x):\n    return x + 1\n", "README": "no newline at end", "tests/test_a.py": "x = 1\n"}
NEW = {"pkg/mod.py": "def f(x):\n    return x - 1\n", "README": "no newline at end\n", "pkg/new.py": "y = 2\n"}


def test_diff_roundtrip_add_edit_delete():
    patch = make_diff(OLD, NEW)
    assert apply_patch(OLD, patch) == NEW
    assert apply_patch(NEW, make_diff(NEW, OLD)) == OLD
    assert changed_paths(patch) == ["README", "pkg/mod.py", "pkg/new.py", "tests/test_a.py"]


def test_empty_patch_is_identity():
    assert apply_patch(OLD, "") == OLD
    assert make_diff(OLD, OLD) == ""


def test_patch_with_wrong_context_is_refused():
    patch = make_diff(OLD, NEW)
    with pytest.raises(PatchError, match="does not apply to pkg/mod.py"):
        apply_patch({**OLD, "pkg/mod.py": "def g():\n    pass\n"}, patch)


def test_hunk_applies_at_an_offset():
    patch = make_diff(OLD, NEW)
    shifted = {**OLD, "pkg/mod.py": "import os\n\n\n" + OLD["pkg/mod.py"]}
    assert apply_patch(shifted, patch)["pkg/mod.py"] == "import os\n\n\n" + NEW["pkg/mod.py"]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_tree_id_and_patch_match_git(tmp_path):
    for path, text in OLD.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    run = lambda *a, **kw: subprocess.run(a, cwd=tmp_path, capture_output=True, text=True, **kw)  # noqa: E731
    run("git", "init", "-q")
    run("git", "add", "-A")
    assert run("git", "write-tree").stdout.strip() == tree_id(OLD)
    applied = run("git", "apply", "-", input=make_diff(OLD, NEW))
    assert applied.returncode == 0, applied.stderr
    assert {p: (tmp_path / p).read_text() for p in NEW} == NEW
    assert not (tmp_path / "tests/test_a.py").exists()
