"""`lwc serve --mcp`: validate every flag, bind the workspace, run the server.

Everything that can be wrong with the command line is found here, before a
single byte is served (exit 2); start-up failures exit 1.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import math
import os
import stat
import sys
from pathlib import Path
from typing import Any, Final, NoReturn

from lwc_trio import __version__
from lwc_trio.cli.options import common_options, examples
from lwc_trio.config import (
    DEFAULT_CODE_TIMEOUT,
    DEFAULT_HTTP_LISTEN,
    DEFAULT_MEMORY_TIMEOUT,
    HttpConfig,
    ServerConfig,
)
from lwc_trio.exceptions import LwcError, PathRuleError, UsageError
from lwc_trio.faults import FaultPlan
from lwc_trio.paths import validate_workspace

HTTP_ONLY: Final = (
    "http_listen",
    "http_base_path",
    "http_allow_remote",
    "http_token_file",
    "http_allowed_host",
)
_FLAG_NAMES: Final = {name: "--" + name.replace("_", "-") for name in HTTP_ONLY}
ALLOW_SCOPES: Final = {
    "project": frozenset({"project"}),
    "global": frozenset({"global"}),
    "all": frozenset({"project", "global"}),
}


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `serve` to the command tree."""
    p = sub.add_parser(
        "serve", parents=[common_options(ignored=True)], help="run the MCP server (needs --mcp)",
        description="Serve lwc_explore over the Model Context Protocol (stdio, or HTTP with "
        "--transport http). Agent hosts start it; `lwc agent install HOST` registers it.",
        epilog=examples("lwc serve --mcp", "lwc serve --mcp --transport http "
                        "--http-listen 127.0.0.1:8765"),
    )  # fmt: skip
    p.add_argument("--mcp", action="store_true", help="serve the Model Context Protocol (required)")
    p.add_argument("--path", help="workspace directory (default: the working directory)")
    p.add_argument(
        "--allow-scope", type=str.lower, choices=sorted(ALLOW_SCOPES),
        help="the stores a call may read (default: all; project for --http-allow-remote)",
    )  # fmt: skip
    p.add_argument(
        "--memory-timeout", type=_seconds("--memory-timeout"), default=DEFAULT_MEMORY_TIMEOUT,
        metavar="SECONDS", help="deadline of a memory search (above 0; default: %(default)g)",
    )  # fmt: skip
    p.add_argument(
        "--code-timeout", type=_seconds("--code-timeout"), default=DEFAULT_CODE_TIMEOUT,
        metavar="SECONDS", help="deadline of a CodeGraph call (above 0; default: %(default)g)",
    )  # fmt: skip
    p.add_argument(
        "--transport", type=str.lower, choices=("stdio", "http"), default="stdio",
        help="stdio or http (default: %(default)s)",
    )  # fmt: skip
    p.add_argument(
        "--http-listen", metavar="HOST:PORT",
        help=f"address to listen on, with --transport http (default: {DEFAULT_HTTP_LISTEN})",
    )  # fmt: skip
    p.add_argument(
        "--http-base-path", metavar="/PATH",
        help="URL path the endpoint is served under, with --transport http (default: /)",
    )  # fmt: skip
    p.add_argument(
        "--http-allow-remote", action="store_true", default=None,
        help="accept connections from other machines (needs --http-token-file; default: "
        "loopback only)",
    )  # fmt: skip
    p.add_argument(
        "--http-token-file", metavar="FILE",
        help="file holding the bearer token clients must send (default: none)",
    )  # fmt: skip
    p.add_argument(
        "--http-allowed-host", action="append", metavar="NAME",
        help="an extra Host header value to accept, repeatable (default: none)",
    )  # fmt: skip
    p.set_defaults(func=run)


def _seconds(flag: str) -> Any:
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        if not math.isfinite(value) or value <= 0:
            raise argparse.ArgumentTypeError(f"{flag} must be a positive number of seconds")
        return value

    return parse


