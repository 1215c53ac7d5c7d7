"""str_replace_editor semantics (SWE-agent's), on an in-memory tree and on a real Docker sandbox."""

from __future__ import annotations

import pytest
from agentrl.envs.swe.editor import DictFiles, Editor, SandboxFiles

ROOT = "/workspace/repo"
TEXT = "def f(x):\n    y = x + 1\n    return y\n"


@pytest.fixture
def editor():
    return Editor(DictFiles({f"{ROOT}/m.py": TEXT, f"{ROOT}/pkg/a.py": "a = 1\n"}, ROOT), ROOT)


def test_view_numbers_lines_and_ranges(editor):
    out = editor("view", "m.py")
    assert "     2\t    y = x + 1" in out
    assert editor("view", f"{ROOT}/m.py", view_range=[2, 2]).endswith("     2\t    y = x + 1\n")
    assert editor("view", "m.py", view_range=[9, 10]).startswith("Error: Invalid `view_range`")


def test_view_directory_lists_files(editor):
    out = editor("view", ROOT)
    assert f"{ROOT}/pkg/a.py" in out and f"{ROOT}/m.py" in out


def test_str_replace_unique_and_undo(editor):
    out = editor("str_replace", "m.py", old_str="x + 1", new_str="x - 1")
    assert "has been edited" in out and "     2\t    y = x - 1" in out
    assert editor.files.read(f"{ROOT}/m.py") == TEXT.replace("x + 1", "x - 1")
    assert "undone successfully" in editor("undo_edit", "m.py")
    assert editor.files.read(f"{ROOT}/m.py") == TEXT
    assert editor("undo_edit", "m.py").startswith("Error: No edit history")


def test_str_replace_errors(editor):
    assert "did not appear verbatim" in editor("str_replace", "m.py", old_str="nope", new_str="")
    assert "Multiple occurrences" in editor("str_replace", "m.py", old_str="y", new_str="z")
    assert "does not exist" in editor("str_replace", "missing.py", old_str="a", new_str="b")


def test_whitespace_in_old_str_is_exact(editor):
    assert "did not appear verbatim" in editor("str_replace", "m.py", old_str="y = x + 1 ", new_str="")
    assert "has been edited" in editor("str_replace", "m.py", old_str="    return y\n", new_str="    return -y\n")


def test_insert_and_create(editor):
    assert "has been edited" in editor("insert", "m.py", insert_line=1, new_str="    # comment")
    assert editor.files.read(f"{ROOT}/m.py").split("\n")[1] == "    # comment"
    assert "Invalid `insert_line`" in editor("insert", "m.py", insert_line=99, new_str="x")
    assert "File created" in editor("create", "new.py", file_text="z = 3\n")
    assert "already exists" in editor("create", "new.py", file_text="z = 4\n")


def test_paths_are_confined_to_the_repo(editor):
    assert "outside the repository" in editor("view", "../../etc/passwd")
    assert "outside the repository" in editor("view", "/tmp/x")
    assert "Unknown command" in editor("delete", "m.py")


@pytest.mark.docker
def test_editor_on_a_docker_sandbox(sandbox):
    from agentrl.envs.swe.grading.grader import setup_repo

    setup_repo(sandbox, {"m.py": TEXT}, git=False)
    sandbox.exec("ln -s /tmp escape && ln -s m.py alias.py", cwd=ROOT)
    ed = Editor(SandboxFiles(sandbox, ROOT), ROOT)
    assert "has been edited" in ed("str_replace", "m.py", old_str="x + 1", new_str="x * 2")
    assert sandbox.read_file(f"{ROOT}/m.py").decode() == TEXT.replace("x + 1", "x * 2")
    assert "resolves outside the repository" in ed("create", "escape/evil.py", file_text="x")
    assert "x * 2" in ed("view", "alias.py")
    assert "does not exist" in ed("view", "nope.py")
    assert f"{ROOT}/m.py" in ed("view", ROOT)
