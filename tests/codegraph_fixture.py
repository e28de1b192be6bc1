"""A project whose CodeGraph answers have a long file section, and a recorder for those answers.

CodeGraph 1.6.1 sizes its explore answer by the project's file count: below 500 files it stays
near 13,000 characters with no relationship lists; from 500 files on it may send 24,000, one
file section up to 70 % of that, and the blast radius and relationship lists in front. The
project is therefore 520 one-function modules (what makes it that size) plus:

- `pkg/ledger.py`: one class of 120 short methods (~32,000 characters), which CodeGraph sends
  as one file section of about 15,000 characters after a head of lists (`LEDGER_QUERY`);
- `pkg/blob.py`: a function returning one 15,000-character string literal, a source line
  longer than the 15,000-character cap (`BLOB_QUERY`);
- `app.py`: calls into both, so the lists have edges.

`tests/data/codegraph/*.md` are the real runtime's answers on this project, recorded with
`python tests/codegraph_fixture.py BINARY` (CodeGraph 1.6.1's platform binary); the sans-IO
tests cut them, and `test_codegraph_answers_real.py` asks the live runtime the same questions.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Final

from lwc_trio.codegraph.runtime import child_env, init_env

DATA: Final = Path(__file__).resolve().parent / "data" / "codegraph"
LEDGER_QUERY: Final = "How does LedgerReconciler reconcile the ledger step by step?"
BLOB_QUERY: Final = "blob_payload"
RECORDINGS: Final = {"long_section.md": LEDGER_QUERY, "long_line.md": BLOB_QUERY}
"""Recorded answer file -> the question it answers."""
UTILS: Final = 520


def write_project(root: Path) -> None:
    """The project described in the module docstring, under `root`."""
    pkg = root / "pkg"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for i in range(UTILS):
        (pkg / f"util_{i:03d}.py").write_text(
            f"def helper_{i:03d}(x: int) -> int:\n    return x + {i}\n"
        )
    steps = "\n".join(
        f"    def step_{i:03d}(self, value: int) -> int:\n"
        f'        """Step {i} of the ledger reconciliation: fold value into the balance."""\n'
        f"        adjusted = value * {i + 3} + self.balance\n"
        f'        self.history.append(("step_{i:03d}", adjusted))\n'
        "        return self.settle(adjusted)\n"
        for i in range(120)
    )
    (pkg / "ledger.py").write_text(
        "class LedgerReconciler:\n"
        '    """Reconciles ledger entries step by step."""\n\n'
        "    def __init__(self) -> None:\n"
        "        self.balance = 0\n"
        "        self.history: list[tuple[str, int]] = []\n\n"
        "    def settle(self, amount: int) -> int:\n"
        "        self.balance = amount % 1_000_003\n"
        "        return self.balance\n\n" + steps
    )
    digits = "".join(f"{i:05d}" for i in range(3000))
    (pkg / "blob.py").write_text(
        f'def blob_payload() -> str:\n    return "{digits}"\n\n\n'
        "def use_blob() -> int:\n    return len(blob_payload())\n"
    )
    (root / "app.py").write_text(
        "from pkg.blob import use_blob\n"
        "from pkg.ledger import LedgerReconciler\n\n\n"
        "def main() -> int:\n"
        "    reconciler = LedgerReconciler()\n"
        "    return reconciler.step_000(1) + reconciler.step_119(2) + use_blob()\n"
    )


def _base_env(root: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(root.parent), "LANG": "C.UTF-8"}


def _explore(binary: str, root: Path, queries: list[str]) -> list[str]:
    """The runtime's `codegraph_explore` text for each query (one `serve` child, started as
    lwc starts it)."""
    env = child_env(_base_env(root))
    argv = [binary, "serve", "--mcp", "--no-watch", "--path", str(root)]
    lines = [{"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                         "clientInfo": {"name": "record", "version": "1"}}},
             {"jsonrpc": "2.0", "method": "notifications/initialized"}]  # fmt: skip
    for n, query in enumerate(queries, 1):
        arguments = {"query": query, "maxFiles": 12, "projectPath": str(root)}
        lines.append({"jsonrpc": "2.0", "id": n, "method": "tools/call",
                      "params": {"name": "codegraph_explore", "arguments": arguments}})  # fmt: skip
    stdin = "".join(json.dumps(line) + "\n" for line in lines)
    done = subprocess.run(argv, cwd=root, env=env, input=stdin, capture_output=True,
                          text=True, timeout=300, check=True)  # fmt: skip
    replies = {r.get("id"): r for r in map(json.loads, done.stdout.splitlines())}
    return ["\n".join(b["text"] for b in replies[n]["result"]["content"]) for n in
            range(1, len(queries) + 1)]  # fmt: skip


def record(binary: str) -> None:
    """Index a fresh copy of the project with `codegraph init` and rewrite the recordings."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ledger"
        write_project(root)
        subprocess.run([binary, "init", "--yes", str(root)], cwd=root, env=init_env(_base_env(root)),
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=True)  # fmt: skip
        texts = _explore(binary, root, list(RECORDINGS.values()))
    DATA.mkdir(parents=True, exist_ok=True)
    for name, text in zip(RECORDINGS, texts, strict=True):
        (DATA / name).write_text(text, encoding="utf-8")
        print(f"{name}: {len(text)} characters")


if __name__ == "__main__":
    record(sys.argv[1])
