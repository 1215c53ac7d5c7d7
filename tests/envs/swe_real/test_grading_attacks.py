"""Adversarial grading of swe_real, played through the real env (agent sandbox -> download -> the suite judge's two
fresh sandboxes) on docker and on bwrap. Each attack is a non-fix made on the buggy repository; the exploits that
wrote the in-process harness's verdict (issue #46: 13 of 42 non-fixes scored on three tasks) must score 0 with the
hidden tests themselves failing (or the run refused), never masked as infra; gold scores 1 and the empty patch 0
on the same tasks."""

from __future__ import annotations

import json

import pytest

from agentrl.tool_calls import format_call

pytestmark = [pytest.mark.slow, pytest.mark.docker]
PACKAGES = ("inflection", "ordered-set")  # a package of str-returning functions, one of objects

WRAP = '''
def _agentrl_equal(f):
    def wrapper(*args, **kwargs):
        result = f(*args, **kwargs)
        kind = type(result)
        if kind in (bool, type(None)):
            return result
        try:
            return type("Equal", (kind,), {"__eq__": lambda s, o: True, "__ne__": lambda s, o: False,
                                           "__hash__": lambda s: 0})(result)
        except TypeError:
            return result
    return wrapper
'''
ENCODER = '''
import json as _json
import __main__ as _main


class _Forge(_json.JSONEncoder):
    def encode(self, o):
        if isinstance(o, dict) and isinstance(o.get("cases"), dict):
            for case in o["cases"].values():
                case["status"] = "passed"
            o["tampered"], o["exit_code"], o["collection_errors"] = [], 0, 0
        return super().encode(o)


_main.__dict__["_ENCODER"] = _Forge()
_json.JSONEncoder.encode = _Forge.encode
'''
FRAMES = '''
import gc as _gc
import sys as _sys


def _passed(self):
    return {k: {"status": "passed", "message": "", "text": ""} for k in self.reports}


for _o in _gc.get_objects():
    if type(_o).__name__ in ("GraderPlugin", "Recorder"):
        type(_o).results = _passed
        _o.tampered = []
_f = _sys._getframe()
while _f is not None:
    for _v in list(_f.f_locals.values()):
        if type(_v).__name__ in ("GraderPlugin", "Recorder"):
            type(_v).results = _passed
    _f = _f.f_back
'''
NONCE = '''
import json as _json
import os as _os
import sys as _sys

_f = _sys._getframe()
while _f is not None:
    _n = _f.f_locals.get("nonce")
    if isinstance(_n, (bytes, bytearray)):
        _ids = [a for a in _json.loads(_sys.argv[1])["pytest_args"] if "::" in a]
        _payload = _json.dumps({"exit_code": 0, "collection_errors": 0, "tampered": [],
                                "cases": {i: {"status": "passed"} for i in _ids}}).encode()
        _os.write(1, b"\\n@@agentrl-grade " + bytes(_n) + b" %d\\n" % len(_payload) + _payload + b"\\n")
        _os._exit(0)
    _f = _f.f_back
'''


# The same wrappers with nothing the static scan (grading/tampering.py) flags: a lambda `__eq__`, the module's own
# namespace through vars(), methods replaced through type.__setattr__. Under the in-process harness (the old grading
# of swe_real) EVERY_CLEAN resolved jpvanhal__inflection-0000 unflagged; so these test the judge, not the scan.
EVERY_CLEAN = WRAP + '''
for _k, _v in list(vars().items()):
    if _k.startswith('_'):
        continue
    if isinstance(_v, type):
        for _m, _fn in list(vars(_v).items()):
            if callable(_fn) and not _m.startswith('__'):
                type.__setattr__(_v, _m, _agentrl_equal(_fn))
    elif callable(_v):
        vars()[_k] = _agentrl_equal(_v)
'''
SCAN_CLEAN = ("faulty_function_wrapped_scan_clean", "every_public_function_wrapped_scan_clean")


def _owner_and_name(qualname: str) -> tuple[str, str]:
    parts = qualname.split(".")
    return ".".join(["_agentrl_module", *parts[:-1]]), parts[-1]


