"""Benchmark (not a test): Feverfew's cycle compiled (the memory regime) beside the protocol's three
steps over rows in Python (what the memory regime ran before, and what the spark regime's tasks
run), on one instance, in this process, no Spark.

Reads the instance's subscriptions from the lakehouse (deltalake, no JVM), runs `--cycles` cycles
compiled after a warm-up of two cycles on a copy (numba's cache loaded), then the first
`--python-cycles` cycles over rows; each Python cycle's state must equal the compiled one's.
Prints seconds per cycle for both and their ratio.

Usage:
  .venv/bin/python benchmarks/feverfew_speed.py --lakehouse /tmp/lh --instance tw-10k --cycles 40 --python-cycles 3
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.design_greedy import current_subscriptions
from overlay.design.classes import Subscriptions
from overlay.gossip import cycles as C
from overlay.gossip.feverfew import Feverfew, FeverfewParams
from overlay.gossip.feverfew_compiled import CompiledFeverfew


def python_cycles(protocol: Feverfew, nodes: int, cycles: int):
    """The engine's memory steps over rows (`CycleEngine._cycle_in_memory` without a session)."""
    rows = [protocol.start(i) for i in range(nodes)]
    messages_schema = C.arrow_schema(protocol.message_columns)
    result_schema = C.arrow_schema((*protocol.state_columns, *protocol.measure_columns))
    for cycle in range(1, cycles + 1):
        clock = time.monotonic()
        messages = C._through_arrow(protocol.act(rows, cycle), messages_schema)
        messages.sort(key=C._message_order)
        served = C._through_arrow(
            (m for node, group in C._by_node(iter(messages)) for m in protocol.serve(node, group, cycle)),
            messages_schema,
        )
        served.sort(key=C._message_order)
        finished = [protocol.finish(node, group, cycle) for node, group in C._by_node(iter(served))]
        table = pa.Table.from_batches(list(C.to_batches(finished, result_schema)), schema=result_schema)
        rows = table.select([name for name, _ in protocol.state_columns]).to_pylist()
        yield table, time.monotonic() - clock


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
    python = []
    for cycle, (table, spent) in enumerate(python_cycles(Feverfew(params, csr.offsets, csr.topics), nodes, args.python_cycles), 1):  # fmt: skip
        assert table.equals(compiled[cycle - 1]), f"cycle {cycle}: the compiled state differs"
        python.append(spent)
    if python:
        same = seconds[: len(python)]
        print(f"python rows: cycles 1-{len(python)}: {np.mean(python):.2f} s a cycle, the same states; "
              f"compiled on those cycles {np.mean(same):.3f} s: ratio {np.mean(python) / np.mean(same):.0f}x")  # fmt: skip


if __name__ == "__main__":
    main()
