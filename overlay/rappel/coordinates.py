"""Network coordinates from a seeded latency model (our reading: docs/readings/rappel.md#latency): the AS
topology and PlanetLab traces of the paper are not available, so nodes sit in a 2-D plane and the
latency between two is their distance in milliseconds.

The plane has continents whose centres sit evenly on a circle of `continent_radius` ms (the
first at a seeded angle), continent c with `regions[c]` region centres spread around it
(Gaussian, `region_spread` ms), and each node sits around a uniformly chosen region's centre
(Gaussian, `node_spread` ms): a continent of more regions holds more nodes.
The defaults are calibrated so that pairwise latencies follow the paper's inter-AS mixture in
shape: about 10% below 4 ms (same region), about 30% from 4 to 30 ms (same continent) and the
rest from 30 to about 115 ms (`tests/test_rappel_pieces.py` checks the shares).

Every value is a keyed draw: draw(COORDINATES, -1, 0) the rotation; (COORDINATES, -2, r, k) the
k-th uniform of region r's centre; (COORDINATES, node, k) the node's region (k = 0) and its two
uniforms (k = 1, 2). Gaussians come from two uniforms by Box-Muller."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from overlay.draws import COORDINATES, draw

_UNIT = float(1 << 53)


def _uniform(values: np.ndarray) -> np.ndarray:
    """(0, 1] from uint64 draws (their top 53 bits)."""
    return ((values >> np.uint64(11)).astype(np.float64) + 1.0) / _UNIT


def _gaussians(first: np.ndarray, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    radius = np.sqrt(-2.0 * np.log(_uniform(first)))
    angle = 2.0 * np.pi * _uniform(second)
    return radius * np.cos(angle), radius * np.sin(angle)


@dataclass(frozen=True)
class LatencyModel:
    regions: tuple[int, ...] = (5, 3, 2)  # per continent
    continent_radius: float = 45.0
    region_spread: float = 7.0
    node_spread: float = 1.8

    def check(self) -> None:
        if not self.regions or min(self.regions) < 1:
            raise ValueError(f"every continent needs a region, got {self.regions}")
        if min(self.continent_radius, self.region_spread, self.node_spread) < 0:
            raise ValueError("the model's distances must not be negative")

    def region_centres(self, seed: int) -> np.ndarray:
        """float [sum(regions), 2], in ms."""
        ids = np.arange(sum(self.regions), dtype=np.int64)
        continent = np.repeat(np.arange(len(self.regions)), self.regions)
        turn = 2.0 * np.pi * _uniform(draw(seed, COORDINATES, np.int64(-1), np.int64(0)))
        angles = turn + 2.0 * np.pi * continent / len(self.regions)
        dx, dy = _gaussians(
            draw(seed, COORDINATES, np.int64(-2), ids, np.int64(0)),
            draw(seed, COORDINATES, np.int64(-2), ids, np.int64(1)),
        )
        return np.stack(
            [
                self.continent_radius * np.cos(angles) + self.region_spread * dx,
                self.continent_radius * np.sin(angles) + self.region_spread * dy,
            ],
            axis=1,
        )

    def coordinates(self, seed: int, nodes: np.ndarray) -> np.ndarray:
        """float [len(nodes), 2]: each node's position in ms."""
        self.check()
        nodes = np.asarray(nodes, dtype=np.int64)
        centres = self.region_centres(seed)
        region = (draw(seed, COORDINATES, nodes, np.int64(0)) % np.uint64(len(centres))).astype(np.int64)
        dx, dy = _gaussians(draw(seed, COORDINATES, nodes, np.int64(1)), draw(seed, COORDINATES, nodes, np.int64(2)))
        return centres[region] + self.node_spread * np.stack([dx, dy], axis=1)
