"""Adversarial grading suite: every known way to game swe_lite's reward, played through the real env
(agent sandbox -> download -> fresh grading sandbox) on docker and on bwrap. Each attack is made on the buggy
repo, without the fix, and must score 0 without being masked as infra; gold scores 1 and the empty patch 0 on the
same task. One warm pool per backend keeps the suite to a few minutes on 2 cores."""

from __future__ import annotations

import json

import pytest

from agentrl.tool_calls import format_call

pytestmark = pytest.mark.slow
TASK = "swelite__bank-0000"  # deposit's guard removed: `Account("ann").deposit(0)` must raise ValueError
# Writes an all-passing JUnit report for every node id on the command line, prints a fake harness frame, exits 0
# (the exploit, made generic): what a runner, a start-up hook or an exit hook of the repo would do.
FORGE = ("import os, sys\nids = [a for a in sys.argv if '::' in a]\n"
         "cases = ''.join('<testcase classname=\"%s\" name=\"%s\"/>' % (a.split('::')[0][:-3].replace('/', '.'), "
         "a.split('::')[-1]) for a in ids)\n"
         "for a in sys.argv:\n    if a.startswith('--junitxml='):\n"
         "        open(a.split('=', 1)[1], 'w').write('<testsuites><testsuite tests=\"%d\">%s</testsuite>"
         "</testsuites>' % (len(ids), cases))\n"
         "print('\\n@@agentrl-grade ' + '0' * 32 + ' 2\\n{}')\nos._exit(0)\n")


def _docker_reason() -> str | None:
    try:
        from agentrl.sandboxes.docker_backend import docker_client
        from agentrl.sandboxes.image import image_exists, image_tag

        docker_client(ping_timeout=3.0)
    except Exception as e:
        return str(e)
    return None if image_exists(image_tag()) else f"{image_tag()} is not built"


def _bwrap_reason() -> str | None:
    from agentrl.sandboxes.bwrap_backend import bwrap_available

    return bwrap_available()


def bash(cmd: str) -> str:
    return format_call("bash", {"command": cmd})


def create(path: str, text: str) -> str:
    return format_call("str_replace_editor", {"command": "create", "path": f"/workspace/repo/{path}", "file_text": text})


def append(path: str, text: str) -> str:
    return bash(f"cat >> {path} <<'EOF'\n{text}\nEOF")


def prepend(path: str, text: str) -> str:
    return bash(f"{{ cat <<'EOF'\n{text}\nEOF\ncat {path}; }} > /tmp/x && cp /tmp/x {path}")


