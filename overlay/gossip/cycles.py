"""The cycle engine of the gossip simulators: one synchronous gossip cycle per superstep, as
DataFrames (our reading: docs/readings/feverfew.md#cycles).

A protocol (`CycleProtocol`, e.g. `overlay.gossip.feverfew.Feverfew`) says what one node does in
three steps; the engine moves the rows between them:

1. `act`, over the state rows of a partition: each node emits its requests, and its own row
   (kind SELF) carrying what it decided;
2. `serve`, per destination node, over its SELF row and every message addressed to it: answers,
   and the node's row after the passive side of its exchanges;
3. `finish`, per node, over that row and the answers to its own requests: the new state row
   with the cycle's measures.

Between two steps the messages are hash-partitioned by destination and sorted by
(dst, kind, src, seq), and a partition is walked group by group in one Python function
(`mapInArrow`): there is no per-group pandas frame, and the order a node sees its messages in is
fixed by the sort, so a seed gives one run on any layout. A cycle is one Spark job (two
shuffles), and its state is checkpointed locally so that lineage never grows with the cycles.
The protocol reaches the executors once, as a broadcast, and is built once per Python worker.

That is the *spark* regime. In the *memory* regime (`CycleRegime`: where the master runs in this
process and the instance is small enough) the same three steps run in the driver's Python
process on the whole state, with the same sort between them and the same Arrow round trips of
every row, so the protocol sees exactly the rows it would see on executors; each cycle's state is
handed to the caller as that Arrow table (`CycleState`), with a DataFrame of it made only when the
caller asks for one (a snapshot, a measure kept as rows): no shuffle or checkpoint per cycle.
"""

from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Protocol

import pyarrow as pa
from pyspark.sql import DataFrame

from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep, report

BATCH_ROWS = 4096
_ARROW = {
    "bigint": pa.int64(),
    "int": pa.int32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "array<bigint>": pa.list_(pa.int64()),
    "array<int>": pa.list_(pa.int32()),
    "binary": pa.binary(),
}


class CycleProtocol(Protocol):
    state_columns: tuple[tuple[str, str], ...]  # the state row (first column: the node id)
    message_columns: tuple[tuple[str, str], ...]  # message rows: dst, kind, src, seq, payload...
    measure_columns: tuple[tuple[str, str], ...]  # what `finish` adds to the state row

    def start(self, node: int) -> dict: ...

    def act(self, rows: Iterable[dict], cycle: int) -> Iterator[dict]: ...

    def serve(self, node: int, rows: list[dict], cycle: int) -> Iterator[dict]: ...

    def finish(self, node: int, rows: list[dict], cycle: int) -> dict: ...


def ddl(columns) -> str:
    return ", ".join(f"{name} {kind}" for name, kind in columns)


def arrow_schema(columns) -> pa.Schema:
    return pa.schema([(name, _ARROW[kind]) for name, kind in columns])


class CycleState:
    """One cycle's state as the caller of `CycleEngine.run` sees it: `frame`, its DataFrame, and
    in the memory regime `table`, the same rows as an Arrow table. The DataFrame of a memory
    cycle is made on first use: a cycle whose caller reads only the table makes none."""

    def __init__(self, frame: DataFrame | None = None, table: pa.Table | None = None, make=None) -> None:
        self._frame, self.table, self._make = frame, table, make

    @property
    def frame(self) -> DataFrame:
        if self._frame is None:
            self._frame = self._make()
        return self._frame


MEMORY, SPARK = "memory", "spark"
REGIMES = ("auto", MEMORY, SPARK)


@dataclass(frozen=True)
class CycleRegime:
    """Where a simulation's cycles run. `regime`: memory, spark, or auto: memory when the master
    runs in this process (`in_process`) and the instance has at most `memory_subscriptions`
    subscriptions, else spark (on a cluster the cycles stay on the executors). `memory_bytes`: what
    a memory-regime simulation's state may grow to (Feverfew's held BubbleSample copies)."""

    regime: str = "auto"
    memory_subscriptions: int = 1_000_000
    in_process: bool = True
    memory_bytes: int = 8 << 30

    def __post_init__(self) -> None:
        if self.regime not in REGIMES:
            raise ValueError(f"the cycle regime must be one of {', '.join(REGIMES)}, got {self.regime!r}")
        if self.memory_subscriptions < 0:
            raise ValueError(f"memory_subscriptions must be >= 0, got {self.memory_subscriptions}")

    def pick(self, subscriptions: int) -> str:
        """The regime a simulation of an instance with this many subscriptions runs in."""
        if self.regime != "auto":
            return self.regime
        return MEMORY if self.in_process and subscriptions <= self.memory_subscriptions else SPARK


AUTO = CycleRegime()  # the default: memory on an in-process master up to a million subscriptions