def build_config(args: argparse.Namespace, env: dict[str, str]) -> ServerConfig:
    """Turn parsed flags into a `ServerConfig`.

    Raises:
        UsageError: anything wrong with the command line (exit 2).
    """
    if not args.mcp:
        raise UsageError("invalid_serve_mode", "lwc serve needs --mcp (the only serve mode)")
    if args.transport == "stdio":
        for name in HTTP_ONLY:
            if getattr(args, name) is not None:
                raise UsageError(
                    "invalid_usage", f"{_FLAG_NAMES[name]} is only valid with --transport http"
                )

    refusal: str | None = None
    try:
        workspace = validate_workspace(args.path if args.path is not None else os.getcwd(), env)
    except PathRuleError as exc:
        if args.path is not None or exc.code != "workspace_too_broad":
            raise UsageError(exc.code, exc.message) from None
        # SPEC §1: a host that starts a user-scope server in / or $HOME gets a server that
        # explains itself on every call instead of one that is gone with no tool at all.
        workspace = Path(os.path.realpath(os.getcwd()))
        refusal = workspace_refusal(str(workspace))
    except OSError as exc:  # the working directory itself vanished
        raise UsageError("invalid_workspace", f"--path: {exc.strerror}") from None
    http = _http_config(args) if args.transport == "http" else None
    # A server reachable from other machines shares only the project's memory
    # unless the host explicitly allows more.
    allow = args.allow_scope or ("project" if http is not None and http.remote else "all")
    return ServerConfig(
        workspace=workspace,
        home=Path(env.get("HOME") or os.path.expanduser("~")),
        env=dict(env),
        version=__version__,
        allowed_scopes=ALLOW_SCOPES[allow],
        memory_timeout=args.memory_timeout,
        code_timeout=args.code_timeout,
        http=http,
        workspace_refusal=refusal,
    )


def workspace_refusal(start: str) -> str:
    """What every tool call answers when the default workspace is a prohibited root."""
    return (
        f"lwc was started in {start} without --path, and that directory is too broad to "
        "serve (the filesystem root, $HOME, a temp root or a system root), so nothing is "
        "read. Start the server with --path DIR naming the project directory (e.g. "
        "`lwc serve --mcp --path /path/to/project`), or install it at project scope from "
        "inside the project (`lwc agent install HOST --project`)."
    )


def _http_config(args: argparse.Namespace) -> HttpConfig:
    """Validate the HTTP flags and resolve the listen address (SPEC §1.2).

    Raises:
        UsageError: malformed or unresolvable listen address, bad base path or
            allowed host, or a non-loopback address without remote mode (exit 2).
    """
    # Deferred for start-up speed: only `--transport http` needs these.
    import ipaddress
    import socket

    from lwc_trio.protocol import http_rules

    listen = args.http_listen if args.http_listen is not None else DEFAULT_HTTP_LISTEN
    try:
        host, port = http_rules.parse_listen(listen)
    except ValueError as exc:
        raise UsageError("invalid_listen_address", f"--http-listen: {exc}") from None
    try:
        base_path = http_rules.normalise_base_path(args.http_base_path or "/")
    except ValueError as exc:
        raise UsageError("invalid_base_path", f"--http-base-path: {exc}") from None
    try:
        allowed = tuple(http_rules.parse_allowed_host(n) for n in args.http_allowed_host or ())
    except ValueError as exc:
        raise UsageError("invalid_allowed_host", f"--http-allowed-host: {exc}") from None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as exc:
        raise UsageError(
            "invalid_listen_address",
            f"--http-listen: cannot resolve {host!r}: {getattr(exc, 'strerror', None) or exc}",
        ) from None
    addresses = [str(info[4][0]) for info in infos if info[0] in (socket.AF_INET, socket.AF_INET6)]
    if not addresses:
        raise UsageError("invalid_listen_address", f"--http-listen: {host!r} has no IP address")
    # Prefer IPv4 when a name has both: it is what "localhost" means to most clients.
    address = next((a for a in addresses if ":" not in a), addresses[0])
    loopback = all(ipaddress.ip_address(a.partition("%")[0]).is_loopback for a in addresses)
    remote = bool(args.http_allow_remote)
    if remote and args.http_token_file is None:
        raise UsageError(
            "token_required",
            "--http-allow-remote needs --http-token-file (remote clients must send a bearer token)",
        )
    if not loopback and not remote:
        raise UsageError(
            "remote_not_allowed",
            f"--http-listen {listen}: not a loopback address; serving other machines needs "
            "--http-allow-remote and --http-token-file",
        )
    return HttpConfig(
        host=host,
        address=address,
        port=port,
        base_path=base_path,
        remote=remote,
        token_file=Path(args.http_token_file) if args.http_token_file is not None else None,
        allowed_hosts=allowed,
    )


def _configure_logging(env: dict[str, str]) -> None:
    level = (env.get("LWC_LOG") or "").strip().lower()
    levels = {"debug": logging.DEBUG, "info": logging.INFO, "warning": logging.WARNING}
    root = logging.getLogger("lwc")
    root.propagate = False
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("lwc %(levelname)s %(name)s: %(message)s"))
    root.addHandler(handler)
    # A healthy session prints nothing unless LWC_LOG asks for it.
    root.setLevel(levels.get(level, logging.ERROR))


