"""Help that tells the truth: the whole `lwc` parser, walked (SPEC §7 "Every option's help
gives its default and bound").

Every argument and option has help; one that takes a value says its default, and a default
the parser holds is the one the help shows; an integer option names its bound (and is
parsed by `Bounded`, which the help's bound comes from); `--scope` names the scope the
command really uses; every command ends its help with examples.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

import pytest

from lwc_trio.cli.options import Bounded, effective_scope
from lwc_trio.cli.parser import build_parser

FLAGS = (argparse._StoreTrueAction, argparse._StoreConstAction, argparse._HelpAction,
         argparse._VersionAction)  # fmt: skip


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """(argv prefix, parser) for the root and every command and subcommand under it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from commands(child, (*path, name))


ALL = list(commands(build_parser()))
IDS = [" ".join(path) or "lwc" for path, _ in ALL]


def rendered(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help text as --help prints it (`%(default)s` filled in), on one line."""
    formatter = parser._get_formatter()
    return " ".join(formatter._expand_help(action).split())


def test_the_walk_sees_every_command() -> None:
    names = {" ".join(path) for path, _ in ALL}
    for expected in (
        "page put",
        "source list",
        "source remove",
        "config show",
        "work watch",
        "work status",
        "completion",
        "serve",
        "explore",
        "cg init",
        "agent install",
    ):
        assert expected in names


@pytest.mark.parametrize(("path", "parser"), ALL, ids=IDS)
def test_every_argument_has_truthful_help(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        assert action.help, f"{path} {name}: no help"
        assert action.help != argparse.SUPPRESS, f"{path} {name}: help hidden"
        text = rendered(parser, action)
        takes_value = not isinstance(action, FLAGS)
        optional_value = takes_value and (
            (action.option_strings and not action.required) or action.nargs == "?"
        )
        if optional_value and action.dest not in ("scope",):
            assert "default" in text, f"{path} {name}: help gives no default: {text!r}"
        if takes_value and action.default not in (None, argparse.SUPPRESS):
            shown = re.search(r"default: ([^;)]+)", text)
            assert shown is not None, f"{path} {name}: {text!r}"
            value = action.default
            assert shown.group(1).strip() in (
                str(value),
                f"{value:g}" if isinstance(value, float) else str(value),
            ), f"{path} {name}: help says default {shown.group(1)!r}, the parser uses {value!r}"
        assert action.type is not int, f"{path} {name}: an int option without a Bounded type"
        if isinstance(action.type, Bounded):
            assert action.type.describe() in text, f"{path} {name}: bound missing: {text!r}"


@pytest.mark.parametrize(("path", "parser"), ALL, ids=IDS)
def test_scope_help_names_the_scope_the_command_uses(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    """What `run` computes for a command given no --scope is what its --scope help says."""
    (scope,) = [a for a in parser._actions if a.dest == "scope"]
    text = rendered(parser, scope)
    if path == ("serve",):
        assert "ignored" in text
        return
    args = argparse.Namespace(
        **{
            k: v
            for k, v in [("default_scope", parser.get_default("default_scope"))]
            if v is not None
        }
    )
    assert f"default: {effective_scope(args)}" in text, f"{path}: {text!r}"


@pytest.mark.parametrize(("path", "parser"), ALL, ids=IDS)
def test_every_command_ends_with_examples(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    shown = parser.format_help()
    assert "\nExamples:\n" in shown, f"{path}: no examples"
    tail = shown.split("\nExamples:\n", 1)[1].strip().splitlines()
    assert 1 <= len(tail) <= 2
    assert all(line.strip().startswith(("lwc ", "git ")) for line in tail), tail
    # An example runs the command it documents.
    if path:
        assert any(" ".join(path) in line for line in tail), (path, tail)


def test_explore_help_and_run_agree_on_scope_all() -> None:
    """The defect of issue #23: explore's help said project while the run used all."""
    parser = build_parser()
    args = parser.parse_args(["explore", "x"])
    assert effective_scope(args) == "all"
    assert args.max_documents == 8
    assert args.max_files == 12
