"""The suite judge (grading/suite.py, suite_judge.py, worker.py) on a package written here, in real Docker
sandboxes: what a real suite needs works across the split (callbacks, a test's subclass with super(), pytest.raises
and warns, capsys, enum parameters, shared lists), a bug fails its tests, and every way the repository's code
could write its own verdict fails or makes the run invalid."""

from __future__ import annotations

import json

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.docker]

PACKAGE = '''
import enum
import warnings


class Color(enum.Enum):
    RED = 1
    BLUE = 2


class MiniError(ValueError):
    def __init__(self, message, code=7):
        super().__init__(message)
        self.code = code


def shout(word):
    return word.upper() + "!"


def total(numbers):
    return sum(numbers)


def grow(items, value):
    items.append(value)
    return len(items)


REGISTRY = []


def register(name):
    REGISTRY.append(name)


def apply(callback, value):
    return callback(value) * 2


def check(n):
    if n < 0:
        raise MiniError("negative", code=n)
    return n


def old():
    warnings.warn("old() is deprecated", DeprecationWarning)
    return 1


def say(text):
    print(text)


class Box:
    def __init__(self, value):
        self.value = value

    def describe(self):
        return f"Box({self.value})"

    def __eq__(self, other):
        return isinstance(other, Box) and other.value == self.value

    __hash__ = None


def unbox(box):
    return box.describe()


import datetime


class Utc(datetime.tzinfo):
    def utcoffset(self, dt):
        return datetime.timedelta(0)

    def tzname(self, dt):
        return "UTC"

    def dst(self, dt):
        return datetime.timedelta(0)


UTC = Utc()


def noon():
    return datetime.time(12, tzinfo=UTC)
'''

TESTS = '''import pytest

import mini
from mini import Box, Color, MiniError


def test_values():
    assert mini.shout("hi") == "HI!" and mini.total([1, 2, 3]) == 6


def test_shared_state():
    mini.register("a")
    assert mini.REGISTRY == ["a"] and len(mini.REGISTRY) == 1


def test_a_list_lent_to_a_call_takes_its_new_state():
    items = [1]
    assert mini.grow(items, 2) == 2
    assert items == [1, 2]


def test_callback():
    assert mini.apply(lambda v: v + 1, 3) == 8


def test_raises():
    with pytest.raises(MiniError, match="negative") as info:
        mini.check(-3)
    assert info.value.code == -3
    with pytest.raises(ValueError):
        mini.check(-1)


def test_warns():
    with pytest.warns(DeprecationWarning, match="deprecated"):
        assert mini.old() == 1


def test_capsys(capsys):
    mini.say("hello")
    assert capsys.readouterr().out == "hello\\n"


@pytest.mark.parametrize("color", [Color.RED, Color.BLUE])
def test_enum_ids(color):
    assert color.value in (1, 2)


class Tagged(Box):
    def describe(self):
        return "tagged " + super().describe()


def test_subclass():
    assert mini.unbox(Tagged(3)) == "tagged Box(3)"
    assert isinstance(Tagged(1), Tagged)


def test_package_equality():
    assert Box(1) == Box(1) and Box(1) != Box(2)


def test_the_packages_tzinfo():
    from datetime import time

    assert mini.noon() == time(12, tzinfo=mini.UTC) and mini.noon().tzname() == "UTC"
'''

IDS = [f"tests/test_mini.py::{name}" for name in (
    "test_values", "test_shared_state", "test_a_list_lent_to_a_call_takes_its_new_state", "test_callback",
    "test_raises", "test_warns", "test_capsys", "test_enum_ids[Color.RED]", "test_enum_ids[Color.BLUE]",
    "test_subclass", "test_package_equality", "test_the_packages_tzinfo")]


@pytest.fixture(scope="module")
def sandboxes(docker_backend):
    from agentrl.sandboxes import open_sandbox

    with open_sandbox(docker_backend) as worker, open_sandbox(docker_backend) as judge:
        yield worker, judge


def run(sandboxes, package: str, ids=None, timeout: float = 120):
    from agentrl.envs.swe.grading.suite import suite_run

    worker, judge = sandboxes
    return suite_run(worker, judge, {"mini/__init__.py": package}, {"tests/test_mini.py": TESTS,
                                                                   "pytest.ini": "[pytest]\npythonpath = .\n"},
                     tops=["mini"], pythonpath=["."], ids=ids or IDS, pytest_args=["-q"], timeout=timeout)


def statuses(r) -> dict[str, str]:
    return {k.split("::")[1]: v["status"] for k, v in r.cases.items()}


def test_an_honest_package_passes_every_test_across_the_split(sandboxes):
    r = run(sandboxes, PACKAGE)
    assert r.valid, r.reason
    assert set(statuses(r).values()) == {"passed"}, {k: v["text"][-600:] for k, v in r.cases.items()
                                                      if v["status"] != "passed"}


