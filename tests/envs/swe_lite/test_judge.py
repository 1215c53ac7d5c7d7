"""The judge (judge.py) against a real worker in a real Docker sandbox: what crosses the protocol, what the
judge decides itself, and every malformed answer it must refuse. The repos here are written for each test."""

from __future__ import annotations

import json

import pytest
from agentrl.envs.swe.grading.grader import REPO, setup_repo
from agentrl.envs.swe.grading.judge import judge_tests, names_of_tests

pytestmark = pytest.mark.slow

MODULE = '''
class Error(ValueError):
    """A ValueError of the repo's own."""


class Counter:
    def __init__(self, start=0):
        self.n = start

    def add(self, k=1):
        if k < 0:
            raise Error("negative step", k)
        self.n += k
        return self.n

    def __len__(self):
        return self.n

    def __iter__(self):
        return iter(range(self.n))

    def __getitem__(self, i):
        return i * 10

    def __contains__(self, x):
        return 0 <= x < self.n

    def __lt__(self, other):
        return self.n < other.n

    def __add__(self, other):
        return Counter(self.n + other.n)

    def __str__(self):
        return f"Counter({self.n})"


def fill(d, key):
    d[key] = len(d)


def pairs(n):
    return {i: (i, str(i), float(i), b"x" * i, None, True, frozenset({i})) for i in range(n)}


def boom():
    raise KeyError("k")
'''

TESTS = '''import pytest

from mod import Counter, Error, boom, fill, pairs


def test_values():
    assert pairs(2) == {0: (0, "0", 0.0, b"", None, True, frozenset({0})), 1: (1, "1", 1.0, b"x", None, True, frozenset({1}))}


def test_methods_and_state():
    c = Counter(2)
    assert c.add(3) == 5 and c.n == 5
    c.n = 7
    assert c.add() == 8


def test_dunders():
    c = Counter(3)
    assert (len(c), list(c), c[2], 2 in c, 5 in c, str(c), repr(c)[:8]) == (3, [0, 1, 2], 20, True, False, "Counter(3)", "<mod.Cou")
    assert str(Counter(1) + Counter(2)) == "Counter(3)"
    assert (Counter(1) < Counter(2)) is True and (Counter(2) < Counter(1)) is False


def test_exceptions():
    with pytest.raises(Error, match="negative"):
        Counter().add(-1)
    with pytest.raises(ValueError):
        Counter().add(-2)
    with pytest.raises(KeyError):
        boom()
    with pytest.raises(Error) as info:
        Counter().add(-3)
    assert info.value.args == ("negative step", -3)


def test_mutable_argument_written_back():
    d = {"a": 0}
    fill(d, "b")
    assert d == {"a": 0, "b": 1}


def test_fails_on_wrong_value():
    assert Counter(1).add(1) == 3


def test_object_equality_refused():
    assert Counter(1) == Counter(1)


def test_truth_refused():
    assert Counter(1)


def test_ordering_against_value_refused():
    assert Counter(1) < 5


def test_did_not_raise():
    with pytest.raises(Error):
        Counter().add(1)
'''


def judge(sandbox, module: str, tests: str, ids: list[str] | None = None, **kw):
    setup_repo(sandbox, {"mod.py": module}, git=False)
    ids = ids or [f"tests/test_mod.py::{n}" for n in names_of_tests(tests)]
    return judge_tests(sandbox, {"tests/test_mod.py": tests}, ids, cwd=REPO, timeout=kw.pop("timeout", 60), **kw)


def statuses(run) -> dict[str, str]:
    return {k.split("::")[1]: v.status for k, v in run.cases.items()}


def test_honest_module_passes_and_the_judge_decides(sandbox):
    run = judge(sandbox, MODULE, TESTS)
    assert run.valid and not run.refused, run.reason
    st = statuses(run)
    passing = ["test_values", "test_methods_and_state", "test_dunders", "test_exceptions",
               "test_mutable_argument_written_back"]
    assert all(st[name] == "passed" for name in passing), {k: run.cases[k].text for k in run.cases}
    assert all(st[name] == "failed" for name in st if name not in passing), st
    wrong = run.cases["tests/test_mod.py::test_fails_on_wrong_value"]
    assert "test_mod.py:" in wrong.text and "assert Counter(1).add(1) == 3" in wrong.text
    assert "ExactValueRequired" in run.cases["tests/test_mod.py::test_object_equality_refused"].message
    assert "DID NOT RAISE" in run.cases["tests/test_mod.py::test_did_not_raise"].message
    assert run.workers == 1


