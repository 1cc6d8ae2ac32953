"""Which pairs a greedy may still add: the engine's pluggable eligibility rules.

A rule lives on the driver (`allows`, told of every accepted link by `accept`) and hands the
executors a picklable `RowFilter` each round, a vectorised copy of the same test over candidate
rows. Within a phase eligibility may only shrink as links are added: that keeps the bounds a
round computes at its start valid until its end. `live(x)` says whether x can still be an end of
an eligible pair (conservatively True), which lets the engine drop a full node's bound.

GM and GPA use `Unlimited`; MinMaxODA and GPM `DegreePhases` (ICDCS'16 Alg. 3: in phase D a pair
is eligible while both ends have degree < D); GSwicoS and GSwicoL their ring and slot rules
(`overlay.smallworld.gswico`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

NO_ARRAY = np.zeros(0, dtype=np.int64)


@dataclass
class CompiledRule:
    """A rule's form for the in-memory regime's sweep (`overlay.design.sweep`): its kind and the
    arrays the kernel reads and updates in place (shared with the rule, not copied)."""

    kind: int
    degrees: np.ndarray = field(default_factory=lambda: NO_ARRAY)
    max_degree: int = 0  # 0: none
    fragment: np.ndarray = field(default_factory=lambda: NO_ARRAY)
    neighbours: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), dtype=np.int64))
    position: np.ndarray = field(default_factory=lambda: NO_ARRAY)
    mask: np.ndarray = field(default_factory=lambda: NO_ARRAY)
    state: np.ndarray = field(default_factory=lambda: np.zeros(2, dtype=np.int64))


class RowFilter:
    """Eligibility of candidate rows on an executor (numpy arrays of u and v)."""

    def eligible(self, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
        return np.ones(len(us), dtype=bool)

    def dead(self, us: np.ndarray, vs: np.ndarray) -> np.ndarray:
        """Rows that can never be eligible again (they leave the candidate table)."""
        return np.zeros(len(us), dtype=bool)


class Eligibility:
    """A rule that admits every pair, always, in one phase (subclasses narrow it)."""

    phase = 0  # the degree limit D of the current phase; 0 for rules without phases

    def allows(self, u: int, v: int) -> bool:
        return True

    def accept(self, u: int, v: int) -> None:
        """Told of every link added; a rule without state has nothing to record."""

    def live(self, x: int) -> bool:
        return True

    def row_filter(self, lookahead: int = 1) -> RowFilter:
        """The rows eligible now; a phased rule: in any of the next `lookahead` phases."""
        return RowFilter()

    def open_nodes(self, lookahead: int = 1) -> np.ndarray | None:
        """The nodes that can be an end of a pair `row_filter(lookahead)` admits, now or later in
        the round (None: every node). A round reads only the rows between them."""
        return None

    def last_phase(self, lookahead: int) -> int:
        """The last phase a sample taken with `lookahead` covers."""
        return self.phase

    def next_phase(self) -> bool:
        """No eligible pair has a positive gain any more: open the next phase (True) or stop."""
        return False

    @property
    def complete(self) -> bool:
        """The rule admits no further link whatever the gains (a closed ring)."""
        return False

    def compiled(self) -> CompiledRule | None:
        """The rule's form for the in-memory regime, or None (it then runs in rounds)."""
        return None

    def absorb(self, compiled: CompiledRule, links, owners, phases) -> None:
        """After a call of the sweep: take in what its arrays do not hold (links in order; the
        slot rule's finger owners and phases)."""


class Unlimited(Eligibility):
    """GM and GPA: every pair is eligible."""

    def compiled(self) -> CompiledRule:
        from overlay.design.sweep import NO_RULE

        return CompiledRule(NO_RULE)


@dataclass
class DegreeFilter(RowFilter):
    degrees: np.ndarray
    limit: int
    max_degree: int | None

    def eligible(self, us, vs):
        return (self.degrees[us] < self.limit) & (self.degrees[vs] < self.limit)

    def dead(self, us, vs):
        if self.max_degree is None:
            return np.zeros(len(us), dtype=bool)
        return (self.degrees[us] >= self.max_degree) | (self.degrees[vs] >= self.max_degree)


class DegreePhases(Eligibility):
    """MinMaxODA (no `max_degree`) and GPM (phases up to `max_degree`)."""

    def __init__(self, nodes: int, max_degree: int | None = None, phase: int = 1, degrees: np.ndarray | None = None):
        self.degrees = np.zeros(nodes, dtype=np.int64) if degrees is None else degrees.astype(np.int64)
        self.max_degree = max_degree
        self.phase = phase

    def allows(self, u: int, v: int) -> bool:
        degrees = self.degrees
        return degrees[u] < self.phase and degrees[v] < self.phase

    def accept(self, u: int, v: int) -> None:
        self.degrees[u] += 1
        self.degrees[v] += 1

    def live(self, x: int) -> bool:
        return self.degrees[x] < self.phase

    def row_filter(self, lookahead: int = 1) -> RowFilter:
        return DegreeFilter(self.degrees.copy(), self.last_phase(lookahead), self.max_degree)

    def open_nodes(self, lookahead: int = 1) -> np.ndarray:
        return np.flatnonzero(self.degrees < self.last_phase(lookahead))

    def last_phase(self, lookahead: int) -> int:
        last = self.phase + lookahead - 1
        return last if self.max_degree is None else min(last, self.max_degree)

    def next_phase(self) -> bool:
        self.phase += 1
        return not self.complete

    def compiled(self) -> CompiledRule:
        from overlay.design.sweep import DEGREE_RULE

        return CompiledRule(DEGREE_RULE, degrees=self.degrees, max_degree=self.max_degree or 0)

    @property
    def complete(self) -> bool:
        """GPM after phase d (a resumed run may start there)."""
        return self.max_degree is not None and self.phase > self.max_degree
