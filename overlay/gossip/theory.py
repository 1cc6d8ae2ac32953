"""Feverfew's closed forms (docs/readings/feverfew.md#theory): how many neighbours a
subscription needs, how long a BubbleSample diffusion lives (Thm 2), and how long push-pull
dissemination keeps passing a message on. Pure Python: the simulator and the report both use
them, one topic at a time (there are as many calls as topics, never as subscriptions)."""

from __future__ import annotations

import math

SHUFFLE_LENGTH = 10  # Cyclon's shuffle length c (the paper's default)


def need(subscribers: int) -> int:
    """Neighbours a subscription of a topic with `subscribers` needs to be ln-covered:
    ceil(ln n_t), 0 for a topic of one (docs/readings/feverfew.md#ln-covered; always at most
    n_t - 1)."""
    if subscribers < 1:
        raise ValueError(f"a topic has at least one subscriber, got {subscribers}")
    return math.ceil(math.log(subscribers)) if subscribers > 1 else 0


def ttl_theory(network: int, subscribers: int, shuffle: int = SHUFFLE_LENGTH) -> float | None:
    """Thm 2's expected cycles to a first match (Table 1's "theory" row), with m = n_t - 1
    matching nodes (the other subscribers): M = -(N/c) ln(1 - ln N / (N (1 - e^(-c m / N)))),
    TTL = log2(-N ln(1 - M/N)). None where the formula has no value (a log of a non-positive
    number, or M >= N): the caller falls back (`ttl0`)."""
    n, m = float(network), subscribers - 1
    if m < 1 or network < 2:
        return None
    inner = 1.0 - math.log(n) / (n * (1.0 - math.exp(-shuffle * m / n)))
    if inner <= 0.0:
        return None
    matched = -(n / shuffle) * math.log(inner)
    if matched >= n:
        return None
    return math.log2(-n * math.log(1.0 - matched / n))


def ttl0(network: int, subscribers: int, shuffle: int = SHUFFLE_LENGTH) -> int:
    """The TTL a diffusion starts with: ceil of `ttl_theory`, or the paper's fallback
    ceil(log2(N ln N)) (M = N - 1) where the formula has no value; at least 1."""
    value = ttl_theory(network, subscribers, shuffle)
    if value is None:
        value = math.log2(network * math.log(network))
    return max(1, math.ceil(value))


def age_limit(subscribers: int) -> int:
    """Push-pull: cycles since a node was informed during which it still passes the message on,
    A = ceil(log3 n_t + ln ln n_t) (our reading of "log3 n + O(ln ln n)" as a local age:
    docs/readings/feverfew.md#push-pull); at least 1 (ln ln n_t is negative or undefined below
    n_t = 3)."""
    if subscribers < 3:
        return 1
    return max(1, math.ceil(math.log(subscribers, 3) + math.log(math.log(subscribers))))