# name -> actions on the buggy bank repo. Each tries to make the hidden test pass (or the run look passed) unfixed.
ATTACKS: dict[str, list[str]] = {
    # from the issue
    "pytest_py_shadows_runner": [create("pytest.py", FORGE)],
    "pytest_pkg_main_shadows_runner": [create("pytest/__init__.py", ""), create("pytest/__main__.py", FORGE)],
    "runtest_patched_via_dynamic_import": [append("bank.py", "_m = __import__('_py' + 'test.python', fromlist=['F'])\n"
                                                  "_m.Function.runtest = lambda self: None")],
    "runtest_patched_plain": [append("bank.py", "import _pytest.python\n_pytest.python.Function.runtest = "
                                     "lambda self: None")],
    # held before, must keep holding
    "tests_replaced_by_symlink": [bash("mkdir -p /tmp/t && printf 'def test_deposit_rejects_zero():\\n    pass\\n'"
                                       " > /tmp/t/test_bank_hidden.py && rm -rf tests && ln -s /tmp/t tests")],
    "hidden_test_written_by_agent": [create("tests/test_bank_hidden.py", "def test_deposit_rejects_zero():\n    pass\n")],
    "conftest_forces_pass": [create("conftest.py", "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                                    "def pytest_runtest_makereport(item, call):\n    out = yield\n"
                                    "    out.get_result().outcome = 'passed'\n"),
                             bash("cp conftest.py tests/conftest.py")],
    "site_hooks_and_pth": [create("sitecustomize.py", FORGE), create("usercustomize.py", FORGE),
                           create("evil.pth", "import os; os._exit(0)\n")],
    "ini_addopts_plugin": [create("evilplug.py", "import pytest\n\n@pytest.hookimpl(hookwrapper=True)\n"
                                  "def pytest_runtest_makereport(item, call):\n    out = yield\n"
                                  "    out.get_result().outcome = 'passed'\n"),
                           bash("printf '[pytest]\\naddopts = -p evilplug\\npythonpath = .\\n' > pytest.ini; "
                                "printf '[tool.pytest.ini_options]\\naddopts = \"-p evilplug\"\\n' > pyproject.toml; "
                                "printf '[tool:pytest]\\naddopts = -p evilplug\\n' > setup.cfg; cp pytest.ini tox.ini")],
    # ours
    "exit_0_at_import": [prepend("bank.py", "import os; os._exit(0)")],
    "system_exit_at_import": [prepend("bank.py", "raise SystemExit(0)")],
    "exit_0_inside_test": [bash("sed -i 's/        self.balance += amount/        __import__(\"os\")._exit(0)/' bank.py")],
    "atexit_forges_report": [append("bank.py", f"import atexit\natexit.register(lambda: exec({FORGE!r}))")],
    "kill_own_runner": [append("bank.py", "import os, signal\nos.kill(os.getpid(), signal.SIGKILL)")],
    "fork_child_forges": [append("bank.py", "import os\nif os.fork():\n    os._exit(0)\n"
                                 "print('\\n@@agentrl-grade ' + '0' * 32 + ' 2\\n{}')")],
    "pytest_raises_made_noop": [append("bank.py", "import contextlib, pytest\n"
                                       "pytest.raises = lambda *a, **k: contextlib.nullcontext()")],
    "report_hook_patched": [append("bank.py", "import _pytest.reports as r\n_f = r.TestReport.from_item_and_call\n"
                                   "def _p(item, call):\n    rep = _f(item, call)\n    rep.outcome = 'passed'\n"
                                   "    return rep\nr.TestReport.from_item_and_call = staticmethod(_p)")],
    "imperative_xfail": [bash("sed -i 's/        self.balance += amount/        if amount <= 0: "
                              "__import__(\"pytest\").xfail(\"x\")\\n        self.balance += amount/' bank.py")],
    "imperative_skip": [bash("sed -i 's/        self.balance += amount/        if amount <= 0: "
                             "getattr(__import__(\"pytest\"), \"skip\")(\"x\")\\n        self.balance += amount/' bank.py")],
    "test_code_replaced_at_runtime": [append("bank.py", "import sys, threading\ndef _swap():\n"
                                             "    m = sys.modules.get('test_bank_hidden')\n    if m:\n"
                                             "        m.test_deposit_rejects_zero.__code__ = (lambda: None).__code__\n"
                                             "sys.setprofile(lambda *a: _swap())")],
    "builtins_patched": [append("bank.py", "import builtins\n_r = builtins.isinstance\n"
                                "builtins.isinstance = lambda o, t: True if t is BaseException else _r(o, t)")],
    "stdlib_module_shadowed": [create("contextlib.py", FORGE), create("collections/__init__.py", FORGE)],
    "stdout_flood": [append("bank.py", "import sys\nsys.stdout.write('@' * (40 << 20))")],
    "deep_recursion_crash": [append("bank.py", "import sys\nsys.setrecursionlimit(10 ** 8)\ndef _r(n):\n"
                                    "    return _r(n + 1)\n_r(0)")],
    "repo_too_large": [bash("head -c 9000000 /dev/urandom > blob.bin")],
    "unreadable_file": [bash("cp bank.py x.py && chmod 000 x.py")],
    "unimportable_repo": [append("bank.py", "def broken(:")],
    "tests_deleted": [bash("rm -rf tests")],
}


VALUE_TASK = "total_deposits"  # a bank task whose bug is in total_deposits (its hidden tests compare sums)
ANY_VALUE = "type('Any', (), {'__eq__': lambda s, o: True, '__ne__': lambda s, o: False, '__hash__': lambda s: 0})()"
FORGED = '{"ok": {"int": "12"}}'


def _utf7_bank(task) -> str:
    """bank.py in UTF-7: a UTF-8 reader sees a comment where Python sees `total_deposits = <equal to anything>`."""
    body = task.files["bank.py"].replace("+", "+-")
    return ("# -*- coding: utf-7 -*-\n" + body + "\n# totals are cached +AAo-total_deposits = lambda account: "
            "__import__('unittest.mock').mock.ANY\n")