PRELOAD_STORE_BYTES: Final = 8 * 1024 * 1024
"""A store file this large (the workspace's or the global one) has the memory engine and
numpy imported before the server reads its first request (`preload_memory`)."""


def preload_memory(workspace: Path, home: Path, scopes: frozenset[str]) -> bool:
    """Import the memory engine and numpy now when the workspace's store or the global one
    (of those `scopes` lets the server read) is at least `PRELOAD_STORE_BYTES`; whether it
    did.

    Such a store's first query imports them anyway, and an import holds the interpreter for
    tens of milliseconds at a time (numpy's C set-up ~45 ms): in the middle of a first burst
    of calls that delayed the server's other answers and pings (`scripts/bench typo-load` on a
    1,000,000-Page store: 3 of 5 runs had one ping of 13-42 ms; 4 of 4 none over 3.8 ms with
    the imports done first). A server of small stores starts without them, as lean as before.
    Only `lstat` calls: no store is opened here."""
    stores = {"project": workspace / ".lwc" / "wiki.db", "global": home / ".lwc" / "wiki.db"}
    for scope, store in stores.items():
        if scope not in scopes:
            continue
        try:
            st = os.lstat(store)
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode) and st.st_size >= PRELOAD_STORE_BYTES:
            importlib.import_module("lwc_trio.memory.query.engine")  # the first query's modules
            importlib.import_module("lwc_trio.memory.query.scoring").import_vector()
            return True
    return False


def run(args: argparse.Namespace) -> int:
    """The `serve` command."""
    env = dict(os.environ)
    config = build_config(args, env)
    try:
        faults = FaultPlan.from_env(env.get("LWC_FAULTS"))
    except LwcError as exc:
        raise UsageError(exc.code, exc.message) from None
    _configure_logging(env)
    if config.workspace_refusal is not None:
        sys.stderr.write(
            f"lwc: WARNING: started in {config.workspace} without --path: too broad to serve; "
            "every tools/call answers workspace_too_broad until restarted with --path DIR\n"
        )
    if faults.active:
        for line in faults.describe():
            sys.stderr.write(f"lwc: LWC_FAULTS active: {line}\n")
        sys.stderr.flush()
    if config.workspace_refusal is None:
        preload_memory(config.workspace, config.home, config.allowed_scopes)
    code = _run_http(config, faults) if args.transport == "http" else _run_stdio(config, faults)
    _exit_now(code)


def _exit_now(code: int) -> NoReturn:
    """Leave without the interpreter's teardown once the server has stopped.

    Every stream is closed and the CodeGraph child reaped by now; what remains is Python
    freeing a heap it no longer needs, which took 20-200 ms here and counts against a
    host's prompt exit when it closes stdin. There are no atexit hooks to skip.
    """
    logging.shutdown()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code)


def _run_http(config: ServerConfig, faults: FaultPlan) -> int:
    # Deferred for start-up speed: every command builds this module's parser, only the
    # server needs trio and the actors, and stdio start-up never pays for the HTTP stack.
    import trio

    from lwc_trio.actors.http import serve_http

    return trio.run(serve_http, config, faults)


def _run_stdio(config: ServerConfig, faults: FaultPlan) -> int:
    # Deferred for start-up speed: every command builds this module's parser.
    import trio

    from lwc_trio.actors.stdio import serve_stdio

    # Protocol bytes get a private copy of stdout; fd 1 itself is pointed at
    # stderr, so a stray print() (ours, a library's, or a C extension's) can
    # never corrupt the wire.
    sys.stdout.flush()
    protocol_fd = os.dup(1)
    os.dup2(2, 1)
    stdin_fd = os.dup(0)

    async def main() -> int:
        stdin = trio.lowlevel.FdStream(stdin_fd)
        stdout = trio.lowlevel.FdStream(protocol_fd)
        try:
            return await serve_stdio(config, faults, stdin, stdout)
        finally:
            # FdStream made these non-blocking; a terminal left that way would
            # confuse the shell after we exit.
            for fd in (stdin_fd, protocol_fd):
                with contextlib.suppress(OSError):
                    os.set_blocking(fd, True)
            with trio.CancelScope(shield=True):
                for stream in (stdin, stdout):
                    with contextlib.suppress(OSError):
                        await stream.aclose()

    return trio.run(main)
