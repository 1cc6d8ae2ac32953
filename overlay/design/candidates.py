"""The candidate table and the one Spark job of a greedy round.

`candidates(u, v, bound)` holds every pair that may still have a positive gain. It starts as the
shared-topic counts (`overlay.design.pairs`) and only loses rows. A round is one `mapInArrow`
pass over it: each partition refreshes the gains of its rows against the broadcast classes
(`overlay.design.classes`), keeps the eligible ones (the rule's `RowFilter`), sorts them by key
and returns its sample (the first `top` rows and the first `per_node` rows of every node), each
node's tail and the best row it left out (`overlay.design.settle`). Nothing else leaves the
executors, so the driver receives a bounded sample: at most partitions x (top + nodes x per_node)
rows.

*Kept rows* (the default, `state`): the first round's pass also writes each partition's rows to
its executor's disk (`overlay.design.round_state`), and the later rounds are small jobs of one
task per partition over those files, computing only the gains that can change the sample
(`overlay.design.lazy_round`); a partition whose files are missing makes the round read the
table again. What follows is the form in which every round reads the table (`state` None).

Rows that cannot gain any more (gain 0, or ends that can never be eligible again) are dropped
from the table when they make up half of it: that round's pass also writes the surviving rows,
with their fresh gains as bounds, to a local checkpoint (the next rounds read that).

A round may read only the rows between *open* nodes, those that can still be an end of an eligible
link in the round's phases (in a matching phase, the nodes not yet matched): a broadcast semi-join
in the JVM, so the other rows never cross to Python. Eligibility only shrinks within a phase, so
the rows left out are ineligible for the whole round and bound nothing; such a pass cannot
compact the table (it does not see every row) but counts the dead rows it read. Once the open
nodes are at most half of those of the rows it would read, the round reads those rows through a
*phase subset*: the semi-joins' output in proportionally fewer partitions (a task costs a fixed
tenth of a second or more), cached as the pass reads it (so it costs no job of its own); while
the open nodes only shrink, the next rounds of the phase read the subset instead of the whole
table. A subset is released (unpersisted) once a smaller one is filled or the phase ends, so it
does not crowd the table out of memory; its lineage is a few semi-joins over the table's local
checkpoint, so an evicted block is recomputed from there.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterator

import numpy as np
import pyarrow as pa
from pyspark import Broadcast, StorageLevel, TaskContext
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design import kernels
from overlay.design.eligibility import RowFilter
from overlay.design.lazy_round import lazy_sample
from overlay.design.round_state import RoundState
from overlay.design.settle import Sample
from overlay.lineage import LOCAL, Lineage

log = logging.getLogger(__name__)
BOUND = "bound"
KIND, NODE = "_kind", "_node"
ROW, SAMPLED, TAIL, LEFT, ALIVE = 0, 1, 2, 3, 4
SUBSET_MIN_ROWS = 1_000_000
MAX_ROWS_PER_TASK = 25_000_000  # candidate rows one round task reads, at most (about 1.5 GB of Python arrays)
ROUND_SCHEMA = f"{KIND} int, {NODE} long, {S.U} long, {S.V} long, {BOUND} long"


def _batch(kind: int, nodes, us, vs, bounds) -> pa.RecordBatch:
    size = len(us)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(size, kind, dtype=np.int32)),
            pa.array(np.asarray(nodes, dtype=np.int64) if nodes is not None else np.full(size, -1, dtype=np.int64)),
            pa.array(np.asarray(us, dtype=np.int64)),
            pa.array(np.asarray(vs, dtype=np.int64)),
            pa.array(np.asarray(bounds, dtype=np.int64)),
        ],
        names=[KIND, NODE, S.U, S.V, BOUND],
    )


def key_order(us: np.ndarray, vs: np.ndarray, gains: np.ndarray) -> np.ndarray:
    """The order of rows by key (gain desc, u, v): a linear counting sort when they come in (u, v)
    order, as `overlay.design.pairs` writes them and compaction keeps them."""
    if not in_pair_order(us, vs):
        return np.lexsort((vs, us, -gains))
    return kernels.order_by_gain(gains)


def in_pair_order(us: np.ndarray, vs: np.ndarray) -> bool:
    return len(us) < 2 or bool(np.all((us[1:] > us[:-1]) | ((us[1:] == us[:-1]) & (vs[1:] > vs[:-1]))))


def columns(batches: Iterator[pa.RecordBatch], names) -> list[np.ndarray]:
    """A partition's Arrow batches as one int64 array per column."""
    batches = list(batches)
    return [
        np.concatenate([b.column(name).to_numpy() for b in batches] or [np.zeros(0, dtype=np.int64)]) for name in names
    ]