# Answers a hijacked worker sends for every request (the repo's code replaces the worker's encoder).
MALFORMED = {
    "json_number": 5,
    "int_not_digits": {"int": "1e5"},
    "int_too_long": {"int": "9" * 5000},
    "float_too_long": {"float": "1" * 50},
    "bytes_not_hex": {"bytes": "zz"},
    "list_not_list": {"list": 5},
    "unhashable_set_member": {"set": [{"list": []}]},
    "dict_repeated_key": {"dict": [["a", 1], ["a", None]]},
    "unknown_tag": {"thing": []},
    "extra_key": {"int": "1", "x": 1},
    "ref_zero": {"wref": 0, "kind": "object", "name": "x"},
    "ref_bad_kind": {"wref": 3, "kind": "frame", "name": "x"},
    "exc_base_not_exception": {"wref": 3, "kind": "class", "name": "E", "exc": "KeyboardInterrupt"},
    "judge_handle_never_issued": {"jref": 1},
    "stdname_outside_the_table": {"stdname": "os:system"},
    "std_value_of_objects": {"std": "datetime.date", "args": {"tuple": [{"list": []}, 1, 1]}},
    "too_deep": json.loads('{"list": [' * 40 + ']}' * 40),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_answers_are_refused(sandbox, name):
    hijack = f"import __main__, json\n__main__.enc = lambda x, *a, **k: json.loads({json.dumps(json.dumps(MALFORMED[name]))})\n"
    run = judge(sandbox, hijack + "def f():\n    return 1\n", "from mod import f\n\n\ndef test_f():\n    assert f() == 1\n")
    assert not run.valid and run.refused and run.cases.get("tests/test_mod.py::test_f") is None, (name, run)


def test_a_handle_that_changes_kind_is_refused(sandbox):
    hijack = ("import __main__\n_seen = []\n_real = __main__.ref\n"
              "def ref(o):\n    _seen.append(1)\n    out = _real(o)\n"
              "    return {'wref': 2, 'kind': 'object', 'name': 'A'} if len(_seen) > 2 else out\n__main__.ref = ref\n")
    run = judge(sandbox, hijack + "class A:\n    pass\n", "from mod import A\n\n\ndef test_a():\n    A()\n    A()\n")
    assert not run.valid and "changed its kind" in run.refused, run


def test_a_crashed_worker_fails_its_test_and_the_next_gets_a_new_one(sandbox):
    module = "import os\n\n\ndef die():\n    os._exit(3)\n\n\ndef one():\n    return 1\n"
    tests = "from mod import die, one\n\n\ndef test_die():\n    die()\n\n\ndef test_one():\n    assert one() == 1\n"
    run = judge(sandbox, module, tests)
    assert run.valid and statuses(run) == {"test_die": "failed", "test_one": "passed"} and run.workers == 2, run
    assert "WorkerLost" in run.cases["tests/test_mod.py::test_die"].message


def test_a_call_past_its_deadline_fails_and_the_run_goes_on(sandbox):
    module = "import time\n\n\ndef slow():\n    time.sleep(600)\n\n\ndef one():\n    return 1\n"
    tests = "from mod import one, slow\n\n\ndef test_slow():\n    slow()\n\n\ndef test_one():\n    assert one() == 1\n"
    run = judge(sandbox, module, tests, call_timeout=2.0)
    assert run.valid and statuses(run) == {"test_slow": "failed", "test_one": "passed"}, run


def test_the_run_deadline_makes_it_invalid(sandbox):
    module = "import time\n\n\ndef slow():\n    time.sleep(600)\n"
    run = judge(sandbox, module, "from mod import slow\n\n\ndef test_slow():\n    slow()\n", timeout=3)
    assert not run.valid and "timed out" in run.reason, run


def test_an_unimportable_repo_is_a_collection_error(sandbox):
    run = judge(sandbox, "def broken(:\n", "from mod import x\n\n\ndef test_x():\n    assert x == 1\n")
    assert run.valid and run.collection_errors == 1 and statuses(run) == {"test_x": "error"}, run
    assert "SyntaxError" in run.cases["tests/test_mod.py::test_x"].message


def test_the_tests_never_enter_the_sandbox(sandbox):
    """grading.judge_run uploads the repo without the test files it runs: the worker cannot read them."""
    from agentrl.envs.swe.grading.grader import judge_run

    module = "import os\n\n\ndef look():\n    return sorted(os.listdir('.')), os.path.exists('tests')\n"
    tests = "from mod import look\n\n\ndef test_look():\n    assert look() == (['mod.py'], False)\n"
    run, refused = judge_run(sandbox, {"mod.py": module, "tests/test_mod.py": tests}, ["tests/test_mod.py"],
                             ["tests/test_mod.py::test_look"], timeout=60)
    assert run.valid and not refused and run.cases["tests/test_mod.py::test_look"].status == "passed", run


def test_a_sandbox_that_dies_under_the_worker_is_our_fault_not_a_failed_test(docker_backend):
    """The container removed while a test waits on the worker: judge_tests raises SandboxError (grading's
    callers then retry or mask it), never a test failure that would train as reward 0."""
    import threading

    from agentrl.sandboxes import open_sandbox

    from agentrl.errors import SandboxError

    module = "import time\n\n\ndef slow():\n    time.sleep(600)\n"
    with open_sandbox(docker_backend) as sb:
        threading.Timer(2.0, sb.kill).start()
        with pytest.raises(SandboxError):
            judge(sb, module, "from mod import slow\n\n\ndef test_slow():\n    slow()\n", call_timeout=60)


def test_an_exception_whose_own_str_raises_fails_its_test_with_the_workers_text(sandbox):
    """Guards a grader crash the worker chose: `str()` of this UnicodeEncodeError raises SystemError, and the judge
    called it on the host to build the failure message, so grading raised (the episode ended as env_error and
    training masked it). The judge now keeps the text the worker made and never formats the exception itself."""
    module = 'def f():\n    raise UnicodeEncodeError("ascii", "x", -5, -4, "r")\n'
    tests = ("import pytest\n\nfrom mod import f\n\n\ndef test_f():\n    assert f() == 1\n\n\n"
             "def test_raises():\n    with pytest.raises(UnicodeEncodeError, match='unprintable'):\n        f()\n")
    run = judge(sandbox, module, tests)
    assert run.valid and statuses(run) == {"test_f": "failed", "test_raises": "passed"}, run
    assert run.cases["tests/test_mod.py::test_f"].message == "UnicodeEncodeError: <unprintable UnicodeEncodeError>"


COLLIDING = 2 ** 61 - 1  # an int's hash is its value modulo this prime: every multiple hashes to 0


class Watchdog:
    """A thread that ticks every 10 ms and keeps the longest gap between two ticks: a gap of a second means some
    thread held the interpreter lock that long (every thread of a trainer stalls meanwhile)."""

    def __init__(self) -> None:
        import threading

        self.longest, self._stop = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._tick, daemon=True)

    def _tick(self) -> None:
        import time

        last = time.perf_counter()
        while not self._stop.wait(0.01):
            now = time.perf_counter()
            self.longest, last = max(self.longest, now - last), now

    def __enter__(self) -> Watchdog:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


