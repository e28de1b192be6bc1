"""Code answers carry code (issue 37): source lines in `lwc_explore`'s code answers.

    scripts/bench code-answers [--json] [--binary PATH] [--keep]

The corpus is a real public repository as a user's checkout holds it: **FastAPI 0.115.12**, its
sdist from PyPI (`pip download`, pinned and verified by sha256, kept in `.cache/bench/`), which
ships the package with its tutorial sources (`docs_src/`) and its tests: 1,150 files, 1,130 of
them Python. It is unpacked into a temporary workspace, given a project Wiki (`lwc init`, and
the sdist's README split at its `##` headings imported as Pages, so that memory takes its share
in mode `all`) and a CodeGraph index through `lwc --scope project cg init`.

Twelve questions an agent typically asks about such a code base are asked twice:

* **direct** — the runtime's own `codegraph serve --mcp` (the environment lwc gives its child):
  what CodeGraph sent, and how many source lines it held;
* **lwc** — one warm `lwc serve --mcp` over stdio, in modes `code` and `all`, at the default
  budget and at `maxTokens` 20,000.

A *source line* is a line CodeGraph numbers (`N<TAB>...`) inside a file section (after a
`` **`path`** `` header), counted in the code text of each ready answer. Reported per answer:
source lines, text characters, `truncated`, the number of `files`.

Target: every ready answer carries at least 20 source lines when CodeGraph's own answer held
any, in both modes and at both budgets; no ready answer has an empty `text`.
Exit 0 when the target is met, 1 when it is missed, 2 on a set-up error.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from benchmarks.fixtures import REPO, find_binary, lwc_argv, scratch
from benchmarks.scenarios.code import INIT_PARAMS, Session
from benchmarks.scenarios.code_corpus import SetupError, run_lwc_cli
from benchmarks.table import machine, machine_line, markdown_table
from lwc_trio.codegraph.runtime import BINARY_ENV, binary_in, child_env, locate_binary

PROJECT: Final = "fastapi"
VERSION: Final = "0.115.12"
SHA256: Final = "1e2c2a2646905f9e83d32f04a3f86aff4a286669c6c950ca95b5fd68c2602681"
CACHE: Final = REPO / ".cache" / "bench"
MAX_FILES: Final = 12
LARGE_TOKENS: Final = 20_000
MIN_SOURCE_LINES: Final = 20
QUESTIONS: Final = (
    "How does dependency injection resolve Depends parameters?",
    "Where is the request body validated against the Pydantic model?",
    "How is the OpenAPI schema generated for the routes?",
    "How does include_router merge the routes of an APIRouter?",
    "How are exception handlers registered and how is HTTPException handled?",
    "How does OAuth2PasswordBearer get the token from the request?",
    "How are background tasks run after the response is sent?",
    "How does routing work for WebSocket endpoints?",
    "How does response_model filter the data a path operation returns?",
    "How are UploadFile and form fields parsed from a multipart request?",
    "How do I add CORS middleware to the application?",
    "Where are the path operation decorators like app.get defined?",
)
RUNS: Final = (("code", None), ("code", LARGE_TOKENS), ("all", None), ("all", LARGE_TOKENS))
"""(mode, maxTokens) of each lwc call; None is the tool's default budget."""

_HEADER = re.compile(r"\*\*`[^`\n]+`\*\*")
_NUMBERED = re.compile(r"\d+\t")


def log(message: str) -> None:
    print(f"[bench code-answers] {message}", file=sys.stderr, flush=True)


def source_lines(text: str) -> int:
    """Lines CodeGraph numbers (`N<TAB>...`) that sit inside a file section."""
    count, inside = 0, False
    for line in text.split("\n"):
        if _HEADER.match(line):
            inside = True
        elif inside and _NUMBERED.match(line):
            count += 1
    return count


def fetch_sdist(cache: Path) -> Path:
    """The pinned sdist, downloaded with pip from the package registry unless cached; its
    sha256 checked either way (pip checks it too: `--require-hashes`)."""
    name = f"{PROJECT}-{VERSION}.tar.gz"
    path = cache / name
    if not path.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        requirement = cache / "requirement.txt"
        requirement.write_text(f"{PROJECT}=={VERSION} --hash=sha256:{SHA256}\n")
        log(f"downloading {name} with pip")
        done = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--no-binary", ":all:", "--require-hashes", "-r", str(requirement),
             "-d", str(cache)],
            capture_output=True, text=True, timeout=600, check=False,
        )  # fmt: skip
        if done.returncode != 0 or not path.is_file():
            raise SetupError(f"pip download {PROJECT}=={VERSION} failed: {done.stderr[-800:]}")
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != SHA256:
        raise SetupError(f"{path}: sha256 {digest}, expected {SHA256}; delete it and rerun")
    return path