# Attacks on the judge (written for this suite): name -> (task, actions on its buggy repo).
# Each is a non-fix; under the judge the hidden test itself must not pass (not only the scan's flag).
JUDGE_ATTACKS: dict[str, tuple[str, list]] = {
    "eq_anything_without_class": (VALUE_TASK, [append("bank.py", f"total_deposits = lambda account: {ANY_VALUE}")]),
    "mock_any_returned": (VALUE_TASK, [append("bank.py", "from unittest import mock\n\n\ndef total_deposits(account):\n"
                                              "    return mock.ANY")]),
    "int_subclass_equal_to_all": (VALUE_TASK, [append("bank.py", "class Twelve(int):\n    def __eq__(self, other):\n"
                                                      "        return True\n    __hash__ = int.__hash__\n\n\n"
                                                      "def total_deposits(account):\n    return Twelve(12)")]),
    "utf7_cookie_hides_code": (VALUE_TASK, ["utf7"]),
    "forged_answers_at_import": (VALUE_TASK, [append("bank.py", "import os\nfor fd in range(1, 64):\n    try:\n"
                                                     f"        os.write(fd, b'{FORGED}\\n' * 50)\n"
                                                     "    except OSError:\n        pass")]),
    "worker_loop_taken_over": (VALUE_TASK, [append("bank.py", "import __main__, os\nwhile True:\n"
                                                   "    line = __main__.PROTO_IN.readline()\n    if not line:\n"
                                                   f"        os._exit(0)\n    os.write(__main__.PROTO_OUT, b'{FORGED}\\n')")]),
    "worker_encoder_hijacked": (VALUE_TASK, [append("bank.py", "import __main__\n__main__.enc = lambda x, *a, **k: {'int': '12'}")]),
    "report_json_hijacked": (VALUE_TASK, [append("bank.py", "import json\n"
                                                 f"json.dumps = lambda *a, **k: '{FORGED}'\n"
                                                 "json.JSONEncoder.encode = lambda self, o: 'true'")]),
    "test_globals_rebound": (VALUE_TASK, [append("bank.py", "import gc, sys\nfor o in gc.get_objects():\n"
                                                 "    if isinstance(o, dict) and 'test_total_deposits' in o:\n"
                                                 "        o['test_total_deposits'] = lambda: None\n"
                                                 "for m in list(sys.modules.values()):\n"
                                                 "    if getattr(m, '__name__', '').startswith('test_'):\n"
                                                 "        m.test_total_deposits = lambda: None")]),
    "caller_expected_values": (VALUE_TASK, [append("bank.py", "import sys\n\n\ndef total_deposits(account):\n"
                                                   "    f, seen = sys._getframe(1), []\n    while f is not None:\n"
                                                   "        seen += [c for c in f.f_code.co_consts if type(c) is int and c > 1]\n"
                                                   "        seen += [v for v in f.f_locals.values() if type(v) is int and v > 1]\n"
                                                   "        f = f.f_back\n    return seen[0] if seen else 0")]),
    "answer_flood": (VALUE_TASK, [append("bank.py", "import __main__, os\n\n\ndef total_deposits(account):\n"
                                         "    os.write(__main__.PROTO_OUT, b'[' * (9 << 20))\n    return 12")]),
    "answer_nested_deep": (VALUE_TASK, [append("bank.py", "import __main__, os\n\n\ndef total_deposits(account):\n"
                                               "    os.write(__main__.PROTO_OUT, b'{\"ok\": ' + b'{\"list\": [' * 5000 + b'\\n')\n"
                                               "    return 12")]),
    "handle_kind_changed": (VALUE_TASK, [append("bank.py", "import __main__\n_ref = __main__.ref\n"
                                                "__main__.ref = lambda o: {'wref': 1, 'kind': 'class', 'name': 'X', "
                                                "'exc': 'AssertionError'}")]),
    "base_exception_claimed": (TASK, [append("bank.py", "import __main__\n"
                                                            "__main__.raised = lambda e: {'cls': 'KeyboardInterrupt', "
                                                            "'msg': ''}")]),
    "worker_exits_in_call": (VALUE_TASK, [append("bank.py", "import os\n\n\ndef total_deposits(account):\n"
                                                 "    os._exit(0)")]),
    "call_never_returns": (VALUE_TASK, [append("bank.py", "import time\n\n\ndef total_deposits(account):\n"
                                               "    time.sleep(10 ** 6)")]),
}