_BUILT: dict = {}  # token -> what `make(*args)` built, per Python worker
_KEEP = 4  # a simulation may run a few steps (e.g. Rappel's rounds and feeds); older ones go


def shared_builder(spark, make: Callable, args: tuple):
    """A broadcast of what to build on the executors; `built(shared)` builds it once per worker."""
    return spark.sparkContext.broadcast((uuid.uuid4().hex, make, args))


def built(shared):
    token, make, args = shared.value
    found = _BUILT.get(token)
    if found is None:
        while len(_BUILT) >= _KEEP:
            del _BUILT[next(iter(_BUILT))]
        found = _BUILT[token] = make(*args)
    return found


def to_batches(rows: Iterable[dict], schema: pa.Schema) -> Iterator[pa.RecordBatch]:
    rows = iter(rows)
    while chunk := list(itertools.islice(rows, BATCH_ROWS)):
        yield _batch(chunk, schema)


def _batch(rows: list[dict], schema: pa.Schema) -> pa.RecordBatch:
    """`pa.RecordBatch.from_pylist(rows, schema=schema)` (a missing key or None is null), built
    column by column: a list column from its flattened values and offsets, which is a quarter of
    the time for state rows that carry long lists."""
    arrays = []
    for field in schema:
        values = [row.get(field.name) for row in rows]
        if not pa.types.is_list(field.type):
            arrays.append(pa.array(values, field.type))
            continue
        offsets, flat, nulls = [0], [], []
        for value in values:
            nulls.append(value is None)
            if value is not None:
                flat.extend(value)
            offsets.append(len(flat))
        arrays.append(
            pa.ListArray.from_arrays(
                pa.array(offsets, pa.int32()),
                pa.array(flat, field.type.value_type),
                mask=pa.array(nulls) if any(nulls) else None,
            )
        )
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def rows_of(arrow: Iterable[pa.RecordBatch]) -> Iterator[dict]:
    for batch in arrow:
        yield from batch.to_pylist()


def _by_node(rows: Iterator[dict]) -> Iterator[tuple[int, list[dict]]]:
    for node, group in itertools.groupby(rows, key=lambda row: row["dst"]):
        yield node, list(group)


def _message_order(row: dict) -> tuple:
    return row["dst"], row["kind"], row["src"], row["seq"]


def _through_arrow(rows: Iterable[dict], schema: pa.Schema) -> list[dict]:
    """The rows as a step on an executor would read them back: through Arrow batches."""
    return list(rows_of(to_batches(rows, schema)))


class CompiledCycles(Protocol):
    """A protocol's cycles compiled over the whole network's state (the memory regime): `load`
    takes the state rows, `cycle(c)` runs cycle c and returns the state rows after it with the
    measure columns, as the three steps over rows would; `start` makes the cycle 0 state, which
    `state_table` gives as rows."""

    def start(self) -> None: ...

    def state_table(self) -> pa.Table: ...

    def load(self, table: pa.Table) -> None: ...

    def cycle(self, cycle: int) -> pa.Table: ...


