"""The simulate job: a gossip-built overlay (Feverfew, SCIS'14) as a run of `overlay_runs`.

Storage protocol, as for designs (`pipelines.design`): the run row is claimed first (status
`running`, an attempt token); every `snapshot_every` cycles (and at the last) the cycles since
the last snapshot are committed: their `gossip_cycles`, `gossip_coverage` and `gossip_diffusions`
rows, then the whole state in `gossip_states`, which is the commit point. A simulation that
stops (a crash, kill -9) is resumed by the same command from its last snapshot; rows of later
cycles are debris and are deleted first. The simulation is a function of the seed, so a resumed
run ends in the same state as an uninterrupted one. At the end, the ln-covered views' links go to
`overlay_edges`, the run is evaluated like any design (TCCs, TcoSuppR, diameters) and only then
marked complete: `evaluate`, `export` and `resilience` take it like any other overlay.
"""

from __future__ import annotations

import contextlib
import json
import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.design.baselines import numbered_link_table
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip.baselines import CANDIDATES, VIEW_SCHEMA, chosen_views
from overlay.gossip.cycles import CycleState
from overlay.gossip.feverfew import (
    PSS_KINDS,
    STATE_COLUMNS,
    FeverfewParams,
    feverfew_engine,
)
from overlay.gossip.measures import (
    coverage_of,
    cycle_summary,
    diffusion_events,
    diffusions_of,
    sizes_of,
    summary_of,
    topic_coverage,
    view_link_pairs,
    view_links,
    view_summary,
)
from pipelines import ledger
from pipelines.design import claim_run
from pipelines.lakehouse import Lakehouse, UnknownRunError
from pipelines.overlays import _now, check_run_id, evaluate_run
from pipelines.progress import Progress
from pipelines.spark import jobs_started, task_slots

log = logging.getLogger(__name__)

PROTOCOLS = registry.protocols(registry.OVERLAY_GOSSIP, simulator=registry.FEVERFEW_CYCLES)
GOSSIP_PROTOCOLS = tuple(p for p in PROTOCOLS if registry.PROTOCOLS[p].cycles)  # simulated cycles
GLOBAL_PROTOCOLS = tuple(p for p in PROTOCOLS if p not in GOSSIP_PROTOCOLS)  # full knowledge: no cycles
RULE = {
    "feverfew": "feverfew",
    "global-feverfew": "feverfew",
    "spidercast-gossip": "spidercast",
    "spidercast-global": "spidercast",
}
# What `simulate` prints of the cycles: every `PRINT_EVERY`-th and the last.
PRINT_EVERY = 5
CYCLE_COLUMNS = (
    S.CYCLE,
    S.COVERED_SHARE,
    S.COVERED_NODES,
    S.VIEW_AVG,
    S.CYCLON_MESSAGES,
    S.GOSSIP_MESSAGES,
    S.COPIES,
    S.MATCHES,
    S.SECONDS,
)
SNAPSHOT_EVERY = 10
CYCLE_TABLES = (S.GOSSIP_CYCLES, S.GOSSIP_COVERAGE, S.GOSSIP_DIFFUSIONS)


@dataclass(frozen=True)
class SimulateRequest:
    """One gossip simulation; `algorithm` names the protocol in `overlay_runs`."""

    instance: str
    protocol: str
    cycles: int = 40
    seed: int = 1
    bubble_start: int = 30
    pss: str = "cyclon"
    delta: int = 1
    clear_similar: bool = False

    def __post_init__(self) -> None:
        if self.protocol in GLOBAL_PROTOCOLS:  # no gossip: the cycle settings do not apply
            object.__setattr__(self, "cycles", 0)

    @property
    def algorithm(self) -> str:
        return self.protocol

    @property
    def gossips(self) -> bool:
        return self.protocol in GOSSIP_PROTOCOLS

    def check(self) -> None:
        """Every check that needs no Spark."""
        if self.protocol not in PROTOCOLS:
            raise InputError(f"unknown protocol '{self.protocol}'; choose one of {', '.join(PROTOCOLS)}")
        if self.gossips and self.cycles < 1:
            raise InputError(f"--cycles must be at least 1, got {self.cycles}")
        if self.pss not in PSS_KINDS:
            raise InputError(f"--pss must be one of {', '.join(PSS_KINDS)}, got '{self.pss}'")
        try:
            self.params().check()
        except ValueError as error:
            raise InputError(str(error)) from None

    def params(self) -> FeverfewParams:
        return FeverfewParams(
            seed=self.seed,
            bubble_start=self.bubble_start,
            pss=self.pss,
            delta=self.delta,
            clear_similar=self.clear_similar,
        )

    def default_run_id(self) -> str:
        cycles = f".c{self.cycles}" if self.gossips else ""
        return f"{self.instance}.{self.protocol}{cycles}.s{self.seed}"

    def params_json(self) -> str:
        fields = {k: v for k, v in asdict(self).items() if k != "instance"}
        return json.dumps({"request": fields, "protocol": asdict(self.params())}, sort_keys=True)