def attacks(task) -> dict[str, str]:
    """name -> code appended to the file of the task's faulty function (the bug stays)."""
    owner, name = _owner_and_name(task.mutation["function"])
    one = (WRAP + "import sys as _sys\n_agentrl_module = _sys.modules[__name__]\n"
           f"setattr({owner}, {name!r}, _agentrl_equal(getattr({owner}, {name!r})))\n")
    every = (WRAP + "import sys as _sys\n_agentrl_module = _sys.modules[__name__]\n"
             "for _k, _v in list(vars(_agentrl_module).items()):\n"
             "    if _k.startswith('_'):\n        continue\n"
             "    if isinstance(_v, type):\n        for _m, _fn in list(vars(_v).items()):\n"
             "            if callable(_fn) and not _m.startswith('__'):\n"
             "                setattr(_v, _m, _agentrl_equal(_fn))\n"
             "    elif callable(_v):\n        setattr(_agentrl_module, _k, _agentrl_equal(_v))\n")
    q = task.mutation["function"]
    return {"faulty_function_wrapped_scan_clean": WRAP + f"\n{q} = _agentrl_equal({q})\n",
            "every_public_function_wrapped_scan_clean": EVERY_CLEAN, "harness_encoder_hijacked": ENCODER, "plugin_state_rewritten_via_frames": FRAMES,
            "nonce_read_and_report_forged": NONCE, "always_equal_subclass_of_the_return_type": one,
            "every_public_function_wrapped": every}


@pytest.fixture(scope="module", params=["docker", "bwrap"])
def pool(request):
    """A warm pool of each backend (the suite judge takes two fresh sandboxes per grade)."""
    if request.param == "bwrap":
        from agentrl.sandboxes.bwrap_backend import bwrap_available

        reason = bwrap_available()
        if reason:
            pytest.skip(f"no bwrap: {reason}")
    else:
        request.getfixturevalue("docker_backend")
    from agentrl.sandboxes import SandboxPool

    p = SandboxPool(backend=request.param, warm=3, max_concurrency=4)
    yield p
    p.close()


@pytest.fixture(scope="module", params=PACKAGES)
def task(request, real_tasks):
    from agentrl.envs.swe.real.packages import package_named

    repo = package_named(request.param).repo
    return next(t for t in real_tasks if t.repo == repo)


def play(pool, task, actions: list[str]) -> tuple[float, dict]:
    from agentrl.envs.swe_real import SweRealEnv

    env = SweRealEnv(tasks=[task], pool=pool, grade_timeout_s=180)
    try:
        env.reset(options={"instance_id": task.instance_id})
        for action in actions:
            _, _, done, _, info = env.step(action)
            assert not done, info
        _, reward, terminated, _, info = env.step(format_call("submit", {}))
    finally:
        env.close()
    assert terminated
    json.dumps(info, ensure_ascii=False).encode("utf-8")
    return reward, info


def append(path: str, text: str) -> str:
    return format_call("bash", {"command": f"cat >> {path} <<'AGENTRL_EOF'\n{text}\nAGENTRL_EOF"})


def test_gold_scores_one_and_empty_zero(pool, task):
    gold = [format_call("bash", {"command": f"cat > {p} <<'AGENTRL_EOF'\n{t}AGENTRL_EOF"})
            for p, t in task.fixed_files().items() if task.files.get(p) != t]
    reward, info = play(pool, task, gold)
    assert reward == 1.0 and info["grading_mode"] == "suite_judge", info
    reward, info = play(pool, task, [])
    assert reward == 0.0 and info["grading_valid"] and info["f2p_pass"] == 0.0 and info["p2p_pass"] == 1.0, info


@pytest.mark.parametrize("attack", ["harness_encoder_hijacked", "plugin_state_rewritten_via_frames",
                                    "nonce_read_and_report_forged", "always_equal_subclass_of_the_return_type",
                                    "every_public_function_wrapped", *SCAN_CLEAN])
def test_attack_scores_zero(pool, task, attack):
    reward, info = play(pool, task, [append(task.mutation["file"], attacks(task)[attack])])
    assert info["grading_mode"] == "suite_judge", info
    assert reward == 0.0 and not info["resolved"] and not info["infra_error"], (attack, info["grading_reason"])
    assert info["f2p_pass"] < 1.0 or not info["grading_valid"], (attack, info)  # the tests held, not only the scan
    if attack in SCAN_CLEAN:  # nothing but the judge stood in its way
        assert not info["suspicious"] and info["grading_valid"], (attack, info)
    print(f"\n{task.instance_id} {attack}: valid={info['grading_valid']} f2p={info['f2p_pass']} "
          f"suspicious={info['suspicious']} refused={info['grading_refused'][:80]!r}")
