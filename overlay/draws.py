"""Seeded random draws that a pure-Python oracle can repeat exactly (docs/readings/ktco.md#draws).

Every draw is `splitmix64` folded over its key: `draw(seed, purpose, a, b, ...)` starts from the
seed and mixes in each value in turn (`x = splitmix64(x ^ value)`, 64-bit wrap-around). The
result depends only on the key, never on partitions or row order, so a seed gives one run on any
cluster layout, and the tests' oracle, which implements splitmix64 on its own, makes the same
choices. Vectorised over numpy arrays (uint64 arithmetic wraps as splitmix64 needs), so an
executor draws a whole partition at once.
"""

from __future__ import annotations

import numpy as np

# What a draw is for, so two uses of one seed never share their draws.
CYCLE_PT_ORDER = 1  # CyclePT: a topic's random order of its subscribers
HARARY_PT_ORDER = 2  # HararyPT with a random global order of the nodes
FAIL_NODES = 3  # resilience: a trial's order of failing nodes
FAIL_LINKS = 4  # resilience: a trial's order of failing links
GOSSIP_BOOTSTRAP = 5  # gossip: a node's first random view
CYCLON_SEND = 6  # Cyclon: which entries a node sends with its own
CYCLON_ANSWER = 7  # Cyclon: which entries a contacted node answers with
GOSSIP_PEER = 8  # GossipSample: the peer a node exchanges buffers with
UNIFORM_SAMPLE = 9  # the idealised peer sampler: a node's fresh random view
PUSH_PULL = 10  # dissemination: the neighbour a subscriber contacts
PUBLISHER = 11  # dissemination: which subscriber publishes
CHURN = 12  # dissemination: which nodes fail
SPIDERCAST_RANDOM = 13  # SpiderCast (Feverfew's baseline): a random-coverage pick
GOSSIP_REJOIN = 14  # gossip under churn: the random view a returning node starts from
BLOOM_HASH = 15  # Rappel: the Bloom filter's hash functions (seed 0: the same for every run)
COORDINATES = 16  # Rappel: the latency model's regions and node positions
RAPPEL_FCFS = 17  # Rappel: the order a node takes the friendship requests of one round in
RAPPEL_PRESENCE = 18  # Rappel: which nodes fail, and when they leave and return
RAPPEL_ORDER = 19  # Rappel: a node's random order of its feeds (the staggered joins)
RAPPEL_PHASE = 20  # Rappel: when in its 30 s a child pings its parent
RAPPEL_REJOIN = 21  # Rappel: when a member's periodic rejoins fall, and which ancestor each takes
RAPPEL_UPDATE = 22  # Rappel: when in its minute a feed publishes
RAPPEL_PUBLISHER = 23  # Rappel: a feed's publisher when no node has its key (the least draw)
RAPPEL_LEAVE = 24  # Rappel: whether a node going offline leaves properly (§4.4) or fails
GOSSIPSUB_DIRECTION = 25  # gossipsub: which end of a connection opened it (outbound there)
GOSSIPSUB_GRAFT = 26  # gossipsub: which peers a mesh below D_low grafts
GOSSIPSUB_KEEP = 27  # gossipsub: which peers a mesh above D_high keeps
GOSSIPSUB_OUTBOUND = 28  # gossipsub: which outbound peers a mesh short of D_out grafts
GOSSIPSUB_PHASE = 29  # gossipsub's spread: when in its heartbeat interval a node's heartbeats fall
GOSSIPSUB_IHAVE = 30  # gossipsub's spread: which peers a heartbeat sends an IHAVE to
GOSSIPSUB_DIAL_ORDER = 31  # gossipsub, peers as deployed: the order nodes come up and dial in
GOSSIPSUB_DIAL = 32  # gossipsub, peers as deployed: the order a node dials its candidates in

_GAMMA = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(z: np.ndarray) -> np.ndarray:
    """Steele, Lea and Flood's SplitMix64 finaliser of z + gamma, element-wise on uint64."""
    with np.errstate(over="ignore"):
        z = np.asarray(z, dtype=np.uint64) + _GAMMA
        z = (z ^ (z >> np.uint64(30))) * _MIX1
        z = (z ^ (z >> np.uint64(27))) * _MIX2
    return z ^ (z >> np.uint64(31))


def draw(seed: int, purpose: int, *values: np.ndarray) -> np.ndarray:
    """uint64 draws keyed by (seed, purpose, values...); values are int64 arrays of one length
    (negative values count as their two's complement)."""
    state = splitmix64(np.uint64(seed & 0xFFFFFFFFFFFFFFFF))
    state = splitmix64(state ^ np.uint64(purpose))
    for value in values:
        state = splitmix64(state ^ np.asarray(value, dtype=np.int64).view(np.uint64))
    return state


_MASK = (1 << 64) - 1


def _splitmix64_int(z: int) -> int:
    z = (z + 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return z ^ (z >> 31)


def draw_int(seed: int, purpose: int, *values: int) -> int:
    """`draw` for one key of Python ints, without numpy (a tenth of the time per call): the
    per-node protocol code draws a few values at a time."""
    state = _splitmix64_int(_splitmix64_int(seed & _MASK) ^ purpose)
    for value in values:
        state = _splitmix64_int(state ^ (value & _MASK))
    return state


def ranks(seed: int, purpose: int, *values: np.ndarray) -> np.ndarray:
    """The draws as int64 sort keys in the same order (the top bit flipped)."""
    return (draw(seed, purpose, *values) ^ np.uint64(1 << 63)).view(np.int64)
