"""The CLI's parser: one subparser per command, each module adding its own with their handlers."""

from __future__ import annotations

import argparse
import sys

from pipelines.cli import data, day_two, designs, gossip, maintenance, routing, workflows
from pipelines.cli.flags import StepArgumentError, StepParser, global_flags, retired_spelling

COMMAND_MODULES = (data, designs, day_two, gossip, routing, workflows, maintenance)


def build_parser(parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser = parser_class(
        prog="python -m pipelines",
        description="Overlay lab: pub/sub instances, overlays and routing on Spark + Delta.",
        parents=[global_flags(suppress=False)],
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    common = global_flags(suppress=True)
    for module in COMMAND_MODULES:
        module.add_commands(commands, common)
    return parser


def command_names(parser: argparse.ArgumentParser) -> set[str]:
    actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return set(actions[0].choices) if actions else set()


def parse_arguments(
    argv: list[str] | None, parser_class: type[argparse.ArgumentParser] = argparse.ArgumentParser
) -> argparse.Namespace:
    """`argv` parsed; a spelling the CLI retired stops with one line naming the new one."""
    parser = build_parser(parser_class)
    argv = sys.argv[1:] if argv is None else list(argv)
    retired = retired_spelling(argv, command_names(parser))
    if retired is not None:
        if issubclass(parser_class, StepParser):
            raise StepArgumentError(retired)
        parser.exit(2, f"error: {retired}\n")
    return parser.parse_args(argv)
