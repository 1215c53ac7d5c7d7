"""No import cycles among agentrl's modules, at import time or through imports inside functions, and no upward
import from rollout/, envs/ or the evaluator into the trainer (scripts/import_cycles.py)."""

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
    losses must not read the config)."""
    ic = _load()
    found = ic.cycles(ic.graph(lazy=True))
    assert found == [], f"import cycles through imports inside functions: {found}"


def test_no_upward_import_into_the_trainer():
    """Guards evaluation and the swe_lite benchmark reaching into trainer.collect for the seed scheme and the loop
    settings (and rollout/ ever doing so): those live in rollout/, below the trainer."""
    ic = _load()
    assert ic.upward(ic.graph(lazy=True)) == []


def test_the_checker_finds_a_cycle():
    """Guards the guard: a two-module loop and a three-module loop are reported, a chain is not."""
    ic = _load()
    found = ic.cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}})
    assert sorted(found) == [["a", "b"], ["c", "d", "e"]]
    assert ic.cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_finds_upward_imports_and_skips_type_checking_blocks(tmp_path):
    """Guards the guard: an import inside a function from the evaluator, rollout/ or envs/ into the trainer is
    reported (agentrl.trainer_x is not the trainer); a TYPE_CHECKING-only import makes no edge."""
    import ast

    ic = _load()
    edges = {"agentrl.evaluation": {"agentrl.trainer.collect"}, "agentrl.rollout.seeds": {"agentrl.trainer"},
             "agentrl.envs.swe_lite.benchmark": {"agentrl.trainer.heldout", "agentrl.rollout.seeds"},
             "agentrl.trainer.loop": {"agentrl.evaluation"}, "agentrl.cluster": {"agentrl.trainer_x"}}
    assert ic.upward(edges) == [("agentrl.envs.swe_lite.benchmark", "agentrl.trainer.heldout"),
                                ("agentrl.evaluation", "agentrl.trainer.collect"),
                                ("agentrl.rollout.seeds", "agentrl.trainer")]
    tree = ast.parse("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import a\nelse:\n    import b\n"
                     "def f():\n    import c\n")
    names = {a.name for n in ic._everywhere(tree) if isinstance(n, ast.Import) for a in n.names}
    assert names == {"b", "c"}
    assert {a.name for n in ic._eager(tree) if isinstance(n, ast.Import) for a in n.names} == {"b"}