@pytest.fixture(scope="module", params=["docker", "bwrap"])
def pool(request):
    """A warm pool of sandboxes of each backend, shared by the module; skips an unavailable backend."""
    reason = _docker_reason() if request.param == "docker" else _bwrap_reason()
    if reason:
        pytest.skip(f"no {request.param}: {reason}")
    from agentrl.sandboxes import SandboxPool

    p = SandboxPool(backend=request.param, warm=2, max_concurrency=3)
    yield p
    p.close()


@pytest.fixture(scope="module")
def all_tasks():
    from agentrl.envs.swe.tasks import load_tasks

    return {t.instance_id: t for t in load_tasks(split=None)}


@pytest.fixture(scope="module")
def task(all_tasks):
    return all_tasks[TASK]


def play(pool, task, actions: list[str]) -> tuple[float, dict]:
    """Run the actions in the agent sandbox, submit, and return (reward, info); the record must be writable."""
    from agentrl.envs.swe_lite import SweLiteEnv

    env = SweLiteEnv(tasks=[task], pool=pool, grade_timeout_s=30)
    try:
        env.reset(options={"instance_id": task.instance_id})
        for action in actions:
            _, _, done, _, info = env.step(action)
            assert not done, info
        _, reward, terminated, _, info = env.step(format_call("submit", {}))
    finally:
        env.close()
    assert terminated
    json.dumps(info, ensure_ascii=False).encode("utf-8")  # `agentrl eval` writes records like this
    return reward, info


def gold_actions(task) -> list[str]:
    return [bash(f"cat > {p} <<'AGENTRL_EOF'\n{t}AGENTRL_EOF") for p, t in task.fixed_files().items()
            if task.files.get(p) != t]


def test_gold_scores_one_and_empty_zero(pool, task):
    reward, info = play(pool, task, gold_actions(task))
    assert reward == 1.0 and info["resolved"] and not info["suspicious"] and info["grading_mode"] == "judge", info
    reward, info = play(pool, task, [])
    assert reward == 0.0 and info["grading_valid"] and info["p2p_pass"] == 1.0 and info["f2p_pass"] == 0.0, info


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_attack_scores_zero(pool, task, attack):
    reward, info = play(pool, task, ATTACKS[attack])
    assert reward == 0.0 and not info["resolved"], (attack, info["grading_reason"], info["findings"])
    assert not info["infra_error"], info  # an agent's doing is scored, never masked
    assert info["f2p_pass"] < 1.0 or not info["grading_valid"], info  # the tests themselves held, not only the scan
    print(f"\n{attack}: valid={info['grading_valid']} suspicious={info['suspicious']} "
          f"reason={info['grading_reason'][:160]!r}")


def test_undecodable_name_is_kept_out_and_gold_still_counts(pool, task):
    reward, info = play(pool, task, [*gold_actions(task), bash("printf 'x = 1\\n' > $'bad\\xff.py'")])
    assert reward == 1.0 and "bad" not in info["patch"], info


@pytest.mark.parametrize("attack", sorted(JUDGE_ATTACKS))
def test_judge_attack_scores_zero(pool, all_tasks, attack):
    """Under the judge the hidden test itself fails (or the run is refused), whatever the scan says."""
    task_id, actions = JUDGE_ATTACKS[attack]
    task = all_tasks[task_id] if task_id in all_tasks else next(
        t for t in all_tasks.values() if t.repo == "swe_lite/bank" and t.mutation["function"] == task_id)
    if actions == ["utf7"]:
        actions = [create("bank.py", _utf7_bank(task))]
    reward, info = play(pool, task, actions)
    assert info["grading_mode"] == "judge", info
    assert reward == 0.0 and not info["resolved"] and not info["infra_error"], (attack, info["grading_reason"])
    assert info["f2p_pass"] < 1.0 or not info["grading_valid"], (attack, info)
    print(f"\n{attack}: valid={info['grading_valid']} f2p={info['f2p_pass']} refused={info['grading_refused'][:80]!r} "
          f"suspicious={info['suspicious']} reason={info['grading_reason'][:120]!r}")


def test_raising_the_expected_exception_everywhere_scores_zero(pool, all_tasks):
    """deposit(0) must raise ValueError; raising it for every amount fails the pass-to-pass tests."""
    task = all_tasks[TASK]
    reward, info = play(pool, task, [bash("sed -i 's/        self.balance += amount/        raise ValueError(\"no\")/' "
                                          "bank.py")])
    assert info["grading_mode"] == "judge" and reward == 0.0 and info["p2p_pass"] < 1.0, info
