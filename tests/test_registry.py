"""Registry: built-ins, gymnasium ids, plugins through the "agentrl.envs" entry-point group, clear errors."""

from __future__ import annotations

import re
import sys
import textwrap

import gymnasium
import pytest

import agentrl
from agentrl import registry
from agentrl.agent_env import AgentEnv
from agentrl.errors import UnknownEnv


def test_make_accepts_short_name_versioned_name_and_gymnasium_id():
    for name in ("calc", "calc-v0", "agentrl/calc-v0"):
        env = agentrl.make(name)
        assert type(env).__name__ == "CalcEnv" and env.spec.id == "agentrl/calc-v0"
        assert env.unwrapped is env  # agentrl.make returns the env itself, not gymnasium's wrappers


def test_make_passes_constructor_kwargs():
    assert agentrl.make("calc", difficulty=3).difficulty == 3


def test_gymnasium_make_works_with_the_agentrl_id_and_the_module_prefix():
    env = gymnasium.make("agentrl/calc-v0", difficulty=2)
    assert env.unwrapped.difficulty == 2 and env.spec.id == "agentrl/calc-v0"
    messages, info = env.reset(seed=0)  # through gymnasium's passive checker and order enforcer
    assert messages[1]["role"] == "user" and info["task_id"].startswith("calc-d2-")
    assert gymnasium.make("agentrl.envs:agentrl/calc-v0").unwrapped.difficulty == 1


def test_unknown_name_suggests_the_closest_and_lists_the_known():
    with pytest.raises(UnknownEnv, match=re.escape('"cal" is not registered. Did you mean "calc"? Known envs: ')):
        agentrl.make("cal")
    with pytest.raises(UnknownEnv, match=re.escape('("agentrl envs" lists them)')) as e:
        agentrl.make("zzzzzz")
    assert "Did you mean" not in str(e.value) and "calc" in str(e.value)


def test_register_callable_and_description_from_docstring():
    class TinyEnv(AgentEnv):
        """A tiny env for the registry test.

        More text that is not shown.
        """

    env_id = agentrl.register("tiny_registry_test", TinyEnv)
    try:
        assert env_id == "agentrl/tiny_registry_test-v0" and env_id in agentrl.registered_env_ids()
        assert registry.env_descriptions()["tiny_registry_test"] == (env_id, "A tiny env for the registry test.")
        assert isinstance(agentrl.make("tiny_registry_test"), TinyEnv)
        assert isinstance(gymnasium.make(env_id).unwrapped, TinyEnv)
    finally:
        registry._envs.pop("tiny_registry_test")
        del gymnasium.envs.registry[env_id]


def test_builtin_registration_imports_nothing_before_make():
    spec = gymnasium.spec("agentrl/calc-v0")
    assert spec.entry_point == "agentrl.envs.calc:CalcEnv"
    assert registry.env_descriptions()["calc"][1].startswith("Arithmetic word problems")


def test_third_party_package_plugs_in_through_the_entry_point_group(tmp_path, monkeypatch):
    """A package installed with `[project.entry-points."agentrl.envs"] echo_plugin = "..."` (as a dist-info)."""
    (tmp_path / "echo_plugin_pkg.py").write_text(textwrap.dedent('''
        from agentrl.agent_env import AgentEnv
        from agentrl.types import user

        class EchoPluginEnv(AgentEnv):
            """Echo env shipped by a third-party package."""
            def reset(self, *, seed=None, options=None):
                super().reset(seed=seed)
                return [user("hi")], {}
    '''))
    dist = tmp_path / "echo_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-plugin\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[agentrl.envs]\necho_plugin = echo_plugin_pkg:EchoPluginEnv\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        env = agentrl.make("echo_plugin")  # found on first use: unknown names rescan the entry points
        assert type(env).__name__ == "EchoPluginEnv" and env.spec.id == "agentrl/echo_plugin-v0"
        assert registry.env_descriptions()["echo_plugin"] == ("agentrl/echo_plugin-v0",
                                                             "Echo env shipped by a third-party package.")
    finally:
        registry._envs.pop("echo_plugin", None)
        gymnasium.envs.registry.pop("agentrl/echo_plugin-v0", None)
        sys.modules.pop("echo_plugin_pkg", None)