def last_snapshot(
    lakehouse: Lakehouse, run_id: str, table: S.TableSpec = S.GOSSIP_STATES, column: str = S.CYCLE
) -> int | None:
    """The cycle (round) of a simulation's last stored state in `table`, None when there is none."""
    if not lakehouse.exists(table):
        return None
    return lakehouse.read(table).filter(F.col(S.RUN_ID) == run_id).agg(F.max(column)).first()[0]


def stored_state(
    lakehouse: Lakehouse,
    run_id: str,
    cycle: int,
    table: S.TableSpec = S.GOSSIP_STATES,
    column: str = S.CYCLE,
    state_columns=STATE_COLUMNS,
) -> DataFrame:
    """Every node's state after `cycle` as the cycle engine takes it (checkpointed: one job);
    `table`, `column` and `state_columns`: another protocol's snapshots (gossipsub's)."""
    names = [name for name, _ in state_columns]
    stored = lakehouse.read(table).filter((F.col(S.RUN_ID) == run_id) & (F.col(column) == cycle))
    return lakehouse.lineage.cut(stored.select(*names))


def snapshot(
    lakehouse: Lakehouse,
    run_id: str,
    state: DataFrame,
    cycle: int,
    table: S.TableSpec = S.GOSSIP_STATES,
    column: str = S.CYCLE,
    state_columns=STATE_COLUMNS,
) -> None:
    """Append every node's state after `cycle` to the snapshots (`stored_state` reads it back)."""
    names = [name for name, _ in state_columns]
    lakehouse.append_run_rows(table, run_id, state.select(*names).withColumn(column, F.lit(cycle)))


@dataclass(frozen=True)
class Simulated:
    """What a protocol's rounds hand back: the regime they ran in (None: no rounds); with `links`
    (k x 2, the run's links as stored) and `subscriptions` (the driver's copy of the instance), the
    evaluation finds the topic components on the driver with no Spark job
    (`pipelines.overlays.evaluate_run`'s `engine_links`)."""

    regime: str | None
    links: np.ndarray | None = None
    subscriptions: Subscriptions | None = None


