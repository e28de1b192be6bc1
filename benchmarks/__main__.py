"""`python -m benchmarks NAME [ARGS]`: run one scenario; `--list` names them all."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from benchmarks.registry import SCENARIOS, find


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help", "--list"):
        width = max(len(s.name) for s in SCENARIOS)
        print("usage: scripts/bench NAME [ARGS]   (scripts/bench NAME --help for its options)")
        print()
        for s in SCENARIOS:
            print(f"  {s.name:<{width}}  {s.summary}")
        return 0 if args else 2
    scenario = find(args[0])
    if scenario is None:
        names = ", ".join(s.name for s in SCENARIOS)
        print(f"bench: no scenario {args[0]!r}; scenarios: {names}", file=sys.stderr)
        return 2
    sys.argv[0] = f"bench {scenario.name}"
    return scenario.main()(args[1:])


if __name__ == "__main__":
    sys.exit(main())