class CycleEngine:
    """Runs cycles of one protocol. `make(*args)` builds the protocol on an executor (args: plain
    data such as the params and the subscriptions' arrays); `partitions`: of every shuffle;
    `lineage`: how each cycle's state is checkpointed (reliable on a cluster); `compiled`: makes
    the protocol's compiled cycles, which the memory regime runs instead of the three steps over
    rows (the same rows: the protocol's tests hold them equal)."""

    def __init__(
        self,
        spark,
        make: Callable[..., CycleProtocol],
        args: tuple,
        partitions: int,
        lineage: Lineage = LOCAL,
        regime: str = SPARK,
        compiled: Callable[[], CompiledCycles] | None = None,
    ) -> None:
        if regime not in (MEMORY, SPARK):
            raise ValueError(f"a cycle engine runs in the {MEMORY} or the {SPARK} regime, not {regime!r}")
        self.protocol = make(*args)
        self.compiled = compiled
        self.lineage = lineage
        self.regime = regime
        self.shared = shared_builder(spark, make, args)
        self.partitions = partitions
        self.state_schema = arrow_schema(self.protocol.state_columns)
        self.message_schema = arrow_schema(self.protocol.message_columns)
        self.result_columns = (*self.protocol.state_columns, *self.protocol.measure_columns)
        self.result_schema = arrow_schema(self.result_columns)

    def start(self, spark, nodes: int) -> DataFrame:
        """The cycle 0 state of nodes 0..nodes-1 (lazy; in the memory regime with compiled cycles,
        made in this process)."""
        if self.regime == MEMORY and self.compiled is not None:
            simulator = self.compiled()
            simulator.start()
            return spark.createDataFrame(simulator.state_table(), schema=ddl(self.protocol.state_columns))
        shared, schema = self.shared, self.state_schema

        def start(batches):
            protocol = built(shared)
            ids = (i for batch in batches for i in batch.column("id").to_pylist())
            yield from to_batches((protocol.start(i) for i in ids), schema)

        return spark.range(nodes, numPartitions=self.partitions).mapInArrow(start, ddl(self.protocol.state_columns))

    def _sorted(self, messages: DataFrame) -> DataFrame:
        return messages.repartition(self.partitions, "dst").sortWithinPartitions("dst", "kind", "src", "seq")

    def cycle(self, state: DataFrame, cycle: int) -> DataFrame:
        """The state after `cycle` (lazy): state columns plus the measure columns."""
        shared, message_schema, result_schema = self.shared, self.message_schema, self.result_schema
        state_names = [name for name, _ in self.protocol.state_columns]

        def act(batches):
            protocol = built(shared)
            yield from to_batches(protocol.act(rows_of(batches), cycle), message_schema)

        def serve(batches):
            protocol = built(shared)
            out = (m for node, rows in _by_node(rows_of(batches)) for m in protocol.serve(node, rows, cycle))
            yield from to_batches(out, message_schema)

        def finish(batches):
            protocol = built(shared)
            out = (protocol.finish(node, rows, cycle) for node, rows in _by_node(rows_of(batches)))
            yield from to_batches(out, result_schema)

        messages = state.select(*state_names).mapInArrow(act, ddl(self.protocol.message_columns))
        served = self._sorted(messages).mapInArrow(serve, ddl(self.protocol.message_columns))
        return self._sorted(served).mapInArrow(finish, ddl(self.result_columns))

    def run(
        self,
        state: DataFrame,
        first: int,
        last: int,
        on_cycle: Callable[[int, CycleState, float], dict | None] | None = None,
        on_step: OnStep | None = None,
    ) -> DataFrame:
        """Cycles first..last from `state`; each cycle's state is handed to
        `on_cycle(cycle, state, seconds)` (a `CycleState`) before the next one starts; the figures
        it returns go into the cycle's progress step. In the spark regime each cycle's state is
        checkpointed (one Spark job). In the memory regime the state is read into the driver once
        (the regime's bounded step: it was chosen because it fits) and each cycle's stays an Arrow
        table, a DataFrame made of it only when asked for. The last cycle's state as a DataFrame."""
        rows = simulator = None
        if self.regime == MEMORY and first <= last:
            table = state.select(*self.state_schema.names).toArrow()
            if self.compiled is not None:
                simulator = self.compiled()
                simulator.load(table)
            else:
                rows = table.to_pylist()
        current = CycleState(frame=state)
        for cycle in range(first, last + 1):
            clock = time.monotonic()
            if simulator is not None:
                current = self._state_of(state.sparkSession, simulator.cycle(cycle))
            elif rows is None:
                current = CycleState(frame=self.lineage.cut(self.cycle(current.frame, cycle)))
            else:
                current, rows = self._cycle_in_memory(state.sparkSession, rows, cycle)
            seconds = time.monotonic() - clock
            figures = (on_cycle(cycle, current, seconds) if on_cycle is not None else None) or {}
            report(
                on_step,
                "cycle",
                cycle - first + 1,
                total=last - first + 1,
                seconds=seconds,
                figures={"cycle": cycle, **figures},
            )
        return current.frame

    def _cycle_in_memory(self, spark, rows: list[dict], cycle: int) -> tuple[CycleState, list[dict]]:
        """One cycle on the driver (`cycle_in_memory`): the new state (its DataFrame made on first
        use), and its rows for the next cycle."""
        table = cycle_in_memory(self.protocol, rows, cycle)
        return self._state_of(spark, table), table.select(self.state_schema.names).to_pylist()

    def _state_of(self, spark, table: pa.Table) -> CycleState:
        """A memory cycle's state: its rows, and their DataFrame made on first use."""
        columns = ddl(self.result_columns)
        return CycleState(table=table, make=lambda: spark.createDataFrame(table, schema=columns))


def cycle_in_memory(protocol: CycleProtocol, rows: list[dict], cycle: int) -> pa.Table:
    """`cycle`'s three steps of `protocol` over every node's state rows in this process, with the
    sort and the Arrow round trips of the spark regime: the rows after it (state and measures)."""
    message_schema = arrow_schema(protocol.message_columns)
    result_schema = arrow_schema((*protocol.state_columns, *protocol.measure_columns))
    messages = _through_arrow(protocol.act(rows, cycle), message_schema)
    messages.sort(key=_message_order)
    served = _through_arrow(
        (m for node, group in _by_node(iter(messages)) for m in protocol.serve(node, group, cycle)),
        message_schema,
    )
    served.sort(key=_message_order)
    finished = (protocol.finish(node, group, cycle) for node, group in _by_node(iter(served)))
    return pa.Table.from_batches(list(to_batches(finished, result_schema)), schema=result_schema)