class _Pending:
    """The measures of the cycles since the last snapshot, committed together with it: from the
    rows in memory when the cycle left them there (the memory regime: no Spark job per cycle),
    else from the cycle's DataFrame. `sizes`: (topic ids, subscribers) of the topics of two
    subscribers or more."""

    def __init__(self, spark: SparkSession, sizes: tuple[np.ndarray, np.ndarray]) -> None:
        self.spark, self.sizes = spark, sizes
        self._sizes_frame: DataFrame | None = None
        self.cycles: list[dict] = []
        self.coverage: list = []
        self.diffusions: list = []

    def add(self, cycle: int, state: CycleState, seconds: float) -> dict:
        if state.table is not None:
            summary = summary_of(state.table)
            self.coverage.append(coverage_of(state.table, self.sizes, cycle))
            self.diffusions.append(diffusions_of(state.table, cycle))
        else:
            summary = cycle_summary(state.frame)
            self.coverage.append(topic_coverage(state.frame, self._sizes(), cycle))
            self.diffusions.append(diffusion_events(state.frame, cycle))
        self.cycles.append({**summary, S.CYCLE: cycle, S.SECONDS: seconds, S.COMPUTED_AT: _now()})
        return summary

    def _sizes(self) -> DataFrame:
        if self._sizes_frame is None:
            topics, subscribers = self.sizes
            table = pa.table({S.TOPIC_ID: topics, S.SUBSCRIBERS: subscribers})
            self._sizes_frame = self.spark.createDataFrame(table)
        return self._sizes_frame

    def commit(self, lakehouse: Lakehouse, run_id: str) -> None:
        """The pending measures, one append per table, all at once."""
        if not self.cycles:
            return
        rows = [tuple({**row, S.RUN_ID: run_id}.get(c) for c in S.GOSSIP_CYCLES.columns) for row in self.cycles]
        frames = [(S.GOSSIP_CYCLES, local_frame(self.spark, rows, S.GOSSIP_CYCLES.schema))]
        for table, parts in ((S.GOSSIP_COVERAGE, self.coverage), (S.GOSSIP_DIFFUSIONS, self.diffusions)):
            frames.append((table, self._union(parts)))
        lakehouse.append_run_tables(run_id, frames)
        self.cycles, self.coverage, self.diffusions = [], [], []

    def _union(self, parts: list) -> DataFrame:
        if isinstance(parts[0], pa.Table):
            return self.spark.createDataFrame(pa.concat_tables(parts))
        union = parts[0]
        for frame in parts[1:]:
            union = union.unionByName(frame)
        return union


def simulation_job(simulate_rounds, snapshot_default: int | None, unit: str, nothing: str):
    """A simulation's job: `job(spark, lakehouse, request, run_id=None, snapshot_every=...,
    progress=True, diameters=True, replace=False)` simulates (or finishes simulating) one run and
    returns its complete run row as a dict (`simulated_run` with the protocol's
    `simulate_rounds`); `replace` deletes the stored run of that id first. `unit`: what a round
    is called; `nothing`: why an instance without subscriptions is refused."""

    def job(
        spark: SparkSession,
        lakehouse: Lakehouse,
        request,
        run_id: str | None = None,
        snapshot_every: int | None = snapshot_default,
        progress: bool = True,
        diameters: bool = True,
        replace: bool = False,
    ) -> dict:
        return simulated_run(
            spark,
            lakehouse,
            request,
            simulate_rounds,
            run_id,
            snapshot_every,
            progress,
            diameters,
            replace,
            unit,
            nothing,
        )

    return job


def simulated_run(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request,
    simulate_rounds,
    run_id: str | None,
    snapshot_every: int,
    progress: bool,
    diameters: bool,
    replace: bool,
    unit: str,
    nothing: str,
) -> dict:
    """A simulated overlay's run, whatever the protocol: checks, the claim of the run row, the
    protocol's `simulate_rounds(spark, lakehouse, request, claimed, instance, snapshot_every,
    progress)` (which stores the run's links and returns a `Simulated`: its regime is recorded in
    the run row), then the evaluation like any design's and the run marked complete (a failure
    marks it failed). A claim that found no row is a fresh run: no table holds a row of it (a run's
    rows are written only after its claim, and deleting a run deletes its row last)."""
    request.check()
    if snapshot_every is not None and snapshot_every < 1:
        raise InputError(f"the snapshot interval must be at least 1 {unit}, got {snapshot_every}")
    run_id = run_id or request.default_run_id()
    check_run_id(run_id)
    instance = lakehouse.instance_row(request.instance)
    if not instance[S.SUBSCRIPTIONS]:
        raise InputError(f"instance '{request.instance}' has no subscriptions: {nothing}")
    if replace:
        with contextlib.suppress(UnknownRunError):
            ledger.delete_run(lakehouse, run_id, ledger.OVERLAY.name)
            log.info("simulate %s: --replace: deleted the stored run first", run_id)
    claimed = claim_run(lakehouse, run_id, request, instance[S.INGEST_ID], request.params_json(), wait=False)
    if claimed.done:
        log.info("run %s is complete already", run_id)
        return claimed.found.asDict()
    clock = time.monotonic()
    jobs, commits = jobs_started(spark), lakehouse.commits  # this attempt's, from its claim on
    with ledger.failing(lakehouse, claimed, "simulate"):
        result = simulate_rounds(spark, lakehouse, request, claimed, instance, snapshot_every, progress)
        run = ledger.check_owner(lakehouse, run_id, claimed.attempt)
        simulated = time.monotonic() - clock
        metrics = evaluate_run(
            spark,
            lakehouse,
            run,
            diameters=diameters,
            certified=True,
            progress=progress,
            engine_links=result.links,
            driver_subscriptions=result.subscriptions,
            instance=instance,
        )
        ledger.complete(
            lakehouse,
            claimed,
            **{
                S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock,
                S.EDGES: metrics[S.EDGES],
                S.TCO_SUPPORT: metrics[S.TCO_SUPPORT],
                S.SECONDS_ROUNDS: simulated,
                S.SECONDS_EVALUATE: time.monotonic() - clock - simulated,
                S.REGIME: result.regime,
                S.SPARK_JOBS: jobs_started(spark) - jobs,
                S.DELTA_COMMITS: lakehouse.commits + 1 - commits,  # the completion's own too
            },
        )
    return lakehouse.run_row(run_id).asDict()


