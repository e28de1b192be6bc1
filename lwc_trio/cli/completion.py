"""`lwc completion bash|zsh`: a shell completion script generated from the parser.

shtab turns the argparse tree into a static script, so pressing TAB runs the shell's own
completion code and never starts Python.
"""

from __future__ import annotations

import argparse
import functools
import sys
from typing import Any

from lwc_trio.cli.options import examples

SHELLS = ("bash", "zsh")


def register(sub: Any, common: argparse.ArgumentParser, tree: argparse.ArgumentParser) -> None:
    """Add `completion` to the command tree `tree` (whose script it prints)."""
    p = sub.add_parser(
        "completion", parents=[common], help="print a shell completion script",
        description="Print a completion script for bash or zsh, generated from lwc's own "
        "command tree. Load it from your shell's start-up file.",
        epilog=examples("lwc completion bash > ~/.local/share/bash-completion/completions/lwc",
                        "lwc completion zsh > \"${fpath[1]}/_lwc\""),
    )  # fmt: skip
    p.add_argument("shell", choices=SHELLS, help="the shell to complete in: bash or zsh")
    p.set_defaults(func=functools.partial(run, tree))


def run(tree: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """The `completion` command: the script of `tree` on stdout."""
    # Deferred for start-up speed: only this command needs shtab.
    import shtab

    script = shtab.complete(tree, shell=args.shell)
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0