def round_in_partition(
    subscriptions: Broadcast,
    root: Broadcast,
    row_filter: RowFilter,
    nodes: int,
    per_node: int,
    top: int,
    keep: bool,
):
    """The executor side of a round (a `mapInArrow` function)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        us, vs = columns(batches, (S.U, S.V))
        csr = subscriptions.value
        # compiled for writable arrays; never written
        label, head = (np.require(array, requirements="W") for array in root.value)
        gains = kernels.pair_gains(csr.offsets, csr.topics, label, head, us, vs)
        alive = (gains > 0) & ~row_filter.dead(us, vs)
        eligible = np.flatnonzero(alive & row_filter.eligible(us, vs))
        eligible = eligible[key_order(us[eligible], vs[eligible], gains[eligible])]
        eu, ev, eg = us[eligible], vs[eligible], gains[eligible]
        take, tail, first_left = kernels.sample_in_key_order(eu, ev, nodes, per_node, top)
        yield _batch(SAMPLED, None, eu[take], ev[take], eg[take])
        with_tail = np.flatnonzero(tail >= 0)
        rows = tail[with_tail]
        yield _batch(TAIL, with_tail, eu[rows], ev[rows], eg[rows])
        if first_left >= 0:
            yield _batch(
                LEFT,
                None,
                eu[first_left : first_left + 1],
                ev[first_left : first_left + 1],
                eg[first_left : first_left + 1],
            )
        yield _batch(ALIVE, [int(alive.sum())], [-1], [-1], [len(us)])
        if keep:
            yield _batch(ROW, None, us[alive], vs[alive], gains[alive])

    return run


def lazy_parts(csr, root_value, row_filter: RowFilter, us, vs, bounds, nodes: int, per_node: int, top: int):
    """One partition's round over rows that carry bounds, in (u, v) order (`lazy_round`): its
    sample, tails, first row left out, the rows still alive and the gains computed. Writes the
    fresh gains, and 0 for rows that can never be eligible again, into `bounds`."""
    label, head = (np.require(array, requirements="W") for array in root_value)
    dead = row_filter.dead(us, vs)
    if dead.any():
        bounds[dead] = 0
    order = kernels.order_by_gain(bounds)  # stable: (u, v) order within a bound
    eligible = row_filter.eligible(us, vs)
    taken, tail_row, left, visited = lazy_sample(
        csr.offsets,
        csr.topics,
        label,
        head,
        us,
        vs,
        bounds,
        order,
        eligible,
        nodes,
        per_node,
        top,
    )
    with_tail = np.flatnonzero(tail_row >= 0)
    rows = tail_row[with_tail]
    lefts = np.array([left] if left >= 0 else [], dtype=np.int64)
    return {  # a returned row's gain is its bound now
        SAMPLED: (None, us[taken], vs[taken], bounds[taken]),
        TAIL: (with_tail, us[rows], vs[rows], bounds[rows]),
        LEFT: (None, us[lefts], vs[lefts], bounds[lefts]),
        ALIVE: ([int(np.count_nonzero(bounds))], [-1], [-1], [visited]),
    }


def _keep_compact(state: RoundState, partition: int, us, vs, bounds, alive: int) -> None:
    """Rewrite a partition's files without its dead rows once they are half of it (`alive`:
    rows with a positive bound). Bounds written in place need no flush: the next round's task
    maps the same pages."""
    if 2 * alive <= len(bounds):
        keep = bounds > 0
        state.save(partition, us[keep], vs[keep], bounds[keep])


def kept_round_in_partition(
    state: RoundState,
    subscriptions: Broadcast,
    root: Broadcast,
    row_filter: RowFilter,
    nodes: int,
    per_node: int,
    top: int,
):
    """The executor side of a round over the rows its partition kept (`round_state`): the parts
    of `lazy_parts`, or None when the files are not on this machine."""

    def run(partition: int, _) -> Iterator:
        loaded = state.load(partition)
        if loaded is None:
            yield partition, None
            return
        us, vs, bounds = loaded
        parts = lazy_parts(
            subscriptions.value, root.value, row_filter, us, vs, np.asarray(bounds), nodes, per_node, top
        )
        _keep_compact(state, partition, us, vs, bounds, parts[ALIVE][0][0])
        yield partition, parts

    return run


def keeping_round_in_partition(
    state: RoundState,
    subscriptions: Broadcast,
    root: Broadcast,
    row_filter: RowFilter,
    nodes: int,
    per_node: int,
    top: int,
):
    """The executor side of a round that reads the table and keeps its partition's rows in
    files for the next rounds (a `mapInArrow` function; the ALIVE row's u says whether they
    were written)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        us, vs, bounds = columns(batches, (S.U, S.V, BOUND))
        if not in_pair_order(us, vs):
            by_pair = np.lexsort((vs, us))  # coalesced partitions: ordered runs, not one order
            us, vs, bounds = us[by_pair], vs[by_pair], bounds[by_pair]
        bounds = bounds.copy()
        parts = lazy_parts(subscriptions.value, root.value, row_filter, us, vs, bounds, nodes, per_node, top)
        partition = TaskContext.get().partitionId()
        try:
            state.drop_stale()
            alive = bounds > 0
            state.save(partition, us[alive], vs[alive], bounds[alive])
            saved = 1
        except OSError:
            saved = 0
        for kind, (node, u, v, bound) in parts.items():
            if kind == ALIVE:
                u = [saved]
            yield _batch(kind, node, u, v, bound)

    return run


