"""One module per benchmark scenario, each with `main(argv) -> int` (see `benchmarks.registry`).

Modules named `NAME_*` hold the parts of scenario NAME (its corpus, checks, report).
"""