@pytest.mark.serial  # bounds the host interpreter-lock gap: other workers would add their own
def test_a_hash_flood_is_refused_in_time_without_holding_the_interpreter_lock(sandbox):
    """Guards a stall the worker chose: a set of 200,000 ints that all hash to 0 (the node cap allows it) made the
    judge build the set on the host, O(n²) comparisons holding the GIL (25,000 of them: 6.9 s, past a 5 s grade
    deadline). The judge now refuses more than a few members per hash before building anything."""
    flood = f'{{"set": [{{"int": str(k * {COLLIDING})}} for k in range(199999)]}}'  # 200,000 values with the set
    module = f"import __main__\n__main__.enc = lambda x, *a, **k: {flood}\n\n\ndef f():\n    return 1\n"
    with Watchdog() as dog:
        run = judge(sandbox, module, "from mod import f\n\n\ndef test_f():\n    assert f() == 1\n", timeout=30)
    assert not run.valid and "hash flood" in run.refused, run
    assert run.duration_s < 30 and dog.longest < 1.0, (run.duration_s, dog.longest)


@pytest.mark.parametrize("kind", ["exception classes", "handles"])
def test_handles_and_exception_classes_per_worker_are_capped(sandbox, kind):
    """Guards unbounded judge memory the worker chose: 100,000 new exception-class handles in one answer made the
    judge create and keep a class for each (+628 MB in one grade). Past MAX_EXC_CLASSES classes or MAX_HANDLES
    handles the run is refused, and what the judge kept stays under a fixed budget."""
    import tracemalloc

    from agentrl.envs.swe.grading.judge import MAX_EXC_CLASSES, MAX_HANDLES

    handle = ("{'wref': k + 2, 'kind': 'class', 'name': 'E%d' % k, 'exc': 'ValueError'}" if kind == "exception classes"
              else "{'wref': k + 2, 'kind': 'object', 'name': 'O'}")
    module = (f"import __main__\n__main__.enc = lambda x, *a, **k: {{'list': [{handle} for k in range(100000)]}}\n\n\n"
              "def f():\n    return 1\n")
    tracemalloc.start()
    try:
        run = judge(sandbox, module, "from mod import f\n\n\ndef test_f():\n    assert f() == 1\n", timeout=60)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert not run.valid and kind in run.refused, run
    assert f"{MAX_EXC_CLASSES if kind == 'exception classes' else MAX_HANDLES}" in run.refused
    assert peak < 160 << 20, f"{peak >> 20} MB traced while judging"  # the 7 MB answer line parsed, plus the capped handles


