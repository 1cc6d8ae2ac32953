"""Benchmark (not a test): Feverfew's cycle compiled (the memory regime) on one instance, in this
process, no Spark, with the protocol's three steps over rows in Python (what the spark regime's
tasks run) as a check that the states are the same, not as a yardstick: the speed ratio is
against the compiled yardstick doing the same work.

Reads the instance's subscriptions from the lakehouse (deltalake, no JVM), runs `--cycles` cycles
compiled after a warm-up of two cycles on a copy (numba's cache loaded), the same cycles with the
compiled yardstick (`benchmarks/feverfew_yardstick.py`, independent of the lab), then the first
`--python-cycles` cycles over rows; each Python cycle's state must equal the compiled one's.
Prints the compiled seconds per cycle and their ratio to the yardstick's.

Usage:
  .venv/bin/python benchmarks/feverfew_speed.py --lakehouse /tmp/lh --instance tw-10k --cycles 40 --python-cycles 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks import feverfew_yardstick as yardstick
from benchmarks.design_greedy import current_subscriptions
from overlay.design.classes import Subscriptions
from overlay.gossip import cycles as C
from overlay.gossip.feverfew import Feverfew, FeverfewParams
from overlay.gossip.feverfew_compiled import CompiledFeverfew


def python_cycles(protocol: Feverfew, nodes: int, cycles: int):
    """The memory regime's steps over rows (`cycles.cycle_in_memory`), cycle by cycle."""
    rows = [protocol.start(i) for i in range(nodes)]
    names = [name for name, _ in protocol.state_columns]
    for cycle in range(1, cycles + 1):
        table = C.cycle_in_memory(protocol, rows, cycle)
        rows = table.select(names).to_pylist()
        yield table


def yardstick_cycles(pairs: np.ndarray, nodes: int, params: FeverfewParams, cycles: int) -> list[float]:
    """The compiled yardstick's seconds per cycle on the same instance and settings (warmed up on
    its first 40 nodes)."""
    settings = {name: getattr(params, name) for name in yardstick.DEFAULTS}
    tiny = pairs[pairs[:, 0] < 40]
    yardstick.simulate(tiny, 40, {**settings, "bubble_start": 1}, params.seed, 3)
    run = yardstick.Yardstick(pairs, nodes, settings, params.seed)
    seconds = []
    for cycle in range(1, cycles + 1):
        clock = time.monotonic()
        run.cycle(cycle)
        seconds.append(time.monotonic() - clock)
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", default="/tmp/lh")
    parser.add_argument("--instance", default="tw-10k")
    parser.add_argument("--cycles", type=int, default=40)
    parser.add_argument("--python-cycles", type=int, default=3)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    pairs = np.asarray(current_subscriptions(args.lakehouse, args.instance), dtype=np.int64)
    nodes = int(pairs[:, 0].max()) + 1
    csr = Subscriptions.from_pairs(nodes, pairs)
    params = FeverfewParams(seed=args.seed)
    print(f"{args.instance}: {nodes:,} nodes, {len(pairs):,} subscriptions, Feverfew defaults, seed {args.seed}")
    warm = CompiledFeverfew(params, csr.offsets, csr.topics)
    warm.start()
    for cycle in (1, 2):
        warm.cycle(cycle)
    simulator = CompiledFeverfew(params, csr.offsets, csr.topics)
    clock = time.monotonic()
    simulator.start()
    start = time.monotonic() - clock
    compiled, seconds = [], []
    for cycle in range(1, args.cycles + 1):
        clock = time.monotonic()
        table = simulator.cycle(cycle)
        seconds.append(time.monotonic() - clock)
        if cycle <= args.python_cycles:
            compiled.append(table)
    print(f"compiled: start {start:.2f} s; cycles 1-{args.cycles}: {sum(seconds):.2f} s, "
          f"{np.mean(seconds):.3f} s a cycle (first {seconds[0]:.3f}, last {seconds[-1]:.3f})")  # fmt: skip
    yard_seconds = yardstick_cycles(pairs, nodes, params, args.cycles)
    print(f"yardstick (benchmarks/feverfew_yardstick.py): cycles 1-{args.cycles}: {sum(yard_seconds):.2f} s, "
          f"{np.mean(yard_seconds):.3f} s a cycle; the lab's compiled cycles are "
          f"{sum(seconds) / sum(yard_seconds):.2f} x the yardstick's")  # fmt: skip
    protocol = Feverfew(params, csr.offsets, csr.topics)
    for cycle, table in enumerate(python_cycles(protocol, nodes, args.python_cycles), 1):
        assert table.equals(compiled[cycle - 1]), f"cycle {cycle}: the compiled state differs"
    if args.python_cycles:
        print(f"python rows: cycles 1-{args.python_cycles} give the same states")


if __name__ == "__main__":
    main()