class CandidateTable:
    """The candidate pairs of a run, on the executors; `sample` runs a round's Spark job."""

    def __init__(
        self,
        pairs: DataFrame,
        subset_min_rows: int = SUBSET_MIN_ROWS,
        task_slots: int | None = None,
        state: RoundState | None = None,
        lineage: Lineage = LOCAL,
    ) -> None:
        """`pairs`: (u, v, bound), u < v, each pair once (`overlay.design.pairs` cuts them by
        counting work). With `task_slots` (tasks that run at once) the rounds read them in as few
        partitions as that allows, at most `MAX_ROWS_PER_TASK` rows each: every partition of a
        round costs a task's fixed work and sends the driver its own sample. Phase subsets are
        made only of tables of at least `subset_min_rows` rows (below, they cost more than they
        save). With `state`, each partition keeps its rows on its executor between rounds
        (`round_state`) and a round reads the table only when a partition's files are missing.
        `lineage`: how the table and its compactions are checkpointed (reliable on a cluster)."""
        self.subset_min_rows, self.task_slots, self.lineage = subset_min_rows, task_slots, lineage
        self.table = lineage.cut(pairs.select(S.U, S.V, BOUND))
        self.partitions = self.table.rdd.getNumPartitions()
        # Known from the rounds' passes (or counted here): the table's rows at the last full pass,
        # and how many of them are known dead (a pass over the open nodes' rows can find more: the
        # rows are the same until the next full pass, so its count is a lower bound).
        self.rows: int | None = None
        self.dead = 0
        if task_slots is not None and self.partitions > task_slots:
            self.rows = rows = self.table.count()
            waves = max(1, math.ceil(rows / (task_slots * MAX_ROWS_PER_TASK)))
            if waves * task_slots < self.partitions:
                self.partitions = waves * task_slots
                self.table = self.table.coalesce(self.partitions)  # reads the checkpoint's blocks, no recount
        self.last_read, self.last_from_subset, self.last_received = 0, False, 0  # of the last pass
        # The phase subset: the rows between the nodes open when it was made (`subset_open`).
        self.subset: DataFrame | None = None
        self.subset_open: np.ndarray | None = None
        self.retired: list[DataFrame] = []  # subsets to release once the pass that replaces them ran
        self.state = state
        self.kept = False  # every partition wrote its files in the last pass over the table

    def sample(
        self,
        subscriptions: Broadcast,
        root: Broadcast,
        row_filter: RowFilter,
        nodes: int,
        per_node: int,
        top: int,
        open_nodes: np.ndarray | None = None,
    ) -> Sample:
        """One round's job: refreshed gains, the sample and the bounds of the rest. With
        `open_nodes` (node ids) only the rows between two of them are read (from the phase subset
        while they are among its nodes), and the table is not compacted: the pass does not see
        every row."""
        if self.state is not None:
            return self._sample_kept(subscriptions, root, row_filter, nodes, per_node, top)
        full = open_nodes is None
        self.last_from_subset = False
        if full:
            self._retire()  # a new phase: nodes open again
        keep = full and self.rows is not None and self.dead * 2 >= self.rows
        source = self.table if full else self._rows_between(open_nodes, nodes)
        output = source.mapInArrow(
            round_in_partition(subscriptions, root, row_filter, nodes, per_node, top, keep), ROUND_SCHEMA
        )
        if keep:
            output = self.lineage.cut(output)
            self.table = output.filter(F.col(KIND) == ROW).select(S.U, S.V, BOUND)
            output = output.filter(F.col(KIND) != ROW)
        found = output.toArrow()
        self.last_received = found.num_rows
        for frame in self.retired:
            frame.unpersist()
        self.retired = []
        parts = arrow_parts(found)
        alive, read = int(np.sum(parts[ALIVE][0])), int(np.sum(parts[ALIVE][3]))
        self.last_read = read
        if keep:
            self.rows, self.dead = alive, 0  # the table is now the rows alive
        elif full:
            self.rows, self.dead = read, read - alive
        else:
            self.dead = max(self.dead, read - alive)
        return parts_sample(parts, nodes, per_node, top)

    def _sample_kept(self, subscriptions, root, row_filter: RowFilter, nodes: int, per_node: int, top: int) -> Sample:
        """A round over the partitions' kept rows; a pass over the table (which keeps them) on
        the first round and whenever a partition's files are missing."""
        parts = None
        if self.kept:
            context = self.table.sparkSession.sparkContext
            run = kept_round_in_partition(self.state, subscriptions, root, row_filter, nodes, per_node, top)
            found = context.parallelize(range(self.partitions), self.partitions).mapPartitionsWithIndex(run).collect()
            if all(part is not None for _, part in found):
                parts = merge_parts([part for _, part in found])
            else:
                missing = sorted(partition for partition, part in found if part is None)
                log.info("rounds: partitions %s kept no rows on their machine; this round reads the table", missing)
        if parts is None:
            output = self.table.mapInArrow(
                keeping_round_in_partition(self.state, subscriptions, root, row_filter, nodes, per_node, top),
                ROUND_SCHEMA,
            )
            found = output.toArrow()
            parts = arrow_parts(found)
            self.kept = bool(np.all(parts[ALIVE][1] == 1)) and len(parts[ALIVE][1]) == self.partitions
        self.rows = int(np.sum(parts[ALIVE][0]))
        self.last_read = int(np.sum(parts[ALIVE][3]))
        self.last_received = sum(len(parts[kind][1]) for kind in (SAMPLED, TAIL, LEFT))
        return parts_sample(parts, nodes, per_node, top)

    def release(self) -> None:
        """Remove the partitions' kept rows (a small job: each machine removes what it holds)."""
        if self.state is None:
            return
        state = self.state
        self.kept = False
        try:
            context = self.table.sparkSession.sparkContext
            context.parallelize(range(self.partitions), self.partitions).foreach(state.drop)
        except Exception as error:
            log.warning("rounds: the kept rows of %s were not removed from the executors: %s", state.token, error)
        finally:
            state.drop()

    def _rows_between(self, open_nodes: np.ndarray, nodes: int) -> DataFrame:
        """The rows between `open_nodes`, from the phase subset when it holds them all; a new,
        smaller subset when they are at most half the nodes of the rows they come from."""
        in_subset = self.subset is not None and bool(self.subset_open[open_nodes].all())
        base, base_open = (self.subset, int(self.subset_open.sum())) if in_subset else (self.table, nodes)
        rows = between(base, open_nodes)
        self.last_from_subset = in_subset
        if 2 * len(open_nodes) > base_open or (self.rows or 0) < self.subset_min_rows:
            return rows
        share = len(open_nodes) / base_open  # rows scale with its square
        partitions = base.rdd.getNumPartitions()
        self._retire()
        # Proportionally fewer partitions, but not fewer than the tasks that run at once.
        fewer = min(partitions, max(self.task_slots or 1, math.ceil(partitions * share * share)))
        self.subset = rows.coalesce(fewer).persist(StorageLevel.MEMORY_AND_DISK)
        self.subset_open = np.zeros(nodes, dtype=bool)
        self.subset_open[open_nodes] = True
        self.last_from_subset = True
        return self.subset

    def _retire(self) -> None:
        if self.subset is not None:
            self.retired.append(self.subset)
        self.subset = self.subset_open = None


