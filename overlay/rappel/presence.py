"""Which Rappel nodes are online in a round (NOTES-ktco-feverfew-rappel.md §3.5): the paper's
Fig. 7 failure, a share of the nodes failing at one round and coming back at a later one.

Node v is among the failing share when draw(RAPPEL_PRESENCE, v) / 2^64 < share; the publishers
given are never among them."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from overlay.draws import RAPPEL_PRESENCE, draw_int

_SPAN = float(1 << 64)


@dataclass(frozen=True)
class Presence:
    seed: int = 1
    share: float = 0.0
    fail_round: int = 0
    return_round: int | None = None  # None: gone for good
    spared: frozenset = field(default_factory=frozenset)

    def __post_init__(self) -> None:
        if not 0.0 <= self.share <= 1.0:
            raise ValueError(f"the failing share must be in [0, 1], got {self.share}")
        if self.return_round is not None and self.return_round <= self.fail_round:
            raise ValueError(f"nodes must return after they fail (round {self.fail_round}), got {self.return_round}")

    @classmethod
    def always(cls) -> "Presence":
        return cls()

    def failing(self, node: int) -> bool:
        return node not in self.spared and draw_int(self.seed, RAPPEL_PRESENCE, node) / _SPAN < self.share

    def up(self, node: int, round_: int) -> bool:
        if round_ < self.fail_round or (self.return_round is not None and round_ >= self.return_round):
            return True
        return not self.failing(node)

    def down(self, nodes: Iterable[int], round_: int) -> set[int]:
        return {v for v in nodes if not self.up(v, round_)}
