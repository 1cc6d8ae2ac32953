"""One grammar for churn and mass failures, shared by every command that simulates them.

    --churn sessions:ON/OFF        nodes go on and off, sessions of these mean minutes (exponential)
    --churn substitution:RATE      that share of the nodes fails each cycle and returns the next
    --mass-failure SHARE@FROM[-TO] that share of all nodes fails at FROM and returns at TO (no TO:
                                   for good), in the command's own time unit (hours, cycles)

A command names the churn kinds it simulates; any other kind is refused with the ones it takes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from overlay.errors import InputError

SESSIONS = "sessions"
SUBSTITUTION = "substitution"
CHURN_KINDS = {
    SESSIONS: "sessions:ON/OFF (mean minutes online and offline, e.g. sessions:240/30)",
    SUBSTITUTION: "substitution:RATE (the share failing each cycle, e.g. substitution:0.01)",
}


@dataclass(frozen=True)
class Sessions:
    online: float  # mean minutes
    offline: float


@dataclass(frozen=True)
class Substitution:
    rate: float


def churn_help(kinds: tuple[str, ...]) -> str:
    return " or ".join(CHURN_KINDS[k] for k in kinds)


def parse_churn(text: str, kinds: tuple[str, ...]) -> Sessions | Substitution:
    """`KIND:VALUE` of one of `kinds` (the ones the command simulates)."""
    kind, _, value = text.strip().partition(":")
    if kind not in kinds:
        raise InputError(f"--churn takes {churn_help(kinds)}, got '{text}'")
    if kind == SESSIONS:
        found = re.fullmatch(r"([0-9]*\.?[0-9]+)/([0-9]*\.?[0-9]+)", value)
        if not found or not (float(found[1]) > 0 and float(found[2]) > 0):
            raise InputError(f"--churn takes {CHURN_KINDS[SESSIONS]} with positive minutes, got '{text}'")
        return Sessions(float(found[1]), float(found[2]))
    try:
        rate = float(value)
    except ValueError:
        raise InputError(f"--churn takes {CHURN_KINDS[SUBSTITUTION]}, got '{text}'") from None
    if not 0.0 < rate < 1.0:
        raise InputError(f"the substitution rate must be above 0 and below 1, got {value}")
    return Substitution(rate)


@dataclass(frozen=True)
class MassFailure:
    share: float
    start: float
    end: float | None  # None: for good


def parse_mass_failure(text: str, unit: str, whole: bool = False, returns: bool = True) -> MassFailure:
    """`SHARE@FROM[-TO]` in `unit`s (`whole`: whole numbers from 1, as cycles are; `returns`:
    whether the command lets the nodes come back at TO)."""
    number = r"[0-9]+" if whole else r"[0-9]*\.?[0-9]+"
    shape = f"SHARE@FROM-TO in {unit} (no -TO: for good)" if returns else f"SHARE@FROM in {unit}"
    found = re.fullmatch(rf"([0-9]*\.?[0-9]+)@({number})(?:-({number}))?", text.strip())
    if not found or (found[3] is not None and not returns):
        raise InputError(f"--mass-failure takes {shape}, e.g. {'0.5@2-3' if returns else '0.8@1'}; got '{text}'")
    share, start = float(found[1]), float(found[2])
    end = float(found[3]) if found[3] is not None else None
    if not 0.0 < share <= 1.0:
        raise InputError(f"--mass-failure needs a share in (0, 1], got '{text}'")
    if start < (1 if whole else 0) or not math.isfinite(start):
        raise InputError(f"--mass-failure starts at {'a cycle >= 1' if whole else 'a time >= 0'}, got '{text}'")
    if end is not None and end <= start:
        raise InputError(f"--mass-failure returns after it fails: TO must exceed FROM, got '{text}'")
    return MassFailure(share, start, end)
