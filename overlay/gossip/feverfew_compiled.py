"""Feverfew's cycles in the memory regime: the compiled protocol (`overlay.gossip.feverfew_kernel`)
over the whole network, its state handed over as the Arrow rows the cycle engine's Python protocol
gives (`overlay.gossip.feverfew`'s state and measure columns), so snapshots, measures and the
run's links are made as from any cycle."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from overlay.design.memory import human_bytes
from overlay.errors import InputError
from overlay.gossip import feverfew_kernel as K
from overlay.gossip.cycles import arrow_schema
from overlay.gossip.feverfew import MEASURE_COLUMNS, STATE_COLUMNS, FeverfewParams
from overlay.gossip.theory import need, ttl0

RESULT_SCHEMA = arrow_schema((*STATE_COLUMNS, *MEASURE_COLUMNS))
STATE_SCHEMA = arrow_schema(STATE_COLUMNS)
_EMPTY = np.zeros(0, np.int64)
# What a held copy costs in a cycle: its message row and order (80 bytes), held at both ends as
# three int64 values with room to grow, and its three state columns.
COPY_BYTES = 200


def _list(offsets: np.ndarray, values: np.ndarray, kind: pa.DataType) -> pa.ListArray:
    return pa.ListArray.from_arrays(pa.array(offsets.astype(np.int32)), pa.array(values, kind))


def _rows_of(matrix: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(offsets, values) of the first counts[p] entries of each row."""
    mask = np.arange(matrix.shape[1]) < counts[:, None]
    return np.concatenate([[0], np.cumsum(counts)]), matrix[mask]


def _matrix(column: pa.ListArray, width: int) -> tuple[np.ndarray, np.ndarray]:
    """A list column as fixed-width rows and counts (`width` at least the longest list)."""
    offsets = np.asarray(column.offsets, dtype=np.int64)
    counts = np.diff(offsets)
    values = column.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    matrix = np.full((len(counts), width), K.NONE, np.int64)
    rows = np.repeat(np.arange(len(counts)), counts)
    matrix[rows, np.arange(len(values)) - offsets[rows]] = values
    return matrix, counts


