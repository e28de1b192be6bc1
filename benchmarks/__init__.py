"""Benchmarks of lwc_trio: a small shared harness and one module per scenario.

Run a scenario by name with `scripts/bench NAME [ARGS]` (`python -m benchmarks NAME`);
`scripts/bench --list` names them all. The package lives in the repository only: it is not
part of the wheel (`[tool.hatch.build.targets.wheel] packages`).

The harness, used by every scenario (and the client also by the test-suite):

* `stdio` — `StdioClient`, the one raw JSON-lines MCP client over a server's pipes (blocking,
  sequential async and routed async use);
* `http` — `HttpConnection`, the one HTTP client (h11 on trio), and `HttpServer`, a server
  driven over it with the routed interface the soak uses;
* `messages` — the JSON-RPC messages (initialize, ping, tools/call, cancel) and `encode`;
* `procstats` — /proc figures: RSS, peak RSS, descriptors, threads, CPU, children, groups;
* `stats` — `percentile` (nearest rank), `median`, `mean`, `bootstrap_ci`, unit helpers;
* `table` — `markdown_table`, the one table printer, and the machine notes of a run;
* `fixtures` — private environments, `small_wiki`, and `Fixture` (a Wiki written page by page
  with the real CLI, optionally with a CodeGraph index);
* `registry` — `SCENARIOS`, the names `scripts/bench` knows.

Scenarios are in `benchmarks.scenarios`; each says in its docstring what it measures and
against which baseline in the same run.
"""
