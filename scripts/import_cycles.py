"""Import cycles and upward imports among agentrl's own modules: `python scripts/import_cycles.py`; exit 1 if any.

Reads the source (AST), so nothing is imported. The three source folders install as one package (agentrl/,
envs/ → agentrl.envs, sandboxes/ → agentrl.sandboxes). It reports
- module-level cycles: imports that run at module import time (module level, including try/if blocks);
- function-level cycles: imports inside functions too, which do not fail at import time but still tie two
  modules to each other;
- upward imports: a module reaching into a higher floor (FLOORS), at any level. In particular the core never
  imports the built-in envs, and nothing below the trainer imports it.
Blocks under `if TYPE_CHECKING:` never run and are skipped.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"agentrl": ROOT / "agentrl", "agentrl.envs": ROOT / "envs", "agentrl.sandboxes": ROOT / "sandboxes"}
FLOORS: list[tuple[str, ...]] = [
    ("agentrl.types", "agentrl.errors", "agentrl.tool_calls", "agentrl.safe_ast", "agentrl.subreaper"),
    ("agentrl.algo",),
    ("agentrl", "agentrl.config", "agentrl.registry", "agentrl.agent_env", "agentrl.models", "agentrl.precision",
     "agentrl.preflight", "agentrl.sandboxes"),
    ("agentrl.engine",),
    ("agentrl.rollout", "agentrl.gateway"),
    ("agentrl.envs", "agentrl.cluster", "agentrl.evaluation"),
    ("agentrl.trainer",),
    ("agentrl.commands", "agentrl.cli", "agentrl.__main__"),
]
"""The floors of the house, bottom first (docs/architecture.md): a module may import its own floor and those
below, never one above. A module is on the floor of the longest name listed that is its name or a dotted prefix
of it (so `agentrl` itself, the package's __init__, is on floor 2, and agentrl.envs.calc on floor 5)."""


def modules() -> dict[str, Path]:
    """{dotted module name: file} of every module of the three source folders."""
    out = {}
    for prefix, folder in PACKAGES.items():
        for path in folder.rglob("*.py"):
            if "corpus" in path.parts:  # swe_lite's task repositories are data, not agentrl modules
                continue
            parts = path.relative_to(folder).with_suffix("").parts
            name = ".".join((prefix, *parts)).removesuffix(".__init__")
            out[name] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    """True for `if TYPE_CHECKING:` (or `typing.TYPE_CHECKING`): its body never runs."""
    test = getattr(node, "test", None) if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _eager(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, descending into if/try/with blocks (they run at import), not into defs."""
    todo, out = list(tree.body), []
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If) and _type_checking(node):
            todo += node.orelse
        elif isinstance(node, ast.If | ast.Try | ast.With):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo += getattr(node, field, [])
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return out


def _everywhere(tree: ast.Module) -> list[ast.AST]:
    """Every node of the module, functions included, except the bodies of `if TYPE_CHECKING:` blocks."""
    todo, out = [tree], []
    while todo:
        node = todo.pop()
        out.append(node)
        if _type_checking(node):
            todo += node.orelse
        else:
            todo += ast.iter_child_nodes(node)
    return out


def graph(lazy: bool) -> dict[str, set[str]]:
    """Module → the agentrl modules it imports."""
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        nodes = _everywhere(tree) if lazy else _eager(tree)
        deps: set[str] = set()
        named: set[str] = set()  # the modules an import statement names itself (not the names it imports)
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                deps.add(base)
                named.add(base)
                deps.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        # A module's ancestor packages are initialised before it in any case, so they are an edge only where the
        # module names one (`from agentrl.sandboxes import reaper` reads the package's __init__, which may be
        # importing this very module): `from agentrl.sandboxes.reaper import ...` names only the submodule.
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)} - named
        edges[name] = {d for d in deps if d in mods and d != name and d not in ancestors}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                elif child in on_stack:
                    low[v] = min(low[v], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on_stack.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    found.append(sorted(comp))
    return found


def _in(module: str, layer: str) -> bool:
    return module == layer or module.startswith(layer + ".")


def floor(module: str, floors: list[tuple[str, ...]] = FLOORS) -> int:
    """The floor (index into `floors`) of a module: that of the longest listed name it is or starts with."""
    best, level = -1, None
    for i, names in enumerate(floors):
        for n in names:
            if _in(module, n) and len(n) > best:
                best, level = len(n), i
    if level is None:
        raise KeyError(f"{module} is on no floor: add it (or its package) to FLOORS in scripts/import_cycles.py")
    return level


def upward(edges: dict[str, set[str]], floors: list[tuple[str, ...]] = FLOORS) -> list[tuple[str, str]]:
    """(importer, imported) pairs where a module imports one on a higher floor."""
    return sorted((src, dst) for src, deps in edges.items() for dst in deps if floor(dst, floors) > floor(src, floors))


def main(argv: list[str]) -> int:
    """Print module-level cycles, function-level cycles and upward imports (each "none" or the list); exit 1
    when there is any."""
    eager, lazy = cycles(graph(lazy=False)), cycles(graph(lazy=True))
    up = upward(graph(lazy=True))
    print("import cycles (module level): " + ("; ".join(" ↔ ".join(c) for c in eager) or "none"))
    print("import cycles (inside functions too): " + ("; ".join(" ↔ ".join(c) for c in lazy) or "none"))
    print("upward imports: " + ("; ".join(f"{a} → {b}" for a, b in up) or "none"))
    return 1 if eager or lazy or up else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
