"""The package's module-level import graph: no circles, and the layers import downwards
only (the operations never reach the facade back; the core never imports research code
or the CLI). Imports inside functions and under TYPE_CHECKING are lazy and not counted."""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

SRC = Path(__file__).resolve().parents[1] / "src"
PACKAGE = SRC / "zenbrain"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _top_level_imports(tree: ast.Module, name: str, is_package: bool) -> set[str]:
    out: set[str] = set()
    base = name.split(".") if is_package else name.split(".")[:-1]
    nodes = list(tree.body)
    while nodes:
        node = nodes.pop()
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            nodes.extend(node.orelse)
            continue
        if isinstance(node, (ast.If, ast.Try)):
            nodes.extend(node.body + node.orelse + getattr(node, "finalbody", []))
            for handler in getattr(node, "handlers", []):
                nodes.extend(handler.body)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names if a.name.startswith("zenbrain"))
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                mod = ".".join(base[: len(base) - node.level + 1] + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            if mod.startswith("zenbrain"):
                out.add(mod)
                out.update(f"{mod}.{a.name}" for a in node.names)
    return out


def _graph() -> nx.DiGraph:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    g = nx.DiGraph()
    for name, path in files.items():
        g.add_node(name)
        for target in _top_level_imports(ast.parse(path.read_text()), name, path.name == "__init__.py"):
            # A module's own parent packages are initialised before it: not a dependency.
            if target in files and target != name and not name.startswith(target + "."):
                g.add_edge(name, target)
    return g


def test_no_import_circles():
    cycles = list(nx.simple_cycles(_graph()))
    assert cycles == [], [" -> ".join(c) for c in cycles[:5]]


def test_layers_import_downwards():
    g = _graph()
    research = ("zenbrain.bench", "zenbrain.experiments", "zenbrain.cli")
    for src, dst in g.edges:
        if src.startswith(("zenbrain.pipeline", "zenbrain.storage", "zenbrain.mechanisms", "zenbrain.pma")):
            assert not dst.startswith(("zenbrain.coordinator", "zenbrain.api", "zenbrain.server")), (src, dst)
        if not src.startswith(research):
            assert not dst.startswith(research), (src, dst)
        if src.startswith(("zenbrain.mechanisms", "zenbrain.pma")):
            assert not dst.startswith(("zenbrain.providers", "zenbrain.pipeline", "zenbrain.engine")), (src, dst)