def test_an_eval_over_gold_and_a_grader_crashing_non_fix_reports_half(tmp_path, docker_backend):
    """Guards the escape from a 0 through the judge's crash, end to end: `agentrl eval --oracle gold` over a task and
    a copy whose "gold" patch makes the faulty function raise UnicodeEncodeError("ascii", "x", -5, -4, "r") printed
    resolved rate 100.0% with 1 infra error (the episode ended as env_error, masked). It must print 50.0%, 0 infra."""
    import dataclasses
    import os
    import subprocess
    import sys

    from agentrl.envs.swe.audit import with_body
    from agentrl.envs.swe.patches import make_diff
    from agentrl.envs.swe.tasks import load_tasks, write_tasks

    task = next(t for t in load_tasks(split="test") if t.mutation.get("function"))
    path, function = task.mutation["file"], task.mutation["function"]
    crashing = with_body(task.files[path], function, 'raise UnicodeEncodeError("ascii", "x", -5, -4, "r")')
    non_fix = dataclasses.replace(task, instance_id=task.instance_id + "-crash",
                                  patch=make_diff(task.files, {**task.files, path: crashing}))
    write_tasks([task, non_fix], tmp_path / "tasks.jsonl")
    out = tmp_path / "r.jsonl"
    r = subprocess.run([sys.executable, "-m", "agentrl", "eval", "--quiet", "--env", "swe_lite", "--oracle", "gold",
                        "--tasks", str(tmp_path / "tasks.jsonl"), "--backend", docker_backend, "--out", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=tmp_path, env=dict(os.environ))
    assert r.returncode == 0, r.stderr
    records = {rec["instance_id"]: rec for rec in map(json.loads, out.read_text().splitlines())}
    assert records[task.instance_id]["resolved"] and not records[non_fix.instance_id]["resolved"], records
    assert not records[non_fix.instance_id]["infra_error"] and records[non_fix.instance_id]["termination"] == "done"
    import re

    summary = r.stdout + r.stderr
    assert re.search(r"resolved rate\s+50\.0%", summary) and re.search(r"infra errors\s+0\n", summary), summary