def arrow_parts(found: pa.Table) -> dict:
    """A round's output rows by kind: (nodes, u, v, bounds) arrays each."""
    kind = found.column(KIND).to_numpy()
    column = {name: found.column(name).to_numpy() for name in (NODE, S.U, S.V, BOUND)}
    return {
        k: (column[NODE][kind == k], column[S.U][kind == k], column[S.V][kind == k], column[BOUND][kind == k])
        for k in (SAMPLED, TAIL, LEFT, ALIVE)
    }


def merge_parts(many: list[dict]) -> dict:
    """The parts of several partitions (`lazy_parts`) as one, column by column."""
    merged = {}
    for kind in (SAMPLED, TAIL, LEFT, ALIVE):
        columns = []
        for i in range(4):
            pieces = [np.asarray(part[kind][i], dtype=np.int64) for part in many if part[kind][i] is not None]
            columns.append(np.concatenate(pieces) if pieces else np.zeros(0, dtype=np.int64))
        merged[kind] = tuple(columns)
    return merged


def parts_sample(parts: dict, nodes: int, per_node: int, top: int) -> Sample:
    _, us, vs, gains = parts[SAMPLED]
    _, tail_us, tail_vs, tail_gains = parts[TAIL]
    _, left_us, left_vs, left_gains = parts[LEFT]
    return global_sample(
        np.concatenate([us, tail_us]),
        np.concatenate([vs, tail_vs]),
        np.concatenate([gains, tail_gains]),
        (left_us, left_vs, left_gains),
        nodes,
        per_node,
        top,
    )


