"""The README's demo: build a small Wiki from docs/, then query it through a real MCP session.

Everything happens in a temporary workspace and a temporary $HOME, so the demo
reads and writes nothing of yours. Run it with `./scripts/demo.sh`.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import trio
from mcp import Client, StdioServerParameters

REPO = Path(__file__).resolve().parents[1]
QUERIES = ("how is a request cancelled", "plane isolation fault injection")
# About the code as it is: how a plane call keeps its deadline (actors/planes.py,
# codegraph/plane.py), and how the supervisor restarts a crashed plane worker.
CODE_QUERY = "explore plane deadline"
ALL_QUERY = "supervisor restarts crashed worker"


def lwc(env: dict[str, str], cwd: Path, *args: str) -> Any:
    """Run one `lwc` CLI command (the write side), failing loudly."""
    proc = subprocess.run(
        [sys.executable, "-m", "lwc_trio", *args, "--json"],
        cwd=cwd, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"lwc {' '.join(args)} failed: {proc.stderr.strip()}")
    return json.loads(proc.stdout) if proc.stdout.strip() else None


def codegraph_binary() -> str | None:
    """The CodeGraph runtime if one is installed here (never installs anything)."""
    if os.environ.get("LWC_CODEGRAPH_BINARY"):
        return os.environ["LWC_CODEGRAPH_BINARY"]
    from lwc_trio.codegraph.runtime import locate_binary

    found = locate_binary(os.environ)
    if found is not None:
        return str(found)
    cached = sorted((REPO / ".cache" / "codegraph" / "node_modules" / "@colbymchenry").glob(
        "codegraph-*/bin/codegraph"
    ))  # fmt: skip
    return str(cached[0]) if cached else None


def title_and_summary(text: str, fallback: str) -> tuple[str, str]:
    """A page title from the first heading, a summary from the first paragraph."""
    heading = re.search(r"^#\s+(.+)$", text, re.MULTILINE)
    paragraphs = [p.strip() for p in re.split(r"\n\s*\n", text) if p.strip()]
    summary = next((p for p in paragraphs if not p.startswith(("#", "```", "|", "-"))), "")
    return (heading.group(1).strip() if heading else fallback), " ".join(summary.split())[:300]


def build_wiki(workspace: Path, env: dict[str, str]) -> int:
    """One Page per docs/*.md, through the real CLI; returns the page count."""
    lwc(env, workspace, "init", "--no-git-exclude")
    count = 0
    for doc in sorted((REPO / "docs").glob("*.md")):
        text = doc.read_text(encoding="utf-8")
        title, summary = title_and_summary(text, doc.stem)
        args = ["page", "put", doc.stem.lower(), "--title", title, "--file", str(doc)]
        lwc(env, workspace, *args, *(["--summary", summary] if summary else []))
        count += 1
    lwc(env, workspace, "config", "set", "--graph", "enabled")
    lwc(env, workspace, "graph", "build")
    return count


def show(title: str, result: Any) -> None:
    data = result.structured_content or {}
    print(f"\n── {title}  (isError={result.is_error})")
    memory, code = data.get("memory", {}), data.get("codeGraph", {})
    if memory.get("state") == "ready":
        print(f"   memory: ready, {len(memory['results'])} result(s)")
        for item in memory["results"][:5]:
            print(f"     {item['rank']:>12.6g}  {item['identifier']:<22} {item['title']}")
        graph = next((g for g in memory["graph"] if "seed" in g), None)
        if graph:
            names = [n["identifier"] for n in graph["neighborhood"]["nodes"]]
            print(f"   graph neighbourhood of {graph['seed']}: {', '.join(names)}")
    elif memory.get("state") != "not_requested":
        print(f"   memory: {memory.get('state')} {memory.get('error')}")
    if code.get("state") == "ready":
        print(f"   code: ready, files: {', '.join(code['files'][:6])}")
    elif code.get("state") != "not_requested":
        hint = code.get("nextAction", {}).get("command")
        print(f"   code: {code.get('state')} — {code.get('error', {}).get('message')}"
              + (f"\n         next step for the user: `{hint}`" if hint else ""))  # fmt: skip
    if "partial" in data:
        print(f"   partial: {data['partial']}, timings: {data['timings']}")


async def session(workspace: Path, env: dict[str, str]) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "lwc_trio", "serve", "--mcp", "--path", str(workspace)],
        env=env,
        cwd=str(workspace),
    )
    async with Client(params) as client:
        info = client.server_info
        print(f"\nConnected to {info.name if info else '?'} {info.version if info else ''}"
              f" (protocol {client.protocol_version})")  # fmt: skip
        tools = (await client.list_tools()).tools
        print(f"Tools: {', '.join(t.name for t in tools)}")
        for query in QUERIES:
            result = await client.call_tool(
                "lwc_explore", {"query": query, "projectPath": str(workspace)}
            )
            show(f"memory: {query!r}", result)
        code = await client.call_tool(
            "lwc_explore", {"query": CODE_QUERY, "projectPath": str(workspace), "mode": "code"}
        )
        show(f"code: {CODE_QUERY!r}", code)
        both = await client.call_tool(
            "lwc_explore",
            {"query": ALL_QUERY, "projectPath": str(workspace), "mode": "all", "maxFiles": 5},
        )
        show(f"all: {ALL_QUERY!r}", both)


def main() -> None:
    root = Path(tempfile.mkdtemp(prefix="lwc-demo-"))
    try:
        workspace, home = root / "project", root / "home"
        home.mkdir()
        shutil.copytree(REPO / "lwc_trio", workspace / "lwc_trio",
                        ignore=shutil.ignore_patterns("__pycache__"))  # fmt: skip
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home),
               "LANG": os.environ.get("LANG", "C.UTF-8")}  # fmt: skip
        binary = codegraph_binary()
        if binary:
            env["LWC_CODEGRAPH_BINARY"] = binary
        pages = build_wiki(workspace, env)
        print(f"Built a Wiki of {pages} pages from docs/ in {workspace}")
        if binary:
            print("Indexing the project's code with CodeGraph (lwc --scope project cg init)…")
            lwc(env, workspace, "--scope", "project", "cg", "init", str(workspace))
        else:
            print("No CodeGraph runtime here: code mode will show the guidance a host gets.")
        trio.run(session, workspace, env)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
