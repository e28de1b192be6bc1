"""Fixtures: private environments, workspaces and Wikis built with the real `lwc` CLI.

`Fixture` is the big one (soak, fault matrix, shutdown): a temporary HOME and workspace with
a project Wiki of generated Pages written one by one with `lwc page put`, and optionally the
CodeGraph index of a copy of the `lwc_trio` sources. `small_wiki` is the one-Page Wiki the
transport and HTTP scenarios search. Every lwc process gets a private HOME, so no global Wiki
of the user leaks into (or is touched by) a run.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Final

REPO: Final = Path(__file__).resolve().parents[1]
BINARY_ENV: Final = "LWC_CODEGRAPH_BINARY"
LIVE_PAGES: Final = 16
"""Pages the soak's background writes rotate over."""
SMALL_QUERY: Final = "login tokens"
"""A query `small_wiki`'s one Page answers."""

Log = Callable[[str], None]

_WORD_TEXT = """
anchor atlas beacon binder cache canvas cipher cluster compass crystal delta docket ember
engine falcon fathom filter fjord galaxy garnet glacier harbor helix horizon index iris
jasper journal kernel keystone lantern ledger lumen magnet matrix meadow nebula needle
nimbus oracle orbit osprey packet pebble pilot prism quartz quill radar raven relay ribbon
saddle schema signal socket spiral summit tablet tandem thistle timber tunnel umbra vector
velvet vertex voyage walnut willow window zenith zephyr migration rollback deadline
scheduler tokenizer allocator checksum manifest registry pipeline snapshot watchdog
heartbeat throttle backoff quorum replica shard ingest
"""
WORDS = tuple(_WORD_TEXT.split())
CODE_QUERIES: Final = (
    "cancel scope deadline timeout",
    "parse a JSON-RPC message envelope",
    "sqlite read-only connection progress handler",
    "fault injection script plan",
    "authorize project path symlink",
    "line framer frame limit oversize",
    "restart crashed plane worker",
    "kill process group and reap child",
    "BM25 search ranking fields",
    "page body truncation budget",
    "tokenize CJK bigrams stop words",
    "http request body limit",
)
"""Queries the lwc_trio sources answer (code mode)."""