def test_agentrl_envs_command_lists_each_env_with_a_description(capsys):
    from agentrl.commands import envs

    assert envs.run(None) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("calc "))
    assert "agentrl/calc-v0" in line and "calculator tool" in line


IMPORT_PROBE = """
import builtins, sys
edges, original = set(), builtins.__import__
def tracking(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__", "")
    module = original(name, globals, locals, fromlist, level)
    for sub in fromlist or ():
        if f"{module.__name__}.{sub}" in sys.modules:
            edges.add((importer, f"{module.__name__}.{sub}"))
    edges.add((importer, module.__name__ if fromlist or level else name))
    return module
builtins.__import__ = tracking
calls = []
def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_name == "register" and frame.f_code.co_filename.endswith("registry.py"):
        calls.append(frame.f_locals.get("name"))
sys.setprofile(profile)
import agentrl
sys.setprofile(None)
builtins.__import__ = original
print(sorted(calls))
print(sorted(e for e in edges if e[0].startswith("agentrl") and e[1].startswith("agentrl") and e[0] != e[1]))
"""


def test_import_agentrl_registers_each_builtin_once_without_an_import_cycle():
    """Guards the registry <-> agentrl.envs cycle (registry imported envs at import time, envs imported the
    registry and registered too: every built-in registered twice per `import agentrl`). The probe records
    every import made while `import agentrl` runs (importer -> imported) and every call of registry.register."""
    import ast
    import subprocess

    out = subprocess.run([sys.executable, "-c", IMPORT_PROBE], capture_output=True, text=True, timeout=120, check=True)
    calls_line, edges_line = out.stdout.splitlines()[-2:]
    assert ast.literal_eval(calls_line) == ["calc", "swe_lite", "swe_real"], calls_line
    edges = {tuple(e) for e in ast.literal_eval(edges_line)}
    graph: dict[str, set[str]] = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)

    def reaches(start: str, goal: str) -> bool:
        seen, todo = set(), [start]
        while todo:
            node = todo.pop()
            if node == goal:
                return True
            if node not in seen:
                seen.add(node)
                todo.extend(graph.get(node, ()))
        return False

    cycles = sorted((a, b) for a, b in edges if reaches(b, a))
    assert not cycles, f"import cycles among agentrl modules: {cycles}"


GUESS_ENV = '''
import agentrl
from agentrl.types import user


class GuessEnv(agentrl.AgentEnv):
    """Guess a number."""

    def __init__(self, n: int = 3):
        self.n = n

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        return [user("hi")], {}

    def step(self, action):
        return [], 1.0, True, False, {}
'''


def test_an_env_class_can_be_named_as_module_colon_class(tmp_path, monkeypatch):
    (tmp_path / "guess_pkg.py").write_text(GUESS_ENV)
    monkeypatch.syspath_prepend(str(tmp_path))
    env = agentrl.make("guess_pkg:GuessEnv", n=5)
    assert type(env).__name__ == "GuessEnv" and env.n == 5 and env.spec.id == "agentrl/guess_pkg.GuessEnv-v0"
    with pytest.raises(UnknownEnv, match='no attribute .GuesEnv.. Did you mean "guess_pkg:GuessEnv"'):
        agentrl.make("guess_pkg:GuesEnv")
    with pytest.raises(UnknownEnv, match="cannot import module 'no_such_pkg.envs'"):
        agentrl.make("no_such_pkg.envs:X")


def test_env_kwargs_are_checked_against_the_constructor_signature():
    from agentrl.errors import ConfigError
    from agentrl.registry import check_kwargs

    check_kwargs("calc", {"difficulty": 2})
    with pytest.raises(ConfigError, match=r'env.kwargs.taks is not an argument of SweLiteEnv \(did you mean "tasks"\?\)'):
        check_kwargs("swe_lite", {"taks": 1, "split": "dev"})
