"""Import cycles among agentrl's own modules: `python scripts/import_cycles.py [--lazy]`; exit 1 if any.

Reads the source (AST), so nothing is imported. The three source folders install as one package (agentrl/,
envs/ → agentrl.envs, sandboxes/ → agentrl.sandboxes). By default only imports that run at module import time
count (module level, including try/if blocks); `--lazy` also counts imports inside functions, which do not
fail at import time but still tie two modules to each other.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = {"agentrl": ROOT / "agentrl", "agentrl.envs": ROOT / "envs", "agentrl.sandboxes": ROOT / "sandboxes"}


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


def _eager(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, descending into if/try/with blocks (they run at import), not into defs."""
    todo, out = list(tree.body), []
    while todo:
        node = todo.pop()
        out.append(node)
        if isinstance(node, ast.If | ast.Try | ast.With):
            for field in ("body", "orelse", "finalbody", "handlers"):
                todo += getattr(node, field, [])
        elif isinstance(node, ast.ExceptHandler):
            todo += node.body
    return out


def graph(lazy: bool) -> dict[str, set[str]]:
    """Module → the agentrl modules it imports."""
    mods = modules()
    edges: dict[str, set[str]] = {}
    for name, path in mods.items():
        tree = ast.parse(path.read_text())
        nodes = list(ast.walk(tree)) if lazy else _eager(tree)
        deps: set[str] = set()
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in nodes:
            if isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative import
                    anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                deps.add(base)
                deps.update(f"{base}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names)
        # a module's own ancestor packages are initialised before it in any case: not an edge of a cycle
        ancestors = {name.rsplit(".", k)[0] for k in range(1, name.count(".") + 1)}
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


def main(argv: list[str]) -> int:
    """Print the cycles (or "none"); exit 1 when there are any."""
    lazy = "--lazy" in argv
    found = cycles(graph(lazy))
    kind = "import cycles (module level and inside functions)" if lazy else "import cycles (module level)"
    print(f"{kind}: " + ("none" if not found else "; ".join(" ↔ ".join(c) for c in found)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
