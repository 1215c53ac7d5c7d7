"""No import cycles among agentrl's modules, at import time or through imports inside functions, and no import
from a floor into a higher one (scripts/import_cycles.py FLOORS; docs/architecture.md)."""

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "import_cycles.py"

def _load():
    spec = importlib.util.spec_from_file_location("import_cycles", SCRIPT)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_no_module_level_import_cycle():
    ic = _load()
    assert ic.cycles(ic.graph(lazy=False)) == []


def test_no_function_level_import_cycle():
    """Guards the config ↔ trainer.losses loop coming back (the config checks reductions against LOSS_SPECS, so
    losses must not read the config), and the package-__init__ loops (sandboxes/__init__ ↔ backends ↔ pool)."""
    ic = _load()
    found = ic.cycles(ic.graph(lazy=True))
    assert found == [], f"import cycles through imports inside functions: {found}"


def test_no_upward_import():
    """Guards the core importing the built-in envs (registry → envs), the algorithm floor reading the config, and
    anything below the trainer reaching into it (evaluation and the swe_lite benchmark once did, for seeds)."""
    ic = _load()
    assert ic.upward(ic.graph(lazy=True)) == []


def test_every_module_is_on_a_floor():
    """A new package must be given a floor, or the upward check would not see it."""
    ic = _load()
    for name in ic.modules():
        ic.floor(name)


def test_the_checker_finds_a_cycle():
    """Guards the guard: a two-module loop and a three-module loop are reported, a chain is not."""
    ic = _load()
    found = ic.cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}})
    assert sorted(found) == [["a", "b"], ["c", "d", "e"]]
    assert ic.cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_finds_upward_imports_and_skips_type_checking_blocks(tmp_path):
    """Guards the guard: an import inside a function from the evaluator, rollout/ or envs/ into the trainer, or
    from the registry into envs/, is reported (agentrl.trainer_x is not the trainer, and a longer listed name
    wins: agentrl.envs.calc is on the envs floor, not agentrl's); a TYPE_CHECKING-only import makes no edge."""
    import ast

    ic = _load()
    edges = {"agentrl.evaluation": {"agentrl.trainer.collect"}, "agentrl.rollout.seeds": {"agentrl.trainer"},
             "agentrl.envs.swe_lite.benchmark": {"agentrl.trainer.heldout", "agentrl.rollout.seeds"},
             "agentrl.trainer.loop": {"agentrl.evaluation"}, "agentrl.registry": {"agentrl.envs.calc"},
             "agentrl.envs.calc": {"agentrl"}, "agentrl.algo.losses": {"agentrl.types"}}
    assert ic.upward(edges) == [("agentrl.envs.swe_lite.benchmark", "agentrl.trainer.heldout"),
                                ("agentrl.evaluation", "agentrl.trainer.collect"),
                                ("agentrl.registry", "agentrl.envs.calc"),
                                ("agentrl.rollout.seeds", "agentrl.trainer")]
    assert ic.upward({"agentrl.algo.corrections": {"agentrl.config"}}) == [("agentrl.algo.corrections",
                                                                             "agentrl.config")]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\n")
    names = {a.name for n in ic._everywhere(tree) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"b", "c"}
    assert {a.name for n in ic._eager(tree) if isinstance(n, ast.Import) for a in n.names} == {"b"}


def test_a_module_that_names_its_own_package_ties_itself_to_the_packages_init(tmp_path, monkeypatch):
    """Guards the guard: `from pkg import sub` inside pkg/sub2.py, where pkg/__init__ imports sub2, is a cycle
    through the package's __init__; `from pkg.sub import x` is not."""
    ic = _load()
    root = tmp_path / "agentrl"
    root.mkdir()
    (root / "__init__.py").write_text("from agentrl.b import f\n")
    (root / "a.py").write_text("X = 1\n")
    (root / "b.py").write_text("from agentrl import a\ndef f(): return a.X\n")
    monkeypatch.setattr(ic, "PACKAGES", {"agentrl": root})
    assert ic.cycles(ic.graph(lazy=False)) == [["agentrl", "agentrl.b"]]
    (root / "b.py").write_text("import agentrl.a as a\ndef f(): return a.X\n")
    assert ic.cycles(ic.graph(lazy=False)) == []