def _simulate(
    spark,
    lakehouse: Lakehouse,
    request: SimulateRequest,
    claimed: ledger.Claim,
    instance,
    snapshot_every: int,
    progress: bool,
) -> Simulated:
    """The cycles (from the last snapshot on), then the run's links by the protocol's rule: the
    ln-covered views (feverfew), SpiderCast over what gossip taught each node (spidercast-gossip),
    or either rule with full knowledge and no cycles."""
    run_id, attempt = claimed.run_id, claimed.attempt
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, instance[S.INGEST_ID]).select(
        S.NODE_ID, S.TOPIC_ID
    )
    nodes = int(instance[S.NODES])
    csr = Subscriptions.collect(subscriptions, nodes)
    if not request.gossips:
        with Progress(run_id, total=1, enabled=progress, logger=log) as bar:
            views = chosen_views(
                spark, csr.offsets, csr.topics, RULE[request.protocol], request.seed, None, task_slots(spark)
            )
            ledger.check_owner(lakehouse, run_id, attempt)
            _store_views(spark, lakehouse, run_id, lakehouse.lineage.cut(views), 0)
            bar.step(f"stored the links every node chose ({request.protocol})", stored=S.OVERLAY_EDGES.name)
        return Simulated(None)
    regime = lakehouse.cycles.pick(int(instance[S.SUBSCRIPTIONS]))
    log.info("simulate %s: cycles in the %s regime", run_id, regime)
    engine = feverfew_engine(
        spark, csr, request.params(), task_slots(spark), lakehouse.lineage, regime, lakehouse.cycles.memory_bytes
    )
    resumed = last_snapshot(lakehouse, run_id) if claimed.found is not None else None
    if resumed is None:
        if claimed.found is not None:  # a stopped attempt's rows before its first snapshot
            for table in (*CYCLE_TABLES, S.GOSSIP_STATES):
                lakehouse.delete_run_rows(table, run_id)
        state = lakehouse.lineage.cut(engine.start(spark, nodes))
        snapshot(lakehouse, run_id, state, 0)
        first = 1
    else:
        for table in CYCLE_TABLES:
            lakehouse.delete_run_rows(table, run_id, F.col(S.CYCLE) > resumed)
        lakehouse.delete_run_rows(S.GOSSIP_STATES, run_id, F.col(S.CYCLE) > resumed)
        state = stored_state(lakehouse, run_id, resumed)
        first = resumed + 1
        log.info("simulate %s: resuming after cycle %d", run_id, resumed)
    pending = _Pending(spark, sizes_of(csr.topics))
    last = request.cycles
    held: list[CycleState] = []  # the last cycle's state, when it ran in this attempt

    def on_cycle(cycle: int, state: CycleState, seconds: float) -> dict:
        summary = pending.add(cycle, state, seconds)
        held[:] = [state]
        if cycle % snapshot_every == 0 or cycle == last:
            ledger.check_owner(lakehouse, run_id, attempt)
            pending.commit(lakehouse, run_id)
            snapshot(lakehouse, run_id, state.frame, cycle)
        share = summary[S.COVERED_SHARE]
        return {"covered": f"{share:.1%}" if share is not None else "-", "view": round(summary[S.VIEW_AVG], 2)}

    with Progress(run_id, total=max(0, last - first + 1), unit="cycle", enabled=progress, logger=log) as bar:
        if first <= last:
            state = engine.run(state, first, last, on_cycle=on_cycle, on_step=bar.on_step)
        ledger.check_owner(lakehouse, run_id, attempt)
        if request.protocol == "feverfew" and held and held[0].table is not None:
            views = held[0].table  # the last cycle's rows, in memory
        elif request.protocol == "feverfew":
            views = state if "covered" in state.columns else _covered(engine, state)
        else:
            known = state.select(S.NODE_ID, F.array_union(F.array_union("rv", "sv"), "lv").alias(CANDIDATES))
            views = lakehouse.lineage.cut(
                chosen_views(
                    spark, csr.offsets, csr.topics, RULE[request.protocol], request.seed, known, task_slots(spark)
                )
            )
        links = _store_views(spark, lakehouse, run_id, views, last)
        bar.step(f"stored the links ({request.protocol})", stored=S.OVERLAY_EDGES.name)
    return Simulated(regime, links, csr if links is not None else None)


