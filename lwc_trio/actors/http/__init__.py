"""The HTTP transport actor: stateless streamable HTTP (SPEC §1.2) on h11 and Trio.

One serving path, split like hypercorn's own (protocol / byte mover / server), but on
public APIs only:

- `lwc_trio.protocol.http_rules` decides every status, header and limit as pure functions;
- `connection` is the byte mover: one `h11.Connection` per client connection (keep-alive
  through `start_next_cycle()`), one task that reads, parses, answers and writes, with the
  read, idle and write deadlines as cancel scopes, and the connection cap (`Connections`);
- `server` binds the socket, accepts through `trio.serve_listeners`, starts the services
  and owns the shutdown (SIGINT/SIGTERM, the grace).

It reaches the rest of lwc only through `Services` and `Explorer.call`. h11 is imported
here only, and this package only in HTTP mode.
"""

from lwc_trio.actors.http.server import open_listener, read_token, serve_http

__all__ = ["open_listener", "read_token", "serve_http"]