def unpack(sdist: Path, workspace: Path) -> Path:
    """The sdist unpacked into `workspace`; the project folder."""
    with tarfile.open(sdist) as archive:
        archive.extractall(workspace, filter="data")
    project = workspace / f"{PROJECT}-{VERSION}"
    if not project.is_dir():
        raise SetupError(f"{sdist} holds no {project.name}/ folder")
    return project


def readme_pages(project: Path) -> list[dict[str, str]]:
    """The README split at its `## ` headings, one Page each (the part before the first heading
    is the introduction)."""
    text = (project / "README.md").read_text(encoding="utf-8")
    parts = re.split(r"(?m)^## ", text)
    pages = []
    for n, part in enumerate(parts):
        title = "Introduction" if n == 0 else part.split("\n", 1)[0].strip().strip("*")
        body = part if n == 0 else "## " + part
        slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or f"part-{n}"
        pages.append({"slug": f"readme-{slug}", "title": title, "body": body.strip() + "\n"})
    return pages


def build(project: Path, env: dict[str, str]) -> dict[str, Any]:
    """Wiki with the README Pages, and the CodeGraph index."""
    files = sum(len(names) for _root, _dirs, names in os.walk(project))
    run_lwc_cli(["init", "--no-git-exclude"], project, env, 60)
    jsonl = project.parent / "readme-pages.jsonl"
    pages = readme_pages(project)
    jsonl.write_text("".join(json.dumps(p) + "\n" for p in pages), encoding="utf-8")
    run_lwc_cli(["page", "import", str(jsonl)], project, env, 120)
    started = time.perf_counter()
    out = run_lwc_cli(["--scope", "project", "cg", "init", str(project)], project, env, 900)
    if out["index"].get("state") != "ready":
        raise SetupError(f"index not ready: {out}")
    seconds = time.perf_counter() - started
    log(f"{files} files, {len(pages)} README Pages, indexed in {seconds:.1f} s")
    return {"files": files, "pages": len(pages), "index_seconds": round(seconds, 1)}


def _text_of(result: dict[str, Any]) -> str:
    blocks = result.get("content") or []
    return "\n".join(b["text"] for b in blocks if b.get("type") == "text")


def direct_texts(project: Path, binary: Path, env: dict[str, str]) -> list[str]:
    """CodeGraph's own answer to each question (`codegraph serve`, as lwc starts it)."""
    argv = [str(binary), "serve", "--mcp", "--no-watch", "--path", str(project)]
    session = Session(argv, cwd=project, env=child_env(env))
    session.handshake(dict(INIT_PARAMS, protocolVersion="2024-11-05"))
    texts = []
    try:
        for question in QUESTIONS:
            arguments = {"query": question, "maxFiles": MAX_FILES, "projectPath": str(project)}
            reply, _s, _n = session.request(
                "tools/call", {"name": "codegraph_explore", "arguments": arguments}
            )
            result = reply.get("result") or {}
            if result.get("isError"):
                raise SetupError(f"CodeGraph refused {question!r}: {json.dumps(reply)[:500]}")
            texts.append(_text_of(result))
    finally:
        session.close()
    return texts


def lwc_answers(workspace: Path, project: Path, env: dict[str, str]) -> list[list[Any]]:
    """`codeGraph` of each question (rows) in each of RUNS (columns), through lwc serve."""
    argv = [*lwc_argv(), "serve", "--mcp", "--path", str(workspace), "--code-timeout", "60"]
    session = Session(argv, cwd=workspace, env=env)
    session.handshake(INIT_PARAMS)
    rows: list[list[Any]] = []
    try:
        for question in QUESTIONS:
            row = []
            for mode, tokens in RUNS:
                arguments: dict[str, Any] = {
                    "query": question, "projectPath": str(project), "mode": mode,
                    "maxFiles": MAX_FILES,
                }  # fmt: skip
                if tokens is not None:
                    arguments["maxTokens"] = tokens
                reply, _s, size = session.request(
                    "tools/call", {"name": "lwc_explore", "arguments": arguments}
                )
                structured = (reply.get("result") or {}).get("structuredContent") or {}
                code = dict(structured.get("codeGraph") or {"state": "missing"})
                code["block_bytes"] = size
                row.append(code)
            rows.append(row)
    finally:
        session.close()
    return rows


def figure(code: dict[str, Any]) -> dict[str, Any]:
    """What the report keeps of one `codeGraph` object."""
    if code.get("state") != "ready":
        error = code.get("error") or {}
        return {"state": code.get("state"), "code": error.get("code")}
    text = code["text"]
    return {
        "state": "ready",
        "source_lines": source_lines(text),
        "chars": len(text),
        "truncated": code["truncated"],
        "files": code["files"],
    }