def between(table: DataFrame, open_nodes: np.ndarray) -> DataFrame:
    """The rows of `table` whose two ends are in `open_nodes`: two broadcast semi-joins, which keep
    the table's partitions and row order (the driver's node list is bounded by the nodes)."""
    ends = table.sparkSession.createDataFrame(pa.table({S.U: pa.array(open_nodes, type=pa.int64())}))
    ends = F.broadcast(ends)
    both = table.join(ends, S.U, "left_semi").join(ends.withColumnRenamed(S.U, S.V), S.V, "left_semi")
    return both.select(S.U, S.V, BOUND)


def global_sample(us, vs, gains, lefts, nodes: int, per_node: int, top: int) -> Sample:
    """The round's sample as if the table were one partition: the best `top` rows and the best
    `per_node` rows of every node, with the exact tails and best row left out.

    The partitions' samples and tail rows hold every row of these (a node's best per_node + 1
    rows overall are among its best per_node + 1 in some partition), and each partition's best
    unsampled row bounds the rows it did not send. So the sample, and a relaxed run, do not
    depend on how the table is partitioned."""
    codes = us * max(1, nodes) + vs
    _, first = np.unique(codes, return_index=True)
    us, vs, gains = us[first], vs[first], gains[first]
    order = np.lexsort((vs, us, -gains))
    us, vs, gains = us[order], vs[order], gains[order]
    take, tail, first_unsampled = kernels.sample_in_key_order(us, vs, nodes, per_node, top)
    left_us, left_vs, left_gains = lefts
    if first_unsampled >= 0:
        left_us = np.append(left_us, us[first_unsampled])
        left_vs = np.append(left_vs, vs[first_unsampled])
        left_gains = np.append(left_gains, gains[first_unsampled])
    first_left = None
    if len(left_us):
        best = np.lexsort((left_vs, left_us, -left_gains))[0]
        first_left = (int(left_gains[best]), int(left_us[best]), int(left_vs[best]))
    tail_nodes = np.flatnonzero(tail >= 0)
    rows = tail[tail_nodes]
    return Sample.build(us[take], vs[take], gains[take], tail_nodes, gains[rows], us[rows], vs[rows], first_left)