def run_module(
    module: str, args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float
) -> subprocess.CompletedProcess[str]:
    """`python -m MODULE ARGS` with stdin closed and its text output captured, any exit code."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def lwc_cli(args: Sequence[str], env: dict[str, str], cwd: Path, timeout: float = 600) -> Any:
    """Run `python -m lwc_trio ARGS`; its JSON output (raises on failure)."""
    proc = run_module("lwc_trio", args, env, cwd, timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"lwc {' '.join(args)} exited {proc.returncode}: {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def page_text(rng: random.Random, index: int, pages: int) -> tuple[str, str, str]:
    """(title, summary, body) for generated page `index`."""
    title = " ".join(rng.sample(WORDS, 3)).title() + f" {index}"
    summary = " ".join(rng.sample(WORDS, 8))
    paragraphs = [
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))) + "."
        for _ in range(rng.randint(2, 5))
    ]
    links = {rng.randrange(pages) for _ in range(rng.randint(0, 4))} - {index}
    paragraphs.append(" ".join(f"See [[p-{n:04d}]]." for n in sorted(links)))
    return title, summary, f"# {title}\n\n" + "\n\n".join(paragraphs) + "\n"


def marker(n: int) -> str:
    """The unique search word of live write number `n`."""
    return f"soakmark{n:05d}x"


def live_write(n: int) -> tuple[str, str, str]:
    """(slug, title, body) of live write number `n`: one of LIVE_PAGES pages, a new marker."""
    rng = random.Random(f"live-{n}")
    slug = f"live-{n % LIVE_PAGES:02d}"
    body = (
        f"# Live page {n % LIVE_PAGES}\n\n"
        + " ".join(rng.choice(WORDS) for _ in range(40))
        + f" {marker(n)} "
        + " ".join(rng.choice(WORDS) for _ in range(20))
        + ".\n"
    )
    return slug, f"Live page {n % LIVE_PAGES}", body


class Fixture:
    """A temporary HOME and workspace with a project Wiki and, optionally, a CodeGraph index."""

    def __init__(self, root: Path, binary: str | None, source: Path | None = None) -> None:
        self.root = root
        self.home = root / "home"
        self.ws = root / "ws"
        self.outside = root / "outside"  # an existing directory outside the workspace
        self.binary = binary
        self.revision = 0
        self.lwc = [sys.executable, "-m", "lwc_trio"]
        """The command that runs lwc (scripts may point it at an installed `lwc`)."""
        self.home.mkdir(parents=True, exist_ok=True)
        self.ws.mkdir(parents=True, exist_ok=True)
        self.outside.mkdir(parents=True, exist_ok=True)
        self.ws = self.ws.resolve()
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.home),
            "LANG": "C.UTF-8",
            # Every lwc process (server and CLI writes) runs this source tree: a frozen copy
            # (--source) keeps a long run on one version while the checkout changes.
            "PYTHONPATH": str(source or REPO),
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        if binary:
            self.env[BINARY_ENV] = binary

    @property
    def has_code(self) -> bool:
        return self.binary is not None

    def build(self, pages: int, seed: int, log: Log | None = None) -> None:
        """`lwc init`, `pages` × `lwc page put`, the live pages, and the CodeGraph index."""
        lwc_cli(["init", "--no-git-exclude"], self.env, self.ws)
        rng = random.Random(seed)
        body_file = self.root / "body.md"
        started = time.perf_counter()
        for i in range(pages):
            title, summary, body = page_text(rng, i, pages)
            body_file.write_text(body)
            out = lwc_cli(
                [
                    "page",
                    "put",
                    f"p-{i:04d}",
                    "--title",
                    title,
                    "--summary",
                    summary,
                    "--file",
                    str(body_file),
                ],
                self.env,
                self.ws,
            )
            self.revision = out["revision"]
        if log:
            log(f"{pages} pages written with `page put` in {time.perf_counter() - started:.1f} s")
        (self.ws / "src").mkdir(exist_ok=True)
        if self.binary:
            shutil.copytree(
                REPO / "lwc_trio",
                self.ws / "src" / "lwc_trio",
                ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
                dirs_exist_ok=True,
            )
            t0 = time.perf_counter()
            lwc_cli(["--scope", "project", "cg", "init", str(self.ws)], self.env, self.ws)
            if log:
                log(f"CodeGraph index built in {time.perf_counter() - t0:.1f} s")

    def write_args(self, n: int) -> tuple[list[str], str, str, str]:
        """argv for live write `n` (its body file written now), plus slug, marker, body."""
        slug, title, body = live_write(n)
        path = self.root / f"live-{n % 4}.md"
        path.write_text(body)
        argv = [sys.executable, "-m", "lwc_trio", "page", "put", slug, "--title", title]
        return [*argv, "--file", str(path)], slug, marker(n), body

    def serve_argv(self, extra: Sequence[str] = ()) -> list[str]:
        return [*self.lwc, "serve", "--mcp", "--path", str(self.ws), *extra]


def find_binary(given: str | None) -> str | None:
    """The CodeGraph binary: `given`, then $LWC_CODEGRAPH_BINARY, then the test variable."""
    for value in (given, os.environ.get(BINARY_ENV), os.environ.get("LWC_TEST_CODEGRAPH_BINARY")):
        if value:
            return value
    return None


def lwc_argv() -> list[str]:
    """The command that starts lwc: the console script next to this interpreter (what hosts
    start), else `python -m lwc_trio`."""
    script = Path(sys.executable).parent / "lwc"
    if not script.exists():
        found = shutil.which("lwc")
        script = Path(found) if found else script
    return [str(script)] if script.exists() else [sys.executable, "-m", "lwc_trio"]


def private_env(home: Path, *, inherit: bool = False) -> dict[str, str]:
    """An environment with HOME = `home` and PYTHONPATH = this checkout.

    `inherit`: start from this process's environment (minus LWC_* variables) instead of only
    PATH and LANG.
    """
    if inherit:
        env = {k: v for k, v in os.environ.items() if not k.startswith("LWC_")}
    else:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
    env["HOME"] = str(home)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return env


def small_wiki(root: Path, env: dict[str, str], timeout: float = 60.0) -> Path:
    """`root/ws`: an initialized project Wiki holding one Page that SMALL_QUERY finds."""
    workspace = root / "ws"
    workspace.mkdir()
    page = root / "auth.md"
    page.write_text(
        "# Auth flow\n\nLogin uses short-lived access tokens; refresh tokens rotate on use.\n"
    )
    put = ["page", "put", "auth-flow", "--title", "Auth flow", "--file", str(page)]
    lwc_cli(["init"], env, workspace, timeout)
    lwc_cli([*put, "--summary", "How login and tokens work"], env, workspace, timeout)
    return workspace


SHARED_WIKI_PAGES: Final = 60


def shared_wiki(root: Path, env: dict[str, str], timeout: float = 60.0) -> Path:
    """`root/ws`: the small Wiki's auth Page plus generated Pages, about 60 in all (issue 11).

    Big enough that every search does real ranking work, small enough that the serving stack,
    not SQLite, dominates a call: what the transport and HTTP scenarios compare servers on.
    """
    workspace = small_wiki(root, env, timeout)
    rng = random.Random(11)
    rows = []
    for i in range(SHARED_WIKI_PAGES - 1):
        title, summary, body = page_text(rng, i, SHARED_WIKI_PAGES - 1)
        rows.append({"slug": f"p-{i:04d}", "title": title, "summary": summary, "body": body})
    pages = root / "pages.jsonl"
    pages.write_text("".join(json.dumps(row) + "\n" for row in rows))
    lwc_cli(["page", "import", str(pages)], env, workspace, timeout)
    return workspace


@contextlib.contextmanager
def scratch(prefix: str, *, keep: bool = False, who: str = "bench") -> Iterator[Path]:
    """A temporary directory for one run, removed afterwards unless `keep` (then its path is
    printed to stderr)."""
    root = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield root
    finally:
        if keep:
            print(f"{who}: kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


def logger(tag: str, *, quiet: bool = False) -> Log:
    """A progress logger writing `[tag] text` to stderr (nothing when `quiet`, e.g. --json)."""

    def log(text: str) -> None:
        if not quiet:
            print(f"[{tag}] {text}", file=sys.stderr, flush=True)

    return log
