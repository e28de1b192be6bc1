"""`lwc explore QUERY`: the tool's own pipeline, run once from the command line.

The same actors (authorizer, plane workers) and the same result JSON as
`lwc_explore`, so what a person sees here is exactly what an agent gets.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from lwc_trio import __version__
from lwc_trio.cli.options import Bounded, common_options, examples
from lwc_trio.cli.output import emit, fail, style, wants_json
from lwc_trio.config import ServerConfig
from lwc_trio.faults import FaultPlan
from lwc_trio.protocol.tool import (
    DEFAULT_MAX_DOCUMENTS,
    DEFAULT_MAX_FILES,
    DEFAULT_MAX_TOKENS,
    LIMIT_MAX,
    LIMIT_MIN,
    MAX_TOKENS_MAX,
    MAX_TOKENS_MIN,
)

SCOPES = {"project": frozenset({"project"}), "global": frozenset({"global"})}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `explore` to the command tree."""
    # Like the tool, explore reads every store unless --scope narrows it.
    p = sub.add_parser(
        "explore", parents=[common_options("all")], help="run lwc_explore once and print it",
        description="Run the lwc_explore tool once, with the server's own pipeline, and print "
        "exactly what an agent would get (exit 0 whenever it prints a result).",
        epilog=examples("lwc explore 'how does login work'",
                        "lwc explore 'session store' --mode all --max-files 5"),
    )  # fmt: skip
    p.add_argument("query", help="what to look for, in words")
    p.add_argument(
        "--mode", choices=("memory", "code", "all"), default="memory",
        help="memory (the Wiki), code (CodeGraph) or all (default: %(default)s)",
    )  # fmt: skip
    # The tool checks these bounds and answers with its own invalid_arguments error.
    p.add_argument(
        "--max-documents", type=Bounded(LIMIT_MIN, LIMIT_MAX, enforce=False),
        default=DEFAULT_MAX_DOCUMENTS, metavar="N",
        help=f"Wiki results ({LIMIT_MIN}–{LIMIT_MAX}; default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--max-files", type=Bounded(LIMIT_MIN, LIMIT_MAX, enforce=False),
        default=DEFAULT_MAX_FILES, metavar="N",
        help=f"code files ({LIMIT_MIN}–{LIMIT_MAX}; default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--max-tokens", type=Bounded(MAX_TOKENS_MIN, MAX_TOKENS_MAX, enforce=False),
        default=DEFAULT_MAX_TOKENS, metavar="N",
        help=f"the answer's size budget in estimated tokens, the tool's maxTokens "
        f"({MAX_TOKENS_MIN}–{MAX_TOKENS_MAX}; default: %(default)s)",
    )  # fmt: skip
    p.add_argument("--path", help="project directory (default: the working directory)")
    p.set_defaults(func=run, default_scope="all")


def _workspace(project: Path, home: Path) -> Path:
    """The directory the project's Wiki or git repository lives in, else `project`.

    A person runs `lwc explore` anywhere inside a project; the server's
    workspace binding is the project root, so search for it upwards.
    """
    directory = project
    while True:
        if directory != home and ((directory / ".lwc").is_dir() or (directory / ".git").exists()):
            return directory
        if directory.parent == directory or directory.parent == home or directory == home:
            return project
        directory = directory.parent


def run(args: argparse.Namespace) -> int:
    """The `explore` command."""
    # Deferred for start-up speed: trio and the actors load only when a query runs (every
    # other command builds this module's parser).
    import trio

    from lwc_trio.actors.supervisor import Services

    env = dict(os.environ)
    home = Path(os.path.realpath(env.get("HOME") or os.path.expanduser("~")))
    project = Path(os.path.realpath(args.path or os.getcwd()))
    arguments: dict[str, Any] = {
        "query": args.query,
        "projectPath": str(project),
        "mode": args.mode,
        "scope": args.scope,
        "maxDocuments": args.max_documents,
        "maxFiles": args.max_files,
        "maxTokens": args.max_tokens,
    }
    config = ServerConfig(
        workspace=_workspace(project, home), home=home, env=env, version=__version__
    )

    async def main() -> dict[str, Any]:
        services = Services(config, FaultPlan())
        async with trio.open_nursery() as nursery:
            await nursery.start(services.run)
            result = await services.explorer().explore(arguments)
            nursery.cancel_scope.cancel()
        return result

    result = trio.run(main)
    structured = result["structuredContent"]
    if "error" in structured and "query" not in structured:
        error = structured["error"]
        raise fail(error["code"], f"{error['message']} (field {error['field']})")
    emit(structured, as_json=wants_json(args.json), human=_human)
    return 0


def _human(result: dict[str, Any]) -> str:
    head = f"lwc explore {result['query']!r} — mode {result['mode']}, scope {result['scope']}"
    lines = [style(head, "bold")]
    memory = result["memory"]
    lines.append(_plane_line("memory", memory))
    if memory.get("state") == "ready":
        for item in memory["results"]:
            ident = style(item["identifier"], "bold", "cyan")
            lines.append(f"  {item['scope']:<7} {item['type']:<6} {ident}  {item['title']}")
            if item.get("snippet"):
                lines.append(style(f"          {item['snippet'][:120]}", "dim"))
    code = result["codeGraph"]
    lines.append(_plane_line("code", code))
    if code.get("state") == "ready":
        lines.extend(f"  {name}" for name in code["files"])
    return "\n".join(lines)


def _plane_line(name: str, plane: dict[str, Any]) -> str:
    state = plane.get("state")
    if state in ("unavailable", "error"):
        colour = "yellow" if state == "unavailable" else "red"
        line = f"{name}: {style(state, colour)} — {plane['error']['message']}"
        if "nextAction" in plane:
            line += f" (run `{style(plane['nextAction']['command'], 'bold')}`)"
        return line
    if state == "ready" and name == "memory":
        return f"memory: {style('ready', 'green')}, {len(plane['results'])} result(s)"
    if state == "ready":
        cut = " (truncated)" if plane["truncated"] else ""
        return f"code: {style('ready', 'green')}, {len(plane['files'])} file(s){cut}"
    return f"{name}: {state}"


__all__ = ["register"]
