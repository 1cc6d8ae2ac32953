"""Ring geometry of a small-world overlay (BeaConvey section 3.1; docs/readings/beaconvey.md#ring).

Nodes sit at positions 0..n-1 of a ring (the small-world ids). The clockwise distance from a to b
is (b - a) mod n; b lies in phase i of a when that distance is in [2^i, 2^(i+1)). Property 1:
every node has k = ceil(log2 n) fingers, finger[i] in its phase i; finger[0] is therefore the
ring successor. The same formulas exist as plain Python (for the driver steps and the tests'
oracles) and as Spark columns.
"""

from __future__ import annotations

from pyspark.sql import Column
from pyspark.sql import functions as F


def phase_count(n: int) -> int:
    """k = ceil(log2 n): the number of phases (and fingers per node) of an n-node ring."""
    return (n - 1).bit_length() if n > 1 else 0


def clockwise(a: int, b: int, n: int) -> int:
    return (b - a) % n


def phase_of(distance: int) -> int:
    """The phase i with distance in [2^i, 2^(i+1)); distance >= 1."""
    return distance.bit_length() - 1


def phase_width(phase: int, n: int) -> int:
    """How many positions phase `phase` holds on an n-node ring: [2^i, min(2^(i+1), n))."""
    return min(1 << (phase + 1), n) - (1 << phase)


def clockwise_column(a: Column, b: Column, n: int) -> Column:
    return F.pmod(b - a, F.lit(n))


def phase_column(distance: Column, n: int) -> Column:
    """floor(log2 distance) for 1 <= distance < n, without floating point (exact at powers of 2)."""
    steps = [(distance >= F.lit(1 << i)).cast("int") for i in range(1, phase_count(n))]
    total = F.lit(0)
    for step in steps:
        total = total + step
    return total


def power_of_two(exponent: Column) -> Column:
    """2^exponent as a long (exact: a double holds powers of two up to 2^1023)."""
    return F.pow(F.lit(2.0), exponent).cast("long")
