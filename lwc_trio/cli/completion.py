"""`lwc completion bash|zsh`: a shell completion script generated from the parser.

shtab turns the argparse tree into a static script, so pressing TAB runs the shell's own
completion code and never starts Python.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh")


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    """Add `completion` to the command tree."""
    from lwc_trio.cli.parser import examples

    p = sub.add_parser(
        "completion", parents=[common], help="print a shell completion script",
        description="Print a completion script for bash or zsh, generated from lwc's own "
        "command tree. Load it from your shell's start-up file.",
        epilog=examples("lwc completion bash > ~/.local/share/bash-completion/completions/lwc",
                        "lwc completion zsh > \"${fpath[1]}/_lwc\""),
    )  # fmt: skip
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in: bash or zsh")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """The `completion` command: the script on stdout."""
    import shtab

    from lwc_trio.cli.parser import build_parser

    script = shtab.complete(build_parser(), shell=args.shell)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0
