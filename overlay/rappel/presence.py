"""Which Rappel nodes are online in a round (our reading: docs/readings/rappel.md, "Presence"), from keyed
draws so that every executor and the oracle agree without talking:

* arrivals: node v comes online first in round 1 + floor(u * `arrival_rounds`), u =
  draw(RAPPEL_PRESENCE, v, -1) / 2^64 (0: everyone at round 1; the paper's warm-up joins at a
  rate);
* a mass failure (Fig. 7): node v is in the failing share when draw(RAPPEL_PRESENCE, v) / 2^64 <
  `share`; it is down from `fail_round` until `return_round` (None: for good);
* churn (Fig. 8b and the scale run; the Overnet trace is not available): from its arrival, node
  v alternates sessions online and offline of exponential lengths, means `mean_online` and
  `mean_offline` rounds, the k-th length ceil(-mean ln u), u = (draw(RAPPEL_PRESENCE, v, k) + 1) /
  2^64 (k = 0, 1, ...: online, offline, online, ...). 0 means no churn.

`spared` nodes (the publishers) arrive at round 1 and never fail.

A node going offline in round r (up in r - 1, down in r) *leaves properly* (§4.4: it hands its
children over before it goes) when it goes at the end of a churn session and
draw(RAPPEL_LEAVE, v, r) / 2^64 < `proper_leaves`; otherwise, and always in a mass failure, it
fails (its children find out by their pings)."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field

from overlay.draws import RAPPEL_LEAVE, RAPPEL_PRESENCE, draw_int

_SPAN = float(1 << 64)


@dataclass(frozen=True)
class Presence:
    seed: int = 1
    share: float = 0.0
    fail_round: int = 0
    return_round: int | None = None  # None: gone for good
    spared: frozenset = field(default_factory=frozenset)
    arrival_rounds: int = 0
    mean_online: float = 0.0
    mean_offline: float = 0.0
    proper_leaves: float = 0.0  # the share of session ends that are proper leaves

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"the failing share must be in [0, 1], got {self.share}")
        if not 0.0 <= self.proper_leaves <= 1.0:
            raise ValueError(f"the share of proper leaves must be in [0, 1], got {self.proper_leaves}")
        if self.return_round is not None and self.return_round <= self.fail_round:
            raise ValueError(f"nodes must return after they fail (round {self.fail_round}), got {self.return_round}")
        if self.arrival_rounds < 0 or self.mean_online < 0 or self.mean_offline < 0:
            raise ValueError("arrival rounds and mean session lengths must not be negative")
        if (self.mean_online > 0) != (self.mean_offline > 0):
            raise ValueError("churn needs both mean session lengths (online and offline), or neither")
        object.__setattr__(self, "_sessions", {})

    def arrival(self, node: int) -> int:
        if node in self.spared or not self.arrival_rounds:
            return 1
        return 1 + int(draw_int(self.seed, RAPPEL_PRESENCE, node, -1) / _SPAN * self.arrival_rounds)

    def failing(self, node: int) -> bool:
        return node not in self.spared and draw_int(self.seed, RAPPEL_PRESENCE, node) / _SPAN < self.share

    def _churned_up(self, node: int, round_: int) -> bool:
        """Whether node's sessions have it online in `round_` (at or after its arrival)."""
        ends = self._sessions.setdefault(node, [])  # round each session ends before, cumulative
        while not ends or ends[-1] <= round_:
            k = len(ends)
            mean = self.mean_online if k % 2 == 0 else self.mean_offline
            u = (draw_int(self.seed, RAPPEL_PRESENCE, node, k) + 1) / _SPAN
            ends.append((ends[-1] if ends else self.arrival(node)) + max(1, math.ceil(-mean * math.log(u))))
        return next(k for k, end in enumerate(ends) if round_ < end) % 2 == 0

    def _mass_failed(self, node: int, round_: int) -> bool:
        return (
            self.fail_round <= round_
            and (self.return_round is None or round_ < self.return_round)
            and self.failing(node)
        )

    def up(self, node: int, round_: int) -> bool:
        if round_ < self.arrival(node):
            return False
        if self._mass_failed(node, round_):
            return False
        if self.mean_online and node not in self.spared:
            return self._churned_up(node, round_)
        return True

    def leaves_properly(self, node: int, round_: int) -> bool:
        """Whether node, online in round_ - 1 and offline in round_, left properly (see the
        module doc); meaningless for a node that did not go offline then."""
        return (
            self.proper_leaves > 0.0
            and not self._mass_failed(node, round_)
            and draw_int(self.seed, RAPPEL_LEAVE, node, round_) / _SPAN < self.proper_leaves
        )

    def down(self, nodes: Iterable[int], round_: int) -> set[int]:
        return {v for v in nodes if not self.up(v, round_)}
