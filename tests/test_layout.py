"""The package's layout holds: each folder imports only what lies below it, and no circle.

Every `import` of every module counts, those inside functions and under `TYPE_CHECKING` too:
an import deferred into a function body is an arrow between two modules all the same
(docs/architecture.md, "Layout").
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from conftest import REPO

Graph = dict[str, frozenset[str]]

_MEMORY = frozenset(
    {"memory.format", "memory.text", "memory.storage", "memory.index", "memory.query"}
)
"""The memory plane's folders below `exchange`."""

MAY_IMPORT: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "protocol": frozenset({"base"}),
    "memory.format": frozenset({"base"}),
    "memory.text": frozenset({"base", "memory.format"}),
    "memory.storage": frozenset({"base", "memory.format", "memory.text"}),
    "memory.index": frozenset({"base", "memory.format", "memory.text", "memory.storage"}),
    "memory.query": frozenset(
        {"base", "protocol", "memory.format", "memory.text", "memory.storage"}
    ),
    "memory.exchange": _MEMORY - {"memory.query"} | {"base"},
    "memory": frozenset({"base", "memory.query", "memory.text"}),
    "codegraph": frozenset({"base", "protocol"}),
    "actors": frozenset({"base", "protocol", "codegraph", "memory", "memory.query", "memory.text"}),
    "agents": _MEMORY | {"base", "protocol", "codegraph", "memory", "memory.exchange"},
    "cli": _MEMORY
    | {"base", "protocol", "codegraph", "memory", "memory.exchange", "actors", "agents"},
    "__main__": frozenset({"cli"}),
}
"""Which folders each folder may import besides itself: the floors of the house. `base` is
the package's leaf modules (`exceptions`, `config`, `paths`, `faults`, `programs`, its
version). The
memory plane's read side (`query`) and write side (`index`) never import each other;
neither plane (`memory`, `codegraph`) imports the other; `protocol`, the sans-IO core,
imports no plane."""

PLANES = ("memory", "codegraph")


def group(module: str) -> str:
    """The folder `module` belongs to (a key of `MAY_IMPORT`)."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in ("exceptions", "config", "paths", "faults", "programs"):
        return "base"
    if parts[0] == "memory" and len(parts) > 1:
        return f"memory.{parts[1]}"
    return parts[0]


def import_graph(root: Path) -> Graph:
    """Each module of the package in `root` (its folder `lwc_trio`) and the package's
    modules it imports (`from a import b` names module `a.b` when there is one, else `a`)."""
    paths: dict[str, Path] = {}
    for path in sorted((root / "lwc_trio").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        paths[".".join(parts)] = path
    graph: Graph = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                targets.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")
                    up = up[: len(up) - node.level + 1]
                    base = ".".join([*up, base] if base else up)
                for alias in node.names:
                    inner = f"{base}.{alias.name}"
                    targets.add(inner if inner in paths else base)
        graph[name] = frozenset(t for t in targets if t in paths and t != name)
    return graph


def upward(graph: Graph) -> list[str]:
    """The imports the map forbids, as `module -> module`."""
    return sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if group(source) != group(target) and group(target) not in MAY_IMPORT[group(source)]
    )


def circles(graph: Graph) -> list[list[str]]:
    """The import circles: each group of two or more modules that reach one another."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(module: str) -> None:  # Tarjan's strongly connected components
        index[module] = low[module] = len(index)
        stack.append(module)
        for target in graph[module]:
            if target not in index:
                visit(target)
                low[module] = min(low[module], low[target])
            elif target in stack:
                low[module] = min(low[module], index[target])
        if low[module] == index[module]:
            component = [stack.pop()]
            while component[-1] != module:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return sorted(found)


def test_the_map_names_every_folder() -> None:
    """Every module belongs to a folder the map knows, and the map knows no other folder."""
    assert {group(name) for name in import_graph(REPO)} == set(MAY_IMPORT)


def test_every_import_points_down() -> None:
    """No module imports a folder above its own or beside it: the memory plane's read and
    write sides never import each other, no plane imports another."""
    assert upward(import_graph(REPO)) == []


def test_no_import_circle() -> None:
    """No modules import one another, even through a function body: each folder can be read
    (and each module imported) from the bottom up."""
    assert circles(import_graph(REPO)) == []


def test_protocol_imports_no_plane() -> None:
    """The sans-IO core (`protocol/`) imports neither plane."""
    graph = import_graph(REPO)
    wrong = sorted(
        f"{source} -> {target}"
        for source, targets in graph.items()
        for target in targets
        if group(source) == "protocol" and group(target).split(".")[0] in PLANES
    )
    assert wrong == []


def test_the_checks_see_a_planted_arrow_and_circle(tmp_path: Path) -> None:
    """The checks read what the files say: an import of the read side deferred into a
    write-side function is reported, and so is a circle closed by a function-level import."""
    files = {
        "lwc_trio/__init__.py": "",
        "lwc_trio/memory/__init__.py": "",
        "lwc_trio/memory/index/__init__.py": "",
        "lwc_trio/memory/index/writer.py": (
            "def write():\n    from lwc_trio.memory.query.search import Hit\n"
        ),
        "lwc_trio/memory/query/__init__.py": "",
        "lwc_trio/memory/query/search.py": "from . import results\nHit = 1\n",
        "lwc_trio/memory/query/results.py": (
            "def rows():\n    from lwc_trio.memory.query import search\n"
        ),
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    graph = import_graph(tmp_path)
    assert upward(graph) == ["lwc_trio.memory.index.writer -> lwc_trio.memory.query.search"]
    assert circles(graph) == [["lwc_trio.memory.query.results", "lwc_trio.memory.query.search"]]


def test_a_small_write_never_loads_numpy(tmp_path: Path) -> None:
    """A `lwc page put`, a rewrite and a removal (the writer, its index buffer and flush)
    run without importing numpy: its ~0.1 s import is for bulk writes and large queries."""
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from lwc_trio.memory.index.inputs import PageInput\n"
        "from lwc_trio.memory.index.writer import Wiki\n"
        "from lwc_trio.memory.storage.store import create_store\n"
        "db = Path(sys.argv[1])\n"
        "create_store(db)\n"
        "with Wiki(db) as wiki:\n"
        "    wiki.put_page(PageInput('a', 'A title', 'some body text [[b]]'))\n"
        "    wiki.put_page(PageInput('b', 'Another', 'more text, naïve café'))\n"
        "    wiki.put_page(PageInput('a', 'A title', 'the body changed'))\n"
        "    wiki.remove_page('b')\n"
        "print('numpy' in sys.modules)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "wiki.db")],
        capture_output=True,
        text=True,
        check=True,
        cwd=REPO,
    )
    assert done.stdout.strip() == "False"