run_simulation = simulation_job(_simulate, SNAPSHOT_EVERY, "cycle", "nothing to gossip about")


def _covered(engine, state: DataFrame) -> DataFrame:
    """A resumed run's last snapshot has no measure columns: each node's coverage, recomputed."""

    def covered(batches):
        protocol = engine.protocol
        for batch in batches:
            nodes, lvs = batch.column(S.NODE_ID).to_pylist(), batch.column("lv").to_pylist()
            out = [protocol.coverage(p, lv) for p, lv in zip(nodes, lvs)]
            yield pa.RecordBatch.from_arrays(
                [
                    pa.array(nodes, pa.int64()),
                    pa.array(lvs, pa.list_(pa.int64())),
                    pa.array([c for c, _ in out], pa.list_(pa.int64())),
                    pa.array([n for _, n in out], pa.int32()),
                ],
                names=[S.NODE_ID, "lv", "covered", "needy"],
            )

    return state.select(S.NODE_ID, "lv").mapInArrow(covered, VIEW_SCHEMA)


def _store_views(spark, lakehouse: Lakehouse, run_id: str, views: DataFrame | pa.Table, last: int) -> np.ndarray | None:  # fmt: skip
    """The run's links (the choices made undirected) and its `gossip_views` row, both at once.
    `views`: the last cycle's rows in memory (then no Spark job computes them, and the links are
    returned for the evaluation) or a DataFrame of them."""
    links = None
    if isinstance(views, pa.Table):
        links = view_link_pairs(views)
        summary, edges = summary_of(views, sent=False), spark.createDataFrame(numbered_link_table(links, last))
    else:
        summary, edges = view_summary(views), view_links(views, last)
    summary = {**summary, S.RUN_ID: run_id, S.COMPUTED_AT: _now()}
    row = local_frame(spark, [tuple(summary.get(c) for c in S.GOSSIP_VIEWS.columns)], S.GOSSIP_VIEWS.schema)
    lakehouse.write_run_tables(run_id, [(S.OVERLAY_EDGES, edges), (S.GOSSIP_VIEWS, row)])
    return links


def cycle_rows(lakehouse: Lakehouse, run_id: str) -> list[dict]:
    """The run's stored cycles to print: every PRINT_EVERY-th and the last (one row per cycle)."""
    rows = [
        r.asDict() for r in lakehouse.read(S.GOSSIP_CYCLES).filter(F.col(S.RUN_ID) == run_id).orderBy(S.CYCLE).collect()
    ]
    return [r for i, r in enumerate(rows) if r[S.CYCLE] % PRINT_EVERY == 0 or i == len(rows) - 1]