def test_a_bug_fails_its_tests_and_nothing_else(sandboxes):
    r = run(sandboxes, PACKAGE.replace('return word.upper() + "!"', 'return word.upper() + "?"'))
    st = statuses(r)
    assert r.valid and st["test_values"] == "failed" and sum(v != "passed" for v in st.values()) == 1, st


def _attack(sandboxes, code: str, ids=None):
    """The package with `code` appended (at import) and shout() replaced as the attack says."""
    return run(sandboxes, PACKAGE + "\n" + code, ids=ids or IDS[:1])


# Code that, run in the judge, writes (on its protocol stream, fd 4: fds 3 and 4 are its dups of stdin and stdout) a
# verdict of "passed" for the first test and ends the judge cleanly.
FORGED_LINE = b"R " + json.dumps({"exit_code": 0, "cases": {IDS[0]: {"status": "passed", "message": "", "text": ""}},
                                  "collection_errors": 0, "refused": "", "workers": 1, "calls": 1}).encode() + b"\n"
FORGE = f"import os\nos.write(PROTO_OUT, {FORGED_LINE!r})\nos._exit(0)\n"


def _callback(obj, args) -> str:
    """Package code that, at import and again in shout(), sends the judge a call-back request on `obj`."""
    req = {"op": "call", "obj": obj, "args": args}
    return (f"import __main__\n_REQ = {req!r}\ntry:\n    __main__.ask(_REQ)\nexcept BaseException:\n    pass\n"
            "def shout(word):\n    __main__.ask(_REQ)\n    return 'wrong'\n")


EQUAL_STR = ('class S(str):\n    def __eq__(self, other):\n        return True\n    __hash__ = str.__hash__\n'
             'def shout(word):\n    return S("wrong")\n')
