"""No import cycles among agentrl's modules at import time (scripts/import_cycles.py, issue 21 item 3)."""

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


def test_the_checker_finds_a_cycle():
    """Guards the guard: a two-module loop and a three-module loop are reported, a chain is not."""
    ic = _load()
    found = ic.cycles({"a": {"b"}, "b": {"a"}, "c": {"d"}, "d": {"e"}, "e": {"c"}, "f": {"a"}})
    assert sorted(found) == [["a", "b"], ["c", "d", "e"]]
    assert ic.cycles({"a": {"b"}, "b": set()}) == []
