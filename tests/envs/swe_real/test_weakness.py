"""Tasks too weak to grade a policy never ship: every shipped swe_real task has at least MIN_F2P fail-to-pass
tests, and the generator's `weakness` names a task with fewer before grading anything."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from agentrl.envs.swe.real.generate import MIN_F2P, Generator


def test_every_shipped_task_has_enough_fail_to_pass_tests(real_tasks):
    """One failing test can be special-cased from the reproduction the issue text quotes; the shipped file must
    hold none such (the generator drops them, and the test-strength audit checks the rest)."""
    few = [t.instance_id for t in real_tasks if len(t.FAIL_TO_PASS) < MIN_F2P]
    assert few == []


def test_weakness_names_a_single_fail_to_pass_test_without_grading(real_tasks):
    task = dataclasses.replace(real_tasks[0], FAIL_TO_PASS=real_tasks[0].FAIL_TO_PASS[:1])
    gen = Generator(sandbox=None, log=lambda *_: None)  # no sandbox: the count is decided before any grade
    assert gen.weakness(task) == f"1 fail-to-pass test (at least {MIN_F2P} needed)"


def test_named_in_reads_the_names_the_issue_blames():
    from agentrl.envs.swe.real.statements import named_in

    text = ("Bug in `isodate`: `parse_duration` gives a wrong result.\n\n> assert x\n\n"
            "Also, `Duration` raises `TypeError` where it should not.\n\nAlso, `strftime` no longer raises the error "
            "it should.\n\nAlso, `parse_duration` gives a wrong result.")
    assert named_in(text) == ["parse_duration", "Duration", "strftime"]
    assert named_in("Since a recent change in `toolz`, calling it fails.") == []


@pytest.mark.slow
def test_the_audit_plants_the_always_equal_value_in_the_function_the_issue_blames(real_tasks):
    """A policy that reads "`f` gives a wrong result" would make f return a value equal to anything, whichever
    function holds the bug: the audit tries exactly that, in each definition of f, besides the faulty function."""
    from agentrl.envs.swe.audit import ALWAYS_EQUAL_BODY, non_fixes
    from agentrl.envs.swe.real.generate import named_targets
    from agentrl.envs.swe.real.statements import named_in

    elsewhere = [t for t in real_tasks if any(q != t.mutation["function"] for _, q in named_targets(t))]
    assert elsewhere, "no shipped task blames a function other than the faulty one"
    task = elsewhere[0]
    targets = named_targets(task)
    assert {q.rsplit(".", 1)[-1] for _, q in targets} <= set(named_in(task.problem_statement))
    variants = non_fixes(task, targets)
    for path, qualname in targets:
        if (path, qualname) == (task.mutation["file"], task.mutation["function"]):
            continue
        changed = variants[f"always_equal in {path}::{qualname}"]
        assert list(changed) == [path] and ALWAYS_EQUAL_BODY in changed[path]
        assert changed[path] != task.files[path]
    same = next(t for t in real_tasks if named_targets(t) == [(t.mutation["file"], t.mutation["function"])])
    assert not [k for k in non_fixes(same, named_targets(same)) if k.startswith("always_equal in")]


# ---- step 8: non-fixes that make two package objects compare equal (issue 53 item 5) ----------------------------

PKG = '''
class Thing:
    def __init__(self, x):
        self.x = x

    def __eq__(self, other):
        return isinstance(other, Thing) and self.x == other.x

    def __hash__(self):
        return hash(self.x)

    def get(self, a):
        return Thing(self.x + a)


class Sub(Thing):
    def get(self, a, *rest, k=1, **kw):
        """A method with every kind of parameter and a zero-argument super()."""
        if rest or kw:
            return (a, rest, k, kw)
        return super().get(a * k)


class Oops(ValueError):
    pass


def make(x: int) -> "Thing | int":
    if x > 0:
        return Thing(x)
    return x
'''


def _module(tmp_path, monkeypatch, name: str, source: str):
    import importlib

    (tmp_path / name).mkdir()
    (tmp_path / name / "__init__.py").write_text("")
    (tmp_path / name / "mod.py").write_text(source)
    monkeypatch.syspath_prepend(str(tmp_path))
    return importlib.import_module(f"{name}.mod")


def test_any_for_package_objects_returns_any_only_where_the_function_returns_a_package_object(tmp_path, monkeypatch):
    """The sweep's third non-fix: the buggy body still runs, and only a result of the package's own class becomes
    mock.ANY (which then equals any package object across the split, where the package's __eq__ decides)."""
    from unittest import mock

    from agentrl.envs.swe.real.nonfixes import any_for_package_objects

    source = any_for_package_objects(any_for_package_objects(PKG, "make"), "Sub.get")
    mod = _module(tmp_path, monkeypatch, "nonfix_pkg_a", source)
    assert mod.make(2) is mock.ANY and mod.make(-3) == -3
    assert mod.Sub(1).get(2) is mock.ANY  # super() still works inside the moved body
    assert mod.Sub(1).get(2, 3, k=4, z=5) == (2, (3,), 4, {"z": 5})
    assert any_for_package_objects(PKG, "missing") is None


def test_equal_classes_make_every_package_class_but_exceptions_equal_to_anything(tmp_path, monkeypatch):
    from agentrl.envs.swe.real.nonfixes import with_equal_classes

    mod = _module(tmp_path, monkeypatch, "nonfix_pkg_b", with_equal_classes(PKG))
    assert mod.Thing(1) == mod.Thing(2) and mod.Sub(1) == "anything" and not (mod.Thing(1) != 3)
    assert hash(mod.Thing(5)) == hash(5)  # each class keeps its own __hash__
    assert mod.Oops("a") != mod.Oops("b")
    assert with_equal_classes("def f():\n    return 1\n") is None


def test_package_nonfixes_cover_the_faulty_and_the_blamed_functions_and_the_classes(real_tasks):
    from agentrl.envs.swe.real.generate import named_targets, source_files
    from agentrl.envs.swe.real.nonfixes import package_nonfixes
    from agentrl.envs.swe.real.packages import load_packages

    task = next(t for t in real_tasks if t.mutation["operator"] == "combined"
                and any(q not in {p["function"] for p in t.mutation["parts"]} for _, q in named_targets(t)))
    pkg = next(p for p in load_packages() if p.repo == task.repo)
    variants = package_nonfixes(task, source_files(pkg, task.files), named_targets(task))
    assert set(variants) == {"mock_any", "mock_any_for_package_objects",
                             "mock_any_for_package_objects in blamed functions", "always_equal_classes"}
    assert set(variants["mock_any"]) == {p["file"] for p in task.mutation["parts"]}  # both bugs' functions
    for changes in variants.values():
        for path, text in changes.items():
            compile(text, path, "exec")


def test_a_non_fix_passes_on_its_tests_alone_not_on_the_scan():
    """The audit spells mock.ANY with __import__, which the scan flags, so in-process step 5 scored it 0 on every
    task; an always-equal object built with type() is scan-clean and acts the same across the split. So step 8
    asks whether the tests tell the non-fix from a fix, whatever the scan says."""
    from agentrl.envs.swe.grading.grader import Grade
    from agentrl.envs.swe.real.nonfixes import passes

    flagged = Grade(resolved=False, f2p=1.0, p2p=1.0, resolution="NO", patch="", valid=True, suspicious=True)
    assert flagged.reward() == 0 and passes(flagged)
    assert not passes(Grade(resolved=False, f2p=1.0, p2p=0.99, resolution="NO", patch="", valid=True))
    assert not passes(Grade(resolved=False, f2p=1.0, p2p=1.0, resolution="NO", patch="", valid=False))


def test_the_filter_counts_each_task_it_drops_and_each_non_fix_that_passed(real_tasks):
    gen = Generator(sandbox=None, log=lambda *_: None)
    answers = iter([["mock_any", "always_equal_classes"], [], ["always_equal_classes"]])
    gen.nonfix_weakness = lambda task, names=None: next(answers)
    stats: dict = {}
    assert [gen.nonfix_dropped(t, stats) for t in real_tasks[:3]] == [True, False, True]
    assert stats == {"dropped_nonfix": 2, "nonfix mock_any": 1, "nonfix always_equal_classes": 2}


WEAK = Path(__file__).parent / "data" / "weak_tasks.jsonl"
"""Tasks that shipped until step 8 dropped them (their lines from the task file, byte for byte)."""


def _sandboxes(backend: str):
    from agentrl.sandboxes import open_sandbox

    return open_sandbox(backend, cpus=1.0, memory_mb=1024), open_sandbox(backend, cpus=1.0, memory_mb=1024)


@pytest.mark.docker
@pytest.mark.slow
def test_a_task_an_always_equal_class_resolves_under_the_suite_judge_is_reported_weak(docker_backend, cache_ready):
    """gweis__isodate-0000 shipped through step 5: its fail-to-pass tests compare two Duration objects, which the
    suite judge leaves to the package's own __eq__, so an always-true Duration.__eq__ passed every test (the issue
    53 sweep). One suite-judge grade, as the env grades a submission."""
    from agentrl.envs.swe.real.tasks import load_real

    task = next(t for t in load_real(WEAK) if t.instance_id == "gweis__isodate-0000")
    sb, jsb = _sandboxes(docker_backend)
    with sb, jsb:
        gen = Generator(sb, log=lambda *_: None, judge_sandbox=jsb)
        assert gen.nonfix_weakness(task, ["always_equal_classes"]) == ["always_equal_classes"]


@pytest.mark.docker
@pytest.mark.slow
def test_no_generic_non_fix_passes_a_sample_of_the_shipped_file(real_tasks, docker_backend):
    """Step 8 on the first shipped isodate task (the package whose tests compare its own objects most): kept. The
    whole file was filtered by `python -m agentrl.envs.swe.real.generate --nonfix-filter FILE --out OUT`, too slow
    for the suite (docs/swe_real.md, Measured); this runs the screen and any suite-judge grade it asks for."""
    from agentrl.envs.swe.real.packages import load_packages, snapshot_files

    task = next(t for t in real_tasks if t.repo == "gweis/isodate")
    pkg = next(p for p in load_packages() if p.repo == task.repo)
    sb, jsb = _sandboxes(docker_backend)
    with sb, jsb:
        gen = Generator(sb, log=lambda *_: None, judge_sandbox=jsb)
        kept, stats = gen.nonfix_filter([task], snapshot_files(pkg))
    assert [t.instance_id for t in kept] == [task.instance_id] and stats == {"dropped_nonfix": 0}


def test_only_a_failure_at_a_plain_comparison_rules_a_non_fix_out_in_the_screen():
    """isodate-0028 got past a screen that wanted every fail-to-pass test passing in a plain run: an always-equal
    Duration fails `-Duration(years=1) != timedelta(days=-365)` there, and passes it across the split."""
    from agentrl.envs.swe.real.nonfixes import rules_out

    assert not rules_out(">       assert -Duration(years=1) != timedelta(days=-365)\nE       assert ...")
    assert not rules_out(">       assert result is not None\nE       assert ...")
    assert rules_out("    def test():\n>       assert parse('P1Y') == Duration(years=2)\nE       assert ...")
    assert not rules_out("KeyboardInterrupt")  # no failing line: nothing ruled out