# name -> code appended to the package; each makes shout() wrong and tries to have test_values pass anyway
ATTACKS = {
    "always_equal_subclass_of_the_return_type": EQUAL_STR,
    "type_built_equal_to_anything": ("def shout(word):\n    return type('A', (), {'__eq__': lambda s, o: True,"
                                     " '__hash__': lambda s: 0})()\n"),
    "mock_any": "from unittest import mock\ndef shout(word):\n    return mock.ANY\n",
    "every_public_function_wrapped": (EQUAL_STR + "import sys\n_m = sys.modules[__name__]\nfor _n in list(vars(_m)):\n"
                                      "    _f = getattr(_m, _n)\n    if callable(_f) and not _n.startswith('_') and "
                                      "not isinstance(_f, type):\n        setattr(_m, _n, (lambda f: lambda *a, **k: "
                                      "S(str(f(*a, **k))))(_f))\n"),
    "encoder_hijacked": ("import __main__\n__main__.enc = lambda x, depth=0, by_value=False: 'HI!'\n"
                         "def shout(word):\n    return 'wrong'\n"),
    "forged_report_on_the_protocol": (
        f"import __main__, os, json\n_r = {{'cases': {{{IDS[0]!r}: {{'status': 'passed'}}}}, 'exit_code': 0}}\n"
        "for _line in (b'R ' + json.dumps(_r).encode(), json.dumps({'ok': 'HI!'}).encode(),"
        " b'h lost forged'):\n    os.write(__main__.PROTO_OUT, _line + b'\\n')\n"
        "def shout(word):\n    return 'wrong'\n"),
    "frames_searched_for_the_verdict": (
        "import sys, gc\ndef shout(word):\n    for o in gc.get_objects():\n"
        "        if type(o).__name__ in ('Recorder', 'GraderPlugin', 'Link'):\n"
        "            o.reports = {}\n    f = sys._getframe()\n    while f:\n"
        "        f.f_locals.get('reports', {}).clear()\n        f = f.f_back\n    return 'wrong'\n"),
    "keyboard_interrupt_to_end_the_session": "def shout(word):\n    raise KeyboardInterrupt\n",
    "worker_exits": "import os\nos._exit(0)\n",
    "hash_flood_answer": ("import __main__\n_flood = {'set': [{'int': str(k * (2 ** 61 - 1))} for k in range(150000)]}\n"
                          "_real = __main__.enc\n__main__.enc = lambda x, depth=0, by_value=False: _flood\n"),
    "unprintable_exception": 'def shout(word):\n    raise UnicodeEncodeError("ascii", "x", -5, -4, "r")\n',
    **{f"callback_{k}": v for k, v in {  # issue #53: the worker names something for the judge to call or resolve
        "exec_by_stdname": _callback({"stdname": "builtins:exec"}, [FORGE]),
        "eval_by_stdname": _callback({"stdname": "builtins:eval"}, [f"exec({FORGE!r})"]),
        "os_write_by_stdname_walk": _callback({"stdname": "pathlib:os.write"},
                                              [{"int": "4"}, {"bytes": FORGED_LINE.hex()}]),
        "execv_by_stdname_walk": _callback({"stdname": "pathlib:os.execv"}, ["/bin/true", {"list": ["/bin/true"]}]),
        "argv_read_by_stdname_walk": _callback({"stdname": "typing:sys.argv"}, []),
        "open_by_stdname": _callback({"stdname": "builtins:open"}, ["tests/test_mini.py"]),
        "a_table_class_called_back": _callback({"stdname": "builtins:object"}, []),
        "a_handle_never_issued": _callback({"jref": 424242}, [FORGE]),
        "a_plain_value_called_back": _callback("exec", [FORGE]),
        "exec_as_an_answer": "import __main__\n__main__.enc = lambda x, depth=0, by_value=False: {'stdname': 'builtins:exec'}\n",
    }.items()},
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_the_repository_cannot_write_its_verdict(sandboxes, attack):
    r = _attack(sandboxes, ATTACKS[attack])
    assert not (r.valid and r.cases.get(IDS[0], {}).get("status") == "passed"), (attack, r)
    if r.valid:  # a verdict: the test failed, or its file did not load; no verdict: the run is invalid (reward 0)
        status = r.cases.get(IDS[0], {}).get("status", "missing")
        assert status in ("failed", "error") or status == "missing" and r.collection_errors, (attack, r.cases)
    assert json.dumps(r.cases)  # whatever happened, the report is plain data
    if attack.startswith("callback_"):  # naming what the judge never handed out refuses the run, whatever it named
        assert not r.valid and ("never handed out" in r.refused or "outside the table" in r.refused), (attack, r)


COUNTED = '''import mini

SUBCLASS


def test_checks():
    box = mini.Box(1)
    for _ in range(CHECKS):
        assert not isinstance(box, int)
    assert isinstance(box, mini.Box)
'''


def _one_test(sandboxes, tests: str, name: str, package: str = PACKAGE):
    """The report of one test file's test `name`, run by the suite judge; the test must pass."""
    from agentrl.envs.swe.grading.suite import suite_run

    r = suite_run(*sandboxes, {"mini/__init__.py": package},
                  {"tests/test_one.py": tests, "pytest.ini": "[pytest]\npythonpath = .\n"}, tops=["mini"],
                  pythonpath=["."], ids=[f"tests/test_one.py::{name}"], pytest_args=["-q"], timeout=120)
    assert r.valid and statuses(r) == {name: "passed"}, (r.reason, {k: v["text"][-800:] for k, v in r.cases.items()})
    return r


@pytest.mark.parametrize("subclass, per_check", [("", 0), ("class Tagged(mini.Box):\n    pass", 1)])
def test_a_local_isinstance_on_a_proxy_asks_the_worker_only_where_a_test_subclasses(sandboxes, subclass, per_check):
    """`isinstance(proxy, int)` asks the worker for the object's class once where a test's class derives from the
    package's (it may be that class's instance), and not at all where none does: a round trip per check that a chatty
    suite pays thousands of times (ordered-set's check_results_ does two per pair)."""
    calls = {}
    for checks in (5, 25):
        tests = COUNTED.replace("CHECKS", str(checks)).replace("SUBCLASS", subclass)
        calls[checks] = _one_test(sandboxes, tests, "test_checks").calls
    assert calls[25] - calls[5] == 20 * per_check, calls


BAG = '''

class Bag:
    def __init__(self, items=()):
        self.items = list(items)

    def __iter__(self):
        return iter(self.items)

    def add(self, item):
        self.items.append(item)


def rest(iterator):
    return list(iterator)


def counts():
    return {"a": 1, "b": 2}
'''

ITERATION = '''import pytest

import mini


def test_iteration():
    bag = mini.Bag(range(300))
    assert set(bag) == set(range(300)) and list(bag) == list(range(300)) and max(bag) == 299
    it = iter(mini.Bag([1, 2, 3, 4]))  # the package sees the iterator where the test left it
    assert next(it) == 1 and next(it) == 2 and mini.rest(it) == [3, 4] and next(it, None) is None
    grows, seen = mini.Bag([1, 2]), []  # an item the loop adds is seen
    for x in grows:
        seen.append(x)
        if x < 4:
            grows.add(x + 2)
    assert seen == [1, 2, 3, 4, 5]
    once = mini.Bag([1])  # an ended iterator stays ended
    it = iter(once)
    assert list(it) == [1]
    once.add(2)
    assert list(it) == [] and list(once) == [1, 2]
    d = mini.counts()  # a dict changed during its iteration
    keys = iter(d.keys())
    assert next(keys) == "a"
    d["c"] = 3
    with pytest.raises(RuntimeError, match="changed size"):
        next(keys)
    boxes = mini.Bag([mini.Box(1), mini.Box(2)])  # items that are the package's objects, and long texts
    assert [b.value for b in boxes] == [1, 2]
    assert [len(t) for t in mini.Bag(["x" * 5000, "y", ("t", 2)])] == [5000, 1, 2]
    assert list(zip(mini.Bag("ab"), mini.Bag(b"ab"))) == [("a", 97), ("b", 98)]


def test_count():
    assert set(mini.Bag(range(ITEMS))) == set(range(ITEMS))
'''


def test_the_packages_iterators_read_ahead_keep_python_s_semantics(sandboxes):
    """A builtin iterator of the package's is read ahead many items per request (Remote.__next__); what a test
    sees stays what Python gives: the package resumes it where the test stopped, items added during a loop and a
    dict changed during one behave as in one process, an ended iterator stays ended."""
    _one_test(sandboxes, ITERATION, "test_iteration", PACKAGE + BAG)


def test_iterating_a_packages_container_takes_a_request_per_look_not_per_item(sandboxes):
    """`set(ordered_set)` of 1,000 items: a handful of requests (looks of 64, 128, ... items), not one per item
    (ordered-set's suite made 1,228 such requests in a grade of 3,393)."""
    calls = {n: _one_test(sandboxes, ITERATION.replace("ITEMS", str(n)), "test_count", PACKAGE + BAG).calls
             for n in (10, 1000)}
    assert calls[1000] - calls[10] <= 6, calls


# What the worker's process does to the channel itself, with the two sandboxes joined by FIFOs (the default where
# both have link folders) and with the host relaying every line (elsewhere). name -> (code, what the run must say)
CHANNEL_ATTACKS = {
    "hangs_in_a_call": ("def shout(word):\n    import time\n    time.sleep(120)\n", "no answer within 3s"),
    "ends_in_a_call": ("def shout(word):\n    import os\n    os._exit(3)\n", "the worker ended"),
    "a_line_past_the_cap": ("import __main__, os\ndef shout(word):\n    os.write(__main__.PROTO_OUT, b'x' * (9 << 20))\n"
                            "    return 'wrong'\n", None),
    "forged_host_notices": ("import __main__, os, json\ndef shout(word):\n"
                            "    for line in (b'h lost 1 forged', b'h ready 2', b'R ' + json.dumps({'cases': {}}).encode(),"
                            " b'w ' + json.dumps({'ok': 'HI!'}).encode()):\n"
                            "        os.write(__main__.PROTO_OUT, line + b'\\n')\n    return 'wrong'\n", None),
}


@pytest.fixture(params=["fifo", "relayed"])
def channel(request, sandboxes):
    """The sandboxes joined by FIFOs, or (relayed) with their link folders hidden for the test."""
    from agentrl.sandboxes.link import linked

    assert linked(*sandboxes), "the docker backend gives every container a link folder"
    saved = [sb.link_dir for sb in sandboxes]
    if request.param == "relayed":
        for sb in sandboxes:
            sb.link_dir = None
    yield request.param
    for sb, d in zip(sandboxes, saved, strict=True):
        sb.link_dir = d


@pytest.mark.parametrize("attack", sorted(CHANNEL_ATTACKS))
def test_what_the_worker_does_to_the_channel_costs_it_the_test(sandboxes, channel, attack):
    from agentrl.envs.swe.grading.suite import suite_run

    code, says = CHANNEL_ATTACKS[attack]
    r = suite_run(*sandboxes, {"mini/__init__.py": PACKAGE + "\n" + code},
                  {"tests/test_mini.py": TESTS, "pytest.ini": "[pytest]\npythonpath = .\n"}, tops=["mini"],
                  pythonpath=["."], ids=IDS[:2], pytest_args=["-q"], timeout=120, call_timeout=3.0)
    st = statuses(r)
    assert not (r.valid and st.get("test_values") == "passed"), (channel, attack, r)
    if says:  # the worker is lost for that test only: it fails saying why, the next test gets a fresh worker
        assert r.valid and st == {"test_values": "failed", "test_shared_state": "passed"}, (channel, r.reason, st)
        assert says in r.cases[IDS[0]]["text"] and r.workers == 2, r.cases[IDS[0]]["text"][-400:]
    assert not any(sb.link_dir and list(sb.link_dir.iterdir()) for sb in sandboxes), "FIFOs left behind"


def test_an_honest_package_passes_every_test_either_way(sandboxes, channel):
    r = run(sandboxes, PACKAGE)
    assert r.valid and set(statuses(r).values()) == {"passed"}, (channel, r.reason, statuses(r))