class CompiledFeverfew:
    """Feverfew on `offsets`/`topics` (the subscriptions' CSR, topics ascending within a node),
    the whole network's state held as arrays between cycles."""

    def __init__(
        self, params: FeverfewParams, offsets: np.ndarray, topics: np.ndarray, memory_bytes: int | None = None
    ) -> None:
        params.check()
        self.memory_bytes = memory_bytes
        self.params = params
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self.topics = np.ascontiguousarray(topics, dtype=np.int64)
        self.network = len(offsets) - 1
        sizes = np.bincount(self.topics) if len(self.topics) else _EMPTY
        self.need = np.array([need(int(n)) if n else 0 for n in sizes], np.int64)
        ttls = {int(n): ttl0(self.network, int(n), params.shuffle) for n in set(sizes.tolist()) if n > 1}
        self.ttl = np.array([ttls.get(int(n), 0) for n in sizes], np.int64)
        self.slot_node = np.repeat(np.arange(self.network, dtype=np.int64), np.diff(self.offsets))
        self.state = None

    def start(self) -> None:
        """Every node's cycle 0 state."""
        p, n = self.params, self.network
        rv_id, rv_age = np.full((n, p.random_view), K.NONE, np.int64), np.zeros((n, p.random_view), np.int64)
        rv_n = np.zeros(n, np.int64)
        K.bootstrap(p.seed, n, p.random_view, rv_id, rv_age, rv_n)
        empty = np.zeros(n + 1, np.int64)
        self._hold(
            rv_id, rv_age, rv_n,
            np.full((n, p.similar_view), K.NONE, np.int64), np.zeros(n, np.int64),
            np.full((n, p.agent_view), K.NONE, np.int64), np.full((n, p.agent_view), K.NONE, np.int64),
            np.zeros(n, np.int64),
            K.ragged(empty, _EMPTY, n), K.ragged(empty, _EMPTY, n),
            K.ragged(empty, _EMPTY, n), K.ragged(empty, _EMPTY, n),
            np.tile(np.array([K.NONE, 0, K.NONE, 0], np.int64), (len(self.topics), 1)),
        )  # fmt: skip

    def load(self, table: pa.Table) -> None:
        """The state of every node from its rows (`STATE_COLUMNS`, any order)."""
        p, n = self.params, self.network
        table = table.sort_by("node_id")
        if table.num_rows != n or table.column("node_id").to_numpy()[-1] != n - 1:
            raise ValueError(f"a state has one row per node 0..{n - 1}, got {table.num_rows} rows")

        def col(name: str) -> pa.Array:
            return table.column(name).combine_chunks()

        rv_id, rv_n = _matrix(col("rv"), p.random_view)
        rv_age, _ = _matrix(col("rv_age"), p.random_view)
        sv_id, sv_n = _matrix(col("sv"), p.similar_view)
        av_o, av_n = _matrix(col("av_origin"), p.agent_view)
        av_t, _ = _matrix(col("av_topic"), p.agent_view)

        def ragged(*names):
            columns = [col(name) for name in names]
            offsets = np.asarray(columns[0].offsets, dtype=np.int64) * len(names)
            values = np.stack([c.flatten().to_numpy(zero_copy_only=False).astype(np.int64) for c in columns], axis=1)
            return K.ragged(offsets, values.ravel(), n)

        reported = ragged("reported_origin", "reported_other")
        own = np.tile(np.array([K.NONE, 0, K.NONE, 0], np.int64), (len(self.topics), 1))
        topics = col("own_topic")
        owner = np.repeat(np.arange(n, dtype=np.int64), np.diff(np.asarray(topics.offsets, dtype=np.int64)))
        span = int(self.topics.max(initial=0)) + 1  # (node, topic) packed, in the slots' order
        packed = self.slot_node * span + self.topics
        wanted = owner * span + topics.flatten().to_numpy(zero_copy_only=False)
        slots = np.searchsorted(packed, wanted)
        for j, name in enumerate(("own_started", "own_ttl", "own_first_match", "own_matches")):
            own[slots, j] = col(name).flatten().to_numpy(zero_copy_only=False)
        self._hold(
            rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n,
            ragged("lv"), ragged("mb"), ragged("held_origin", "held_topic", "held_ttl"), reported, own,
        )  # fmt: skip

    def _hold(self, rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n, lv, mb, held, reported, own) -> None:
        keys = K.reported_keys(reported[0], reported[1], self.network)
        self.state = (
            rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n,
            lv[0], lv[1], mb[0], mb[1], held[0], held[1], reported[0], reported[1], own, keys,
        )  # fmt: skip

    def cycle(self, c: int) -> pa.Table:
        """Cycle c on the held state; the state after it with the cycle's measures."""
        p, n = self.params, self.network
        self._check_budget(c)
        work = (
            np.full(n, K.NONE, np.int64),
            np.full(n, K.NONE, np.int64),
            np.zeros((n, max(p.shuffle - 1, 1)), np.int64),
            np.zeros(n, np.int64),
            np.zeros(n + 1, np.int64),
            np.zeros((n, 4), np.int64),
        )
        uniform = p.pss == "uniform"
        rows, pay_ids, pay_ages, buf, copies = K.act(
            c, p.seed, uniform, p.shuffle, p.bubble, p.bubble_start,
            self.offsets, self.topics, self.need, self.ttl, self.state, work,
        )  # fmt: skip
        order, starts = K.by_destination(rows, n)
        answers, ans_ids, ans_ages = K.serve(
            c, p.seed, p.shuffle, p.random_view, p.agent_view, self.offsets, self.topics,
            rows, order, pay_ids, pay_ages, buf, copies, self.state, work,
        )  # fmt: skip
        ans_order, ans_starts = K.by_destination(answers, n)
        covered, needy = np.zeros(len(self.topics), np.bool_), np.zeros(n, np.int64)
        K.finish(
            c, (p.random_view, p.similar_view, p.delta, p.clear_similar), self.offsets, self.topics, self.need,
            rows, order, starts, pay_ids, answers, ans_order, ans_starts, ans_ids, ans_ages,
            buf, self.state, work, covered, needy,
        )  # fmt: skip
        return self.table(covered, needy, work[5])

    def _check_budget(self, c: int) -> None:
        """Refuse a cycle whose BubbleSample copies would not fit `memory_bytes`: every held copy
        is sent and kept, so the copies double each cycle until their TTL runs out."""
        held = int(self.state[13].sum()) // 3
        if self.memory_bytes is None or held * COPY_BYTES <= self.memory_bytes:
            return
        raise InputError(
            f"cycle {c} would carry {held:,} BubbleSample copies (about {human_bytes(held * COPY_BYTES)}; they "
            f"double every cycle until their TTL runs out), past the simulation's memory budget of "
            f"{human_bytes(self.memory_bytes)} (simulate.memory_budget in conf/lab.yaml): run fewer cycles, start "
            "the bubble later (--bubble-start), or raise the budget on a machine that has the memory"
        )

    def state_table(self) -> pa.Table:
        """The held state as rows (`STATE_COLUMNS`, lists as the Python protocol orders them)."""
        columns = self._state_columns()
        return pa.table([columns[f.name] for f in STATE_SCHEMA], schema=STATE_SCHEMA)

    def table(self, covered: np.ndarray, needy: np.ndarray, sent: np.ndarray) -> pa.Table:
        """`state_table` with the cycle's measures."""
        n = self.network
        columns = self._state_columns()
        covered_offsets = np.concatenate([[0], np.cumsum(np.bincount(self.slot_node[covered], minlength=n))])
        columns["covered"] = _list(covered_offsets, self.topics[covered], pa.int64())
        columns["needy"] = pa.array(needy.astype(np.int32))
        columns["sent"] = _list(np.arange(0, 4 * n + 1, 4), sent.ravel(), pa.int32())
        return pa.table([columns[f.name] for f in RESULT_SCHEMA], schema=RESULT_SCHEMA)

    def _state_columns(self) -> dict:
        (rv_id, rv_age, rv_n, sv_id, sv_n, av_o, av_t, av_n, lv, lv_n, mb, mb_n, held, held_n, reported, rep_n, own, _) = self.state  # fmt: skip
        n = self.network
        i64, i32 = pa.int64(), pa.int32()
        order = np.argsort(np.where(np.arange(rv_id.shape[1]) < rv_n[:, None], rv_id, np.iinfo(np.int64).max), axis=1)
        rv_offsets, rv_values = _rows_of(np.take_along_axis(rv_id, order, axis=1), rv_n)
        _, age_values = _rows_of(np.take_along_axis(rv_age, order, axis=1), rv_n)
        columns = {"node_id": pa.array(np.arange(n, dtype=np.int64)), "rv": _list(rv_offsets, rv_values, i64)}
        columns["rv_age"] = _list(rv_offsets, age_values, i32)
        columns["sv"] = _list(*_rows_of(sv_id, sv_n), i64)
        columns["lv"] = _list(*K.flat(lv, lv_n, False, 1), i64)
        columns["mb"] = _list(*K.flat(mb, mb_n, True, 1), i64)
        columns["av_origin"] = _list(*_rows_of(av_o, av_n), i64)
        columns["av_topic"] = _list(*_rows_of(av_t, av_n), i64)
        for names, lists, counts, width in (
            (("reported_origin", "reported_other"), reported, rep_n, 2),
            (("held_origin", "held_topic", "held_ttl"), held, held_n, 3),
        ):
            offsets, values = K.flat(lists, counts, width == 2, width)
            for j, name in enumerate(names):
                columns[name] = _list(offsets // width, values[j::width], i32 if name == "held_ttl" else i64)
        started = own[:, 0] != K.NONE
        own_offsets = np.concatenate([[0], np.cumsum(np.bincount(self.slot_node[started], minlength=n))])
        columns["own_topic"] = _list(own_offsets, self.topics[started], i64)
        for j, name in enumerate(("own_started", "own_ttl", "own_first_match", "own_matches")):
            columns[name] = _list(own_offsets, own[started, j], i32)
        return columns
