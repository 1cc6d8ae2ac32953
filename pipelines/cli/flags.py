"""The CLI's value types (each range-checked), its global flags, and the spellings it retired.

Every numeric flag parses through one of these types, so a value out of range stops at the
parser with the flag's name, before a JVM starts.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from overlay.design.memory import parse_bytes
from overlay.errors import InputError, excerpt

SETTINGS_FLAGS = ("--lakehouse", "--config", "--master", "--shuffle-partitions", "--driver-memory", "--spark-conf")


def _number(text: str, cast: Callable[[str], Any], kind: str):
    try:
        value = cast(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {kind}, got '{excerpt(text)}'") from None
    if isinstance(value, float) and not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be {kind}, got '{text}'")
    if isinstance(value, int) and not -(2**63) <= value < 2**63:  # what Spark and NumPy take
        raise argparse.ArgumentTypeError(f"must be {kind} of 64 bits at most, got '{excerpt(text)}'")
    return value


def integer(text: str) -> int:
    return _number(text, int, "an integer")


def positive_int(text: str) -> int:
    value = _number(text, int, "a positive integer")
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _number(text, int, "an integer >= 0")
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {value}")
    return value


def ratio(text: str) -> float:
    """A share in (0, 1]: budget and degree ratios."""
    value = _number(text, float, "a number in (0, 1]")
    if not 0 < value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text}")
    return value


def share(text: str) -> float:
    """A share in [0, 1]."""
    value = _number(text, float, "a number in [0, 1]")
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"must be a number in [0, 1], got {text}")
    return value


def positive_float(text: str) -> float:
    value = _number(text, float, "a positive number")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return value


def non_negative_float(text: str) -> float:
    value = _number(text, float, "a number >= 0")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def seconds(text: str) -> float:
    value = _number(text, float, "a number of seconds")
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, got {text}")
    return value


def size(text: str) -> int:
    """A memory size in Spark's grammar ('512m', '4g'), in bytes."""
    try:
        return parse_bytes(text)
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def comma_separated(item: Callable[[str], Any], kind: str):
    """A parser of X or X,X,...: distinct values, each checked by `item`, in the order given."""

    def parse(text: str) -> tuple:
        values = []
        for part in text.split(","):
            try:
                values.append(item(part))
            except argparse.ArgumentTypeError as error:
                raise argparse.ArgumentTypeError(f"{kind} or a comma-separated list of them: {error}") from None
        if len(set(values)) != len(values):
            raise argparse.ArgumentTypeError(f"repeats a value: '{text}'")
        return tuple(values)

    return parse


shares = comma_separated(share, "a share in [0, 1]")
positive_ints = comma_separated(positive_int, "a positive integer")


def key_value(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got '{text}'")
    return key.strip(), value


def global_flags(suppress: bool) -> argparse.ArgumentParser:
    """Flags accepted both before and after the command (after wins)."""
    default = argparse.SUPPRESS if suppress else None
    flags = argparse.ArgumentParser(add_help=False)
    flags.add_argument(
        "--lakehouse", metavar="PATH", default=default, help="root folder of the Delta tables (default ./lakehouse)"
    )
    flags.add_argument("--config", metavar="FILE", default=default, help="settings YAML (default conf/lab.yaml)")
    flags.add_argument("--master", default=default, help="Spark master for a local session (default local[*])")
    flags.add_argument("--shuffle-partitions", type=positive_int, default=default, help="Spark's shuffle partitions")
    flags.add_argument("--driver-memory", default=default, help="the driver JVM's heap, e.g. 6g")
    flags.add_argument(
        "--spark-conf",
        type=key_value,
        action="append",
        metavar="KEY=VALUE",
        default=default,
        help="extra Spark setting (repeatable)",
    )
    flags.add_argument(
        "-v", "--verbose", action="count", default=argparse.SUPPRESS if suppress else 0, help="more logging"
    )
    flags.add_argument(
        "-q", "--quiet", action="store_true", default=argparse.SUPPRESS if suppress else False, help="less logging"
    )
    return flags


class StepArgumentError(InputError):
    """A workflow step's arguments do not parse as a CLI command."""


class StepParser(argparse.ArgumentParser):
    """Parses a workflow step: errors raise instead of printing usage and exiting, and flags are
    spelled out (no abbreviations: a step file is read for years)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **{**kwargs, "allow_abbrev": False})

    def error(self, message: str):
        raise StepArgumentError(message)


@dataclass(frozen=True)
class Retired:
    """A spelling the CLI no longer takes, and what to write instead."""

    command: str
    old: str
    new: str


RETIRED = (
    Retired("simulate", "--protocol", "`simulate PROTOCOL ...`, e.g. `simulate rappel --instance NAME`"),
    Retired("simulate", "--alpha", "`--friends`"),
    Retired("simulate", "--beta", "`--children`"),
    Retired("simulate", "--mode", "`--feed-summary`"),
    Retired("simulate", "--failure", "`--mass-failure`"),
    Retired("friend-bound", "--k", "`--friends`"),
    Retired("topic-structure", "--sizes", "`--topic-sizes`"),
    Retired("bundle", "--workflow", "the workflow as the argument: `bundle FILE`"),
)


def retired_spelling(argv: list[str], commands: set[str]) -> str | None:
    """The one-line error for a retired spelling in `argv`, or None.

    The command is the first word that is not a flag or a settings flag's value."""
    command, skip = None, False
    for i, token in enumerate(argv):
        if skip:
            skip = False
            continue
        if token in SETTINGS_FLAGS:
            skip = True
            continue
        if token.startswith("-"):
            continue
        if token in commands:
            command = token
            rest = argv[i + 1 :]
            break
        return None
    if command is None:
        return None
    used = {token.split("=", 1)[0] for token in rest}
    for retired in RETIRED:
        if retired.command == command and retired.old in used:
            return f"`{command} {retired.old}` is now {retired.new}"
    return None
