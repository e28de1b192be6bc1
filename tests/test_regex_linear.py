"""Every regular expression in lwc_trio runs in linear time (issue 36; SPEC §4, STYLE).

The patterns are found, not listed: every compiled pattern a module of the package holds
(at module level or in a class), and every `re.compile`/`re.search`/... call in the source
(`ast`), whose constant pattern is compiled here. A call whose pattern is built at run time
must name, in `DYNAMIC`, how to make samples of it; an unknown one fails the test. So a
pattern added later is probed without anyone listing it. How a pattern is probed and why
the measure is not flaky on a loaded machine: `tests/regex_probe.py`.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest
from regex_probe import AnyPattern, superlinear

import lwc_trio
from lwc_trio.memory.query import results

_CALLS = {"compile", "search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"}
_FLAGS_AT = {"compile": 1, "split": 3, "sub": 4, "subn": 4}
"""Where `flags` sits among a call's positional arguments (2 for the others)."""

DYNAMIC: dict[str, Callable[[], list[AnyPattern]]] = {
    # The whole query's words with any separators between them (snippets): words are runs
    # of letters and digits, which `\W+` can never overlap.
    "lwc_trio.memory.query.results:_compiled": lambda: [
        results._compiled(words)
        for words in (("a", "a"), ("a", "b", "a"), ("ab", "b"), ("1", "a1", "a"))
    ],
}
"""Patterns built at run time, by `module:function`, and samples of what they build."""


def _modules() -> list[ModuleType]:
    names = [m.name for m in pkgutil.walk_packages(lwc_trio.__path__, "lwc_trio.")]
    # `__main__` runs the CLI when imported.
    return [lwc_trio, *(importlib.import_module(n) for n in names if not n.endswith("__main__"))]


def _held(module: ModuleType) -> dict[str, AnyPattern]:
    found: dict[str, AnyPattern] = {}
    for name, value in vars(module).items():
        if isinstance(value, re.Pattern):
            found[f"{module.__name__}.{name}"] = value
        elif isinstance(value, type) and value.__module__ == module.__name__:
            for attr, inner in vars(value).items():
                if isinstance(inner, re.Pattern):
                    found[f"{module.__name__}.{name}.{attr}"] = inner
    return found


class _Calls(ast.NodeVisitor):
    """The `re` calls of one module: constant patterns compiled, dynamic ones named."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        self.aliases: set[str] = set()
        self.scopes: list[str] = []
        self.constant: dict[str, AnyPattern] = {}
        self.dynamic: list[str] = []
        self.problems: list[str] = []

    def where(self, node: ast.AST) -> str:
        return f"{self.module.__name__}:{getattr(node, 'lineno', 0)}"

    def visit_Import(self, node: ast.Import) -> None:
        self.aliases.update(a.asname or a.name for a in node.names if a.name == "re")

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.module == "re":
            self.problems.append(f"{self.where(node)}: `from re import`; call `re.X` instead")

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.scopes.append(node.name)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        if not (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id in self.aliases
            and func.attr in _CALLS
        ):
            return
        given = (
            node.args[0]
            if node.args
            else next((k.value for k in node.keywords if k.arg == "pattern"), None)
        )
        if isinstance(given, ast.Constant) and isinstance(given.value, str | bytes):
            flags = self._flags(node, _FLAGS_AT.get(func.attr, 2))
            self.constant[self.where(node)] = re.compile(given.value, flags)
        elif self.scopes:
            self.dynamic.append(f"{self.module.__name__}:{self.scopes[0]}")
        # A module-level compile of a built pattern is a module global: `_held` has it.

    def _flags(self, node: ast.Call, at: int) -> int:
        given = (
            node.args[at]
            if len(node.args) > at
            else next((k.value for k in node.keywords if k.arg == "flags"), None)
        )
        if given is None:
            return 0
        # A flags expression of our own source (`re.M | re.S`), evaluated with `re` only.
        value = eval(
            compile(ast.Expression(given), "<flags>", "eval"), dict.fromkeys(self.aliases, re)
        )
        return int(value)


def _inventory() -> tuple[dict[str, AnyPattern], list[str]]:
    patterns: dict[str, AnyPattern] = {}
    problems: list[str] = []
    for module in _modules():
        patterns.update(_held(module))
        calls = _Calls(module)
        calls.visit(ast.parse(Path(str(module.__file__)).read_text(encoding="utf-8")))
        patterns.update(calls.constant)
        problems += calls.problems
        for name in calls.dynamic:
            if name not in DYNAMIC:
                problems.append(f"{name} builds a pattern at run time: add it to DYNAMIC")
    for name, samples in DYNAMIC.items():
        for i, pattern in enumerate(samples()):
            patterns[f"{name}#{i}"] = pattern
    # One probe per distinct pattern, under its first name.
    distinct: dict[tuple[object, int], str] = {}
    for name in sorted(patterns):
        distinct.setdefault((patterns[name].pattern, patterns[name].flags), name)
    return {name: patterns[name] for name in distinct.values()}, problems


PATTERNS, PROBLEMS = _inventory()


def test_every_pattern_in_the_package_is_found() -> None:
    """The inventory holds the module-level, class-level, inline and run-time patterns
    alike, and no call hides its pattern from it."""
    assert PROBLEMS == []
    assert "lwc_trio.memory.text.links._MDLINK" in PATTERNS  # module level
    assert any(name.startswith("lwc_trio.memory.query.results:_compiled#") for name in PATTERNS)
    assert len(PATTERNS) >= 35


def test_the_source_scan_finds_inline_and_run_time_patterns() -> None:
    """`_Calls` compiles a constant pattern given inline (with its flags), names a pattern
    built at run time inside a function, and refuses `from re import`."""
    source = (
        "import re as rx\n"
        "from re import compile\n"
        "LEVEL = rx.compile('a' + 'b')\n"
        "def scan(text, words):\n"
        "    rx.finditer(r'^x+$', text, rx.MULTILINE)\n"
        "    return rx.sub('|'.join(words), '', text)\n"
    )
    calls = _Calls(ModuleType("lwc_trio.example"))
    calls.visit(ast.parse(source))
    assert [(p.pattern, p.flags & re.MULTILINE) for p in calls.constant.values()] == [
        ("^x+$", re.MULTILINE)
    ]
    assert calls.dynamic == ["lwc_trio.example:scan"]  # the module-level one is a global
    assert len(calls.problems) == 1


# Timed in thread CPU: alone (the serial pass), as three workers on two cores once made a
# linear pattern's quarter-length run look 8× cheaper than the full one.
@pytest.mark.serial
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_pattern_is_linear_on_long_adversarial_lines(name: str) -> None:
    """The pattern's cost grows linearly with the length of lines made of its own
    characters, up to 64 KiB (the probe's method: tests/regex_probe.py)."""
    assert superlinear(PATTERNS[name]) == []


@pytest.mark.parametrize(
    "pattern",
    [
        r"^ {0,3}(#{1,6})[ \t]+(.+?)[ \t#]*$",  # issue 36 item 3: the old heading
        r"\]\(\s*(?:<([^>\n]*)>|([^)\s]+))(?:\s+[\"'(][^)\n]*)?\s*\)",  # item 8: old links
        r"`(`*)[^\n]+?`\1",  # the old inline code span (cubic on a line of backticks)
        r"(a+)+b",  # exponential
    ],
)
def test_the_probe_catches_superlinear_patterns(pattern: str) -> None:
    """The probe fails the quadratic, cubic and exponential patterns it exists for, so the
    test above can fail."""
    assert superlinear(re.compile(pattern), most=1) != []