def verdicts(report: dict[str, Any]) -> list[str]:
    """Every way an answer misses the target (empty when all pass)."""
    misses = []
    for n, q in enumerate(report["questions"], 1):
        for run, got in zip(report["runs"], q["lwc"], strict=True):
            if got["state"] != "ready":
                continue
            if got["chars"] == 0:
                misses.append(f"q{n} {run}: empty text")
            elif q["codegraph_lines"] > 0 and got["source_lines"] < MIN_SOURCE_LINES:
                misses.append(f"q{n} {run}: {got['source_lines']} source lines")
    return misses


def cell(got: dict[str, Any]) -> str:
    if got["state"] != "ready":
        return f"{got['state']} {got.get('code') or ''}".strip()
    cut = " cut" if got["truncated"] else ""
    return f"{got['source_lines']} / {got['chars']:,}{cut} / {len(got['files'])}"


def markdown(report: dict[str, Any]) -> str:
    headers = ["#", "question", "CodeGraph lines / chars", *report["runs"]]
    rows = [
        [n, q["question"], f"{q['codegraph_lines']} / {q['codegraph_chars']:,}",
         *(cell(got) for got in q["lwc"])]
        for n, q in enumerate(report["questions"], 1)
    ]  # fmt: skip
    lines = [
        f"code-answers: {PROJECT} {VERSION} ({report['corpus']['files']:,} files), "
        f"{len(QUESTIONS)} questions, maxFiles {MAX_FILES}; each lwc cell: source lines / "
        "text characters (cut = truncated) / files",
        "",
        markdown_table(headers, rows, "rl"),
        "",
        machine_line(report["machine"]),
    ]
    misses = report["misses"]
    lines.append(
        "target (>= 20 source lines when CodeGraph sent any, no empty text): "
        + ("met" if not misses else "MISSED: " + "; ".join(misses))
    )
    return "\n".join(lines)


def default_binary() -> Path | None:
    """--binary, $LWC_CODEGRAPH_BINARY, $LWC_TEST_CODEGRAPH_BINARY, the checkout's test copy
    (`.cache/codegraph/`, as scripts/test.sh installs it), or `lwc cg install`'s."""
    given = find_binary(None)
    if given:
        return Path(given)
    cached = binary_in(REPO / ".cache" / "codegraph")
    if cached is not None and cached.is_file():
        return cached
    return locate_binary(os.environ)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="bench code-answers", description=__doc__.split("\n")[0])
    parser.add_argument("--binary", help=f"CodeGraph 1.6.1 binary (default ${BINARY_ENV}, ...)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace")
    args = parser.parse_args(argv)
    binary = Path(args.binary) if args.binary else default_binary()
    if binary is None or not (binary.is_file() and os.access(binary, os.X_OK)):
        print(f"no CodeGraph binary (--binary or ${BINARY_ENV}): {binary}", file=sys.stderr)
        return 2
    runs = [f"{mode} {tokens or 'default'}" for mode, tokens in RUNS]
    report: dict[str, Any] = {
        "command": "scripts/bench code-answers",
        "machine": machine(),
        "binary": str(binary),
        "runs": runs,
    }
    began = time.perf_counter()
    with scratch("lwc-bench-code-answers-", keep=args.keep, who="code-answers") as tmp:
        workspace, home = tmp / "ws", tmp / "home"
        workspace.mkdir()
        home.mkdir()
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
            "PYTHONPATH": str(REPO),
            BINARY_ENV: str(binary),
        }
        try:
            project = unpack(fetch_sdist(CACHE), workspace)
            report["corpus"] = build(project, env)
            texts = direct_texts(project, binary, env)
        except (SetupError, subprocess.TimeoutExpired, OSError, RuntimeError) as exc:
            log(f"setup failed: {exc}")
            return 2
        log("asking through lwc serve --mcp")
        answers = lwc_answers(workspace, project, env)
    report["questions"] = [
        {
            "question": question,
            "codegraph_lines": source_lines(text),
            "codegraph_chars": len(text),
            "lwc": [figure(code) for code in row],
        }
        for question, text, row in zip(QUESTIONS, texts, answers, strict=True)
    ]
    report["misses"] = verdicts(report)
    report["pass"] = not report["misses"]
    report["seconds"] = round(time.perf_counter() - began, 1)
    report["machine"]["loadavg_at_end"] = [round(x, 2) for x in os.getloadavg()]
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(markdown(report))
    return 0 if report["pass"] else 1
