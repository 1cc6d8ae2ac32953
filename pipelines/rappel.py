"""The Rappel job (`simulate rappel`, ComNet'09): the friendship overlay and every
feed's dissemination tree, simulated in rounds of 30 s (`overlay.rappel.simulation`), as a run of
`overlay_runs` whose links are the final friendships.

Inputs: the instance's subscriptions (feeds are its topics), network coordinates from the seeded
latency model (`node_coordinates`, written once per instance version and model seed) and each
feed's publisher (`feed_publishers`): on a social instance the node whose key is the topic's key
(the followed user), else a seeded subscriber (the one of least draw(RAPPEL_PUBLISHER, topic,
node)). Publishers never fail.

Storage: the run row is claimed first (status `running`, an attempt token: `pipelines.ledger`);
every `snapshot_every` rounds (and at the last) the rounds since the last commit are stored:
`rappel_rounds`, `rappel_deliveries`, `rappel_traffic`, the trees' layout (`feed_trees`), then
the snapshot the next round starts from (`rappel_states`, then `rappel_tree_states`). A stopped
run (a crash, kill -9) is resumed by the same command from its last snapshot: rows of later
rounds are debris and are deleted first, and since the run is a function of its seed the resumed
run is the uninterrupted one. The trees are stored as columns (`overlay.rappel.tree_codec`,
versioned); a `rappel_tree_states` of an older layout (the pickles stored before layout 1) is
rewritten once, when a Rappel job starts (`migrate_tree_states`), so the runs stored then still
resume. At the end the friendships go to `overlay_edges` (undirected), each
node's coverage and neighbour overlap to `rappel_nodes`, the run is evaluated like any design and
marked complete, in the write that checks its attempt token."""

from __future__ import annotations

import json
import logging
import math
from dataclasses import asdict, dataclass

import numpy as np
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.classes import Subscriptions
from overlay.draws import RAPPEL_PUBLISHER, draw
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.rappel import measures, tree_codec
from overlay.rappel.coordinates import LatencyModel
from overlay.rappel.feeds import TICKS_PER_ROUND
from overlay.rappel.friendship import UTILITIES, RappelParams
from overlay.rappel.interest import MODES
from overlay.rappel.presence import Presence
from overlay.rappel.simulation import RappelSimulation, RoundResult
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.progress import Progress
from pipelines.simulate import Simulated, last_snapshot, simulation_job
from pipelines.spark import task_slots

log = logging.getLogger(__name__)

PROTOCOL = "rappel"
ROUNDS_PER_HOUR = 3600 // (5 * TICKS_PER_ROUND)
SNAPSHOT_EVERY = 20  # rounds (10 min)
ROUND_TABLES = (S.RAPPEL_ROUNDS, S.RAPPEL_DELIVERIES, S.RAPPEL_TRAFFIC, S.FEED_TREES)
SNAPSHOT_TABLES = (S.RAPPEL_STATES, S.RAPPEL_TREE_STATES)  # in the order they are written
ROUND_COLUMNS = (
    S.ROUND,
    S.NODES_UP,
    S.FRIENDS_AVG,
    S.COVERED_SHARE,
    S.FULL_COVERAGE_NODES,
    S.DELIVERIES,
    S.LATENCY_MEDIAN,
    S.LATENCY_P95,
    S.STRETCH_MEDIAN,
    S.NOISE,
    S.DATA_MESSAGES,
    S.CONTROL_MESSAGES,
    S.SECONDS,
)
PRINT_EVERY = 20


def _rounds(hours: float) -> int:
    return max(1, math.ceil(hours * ROUNDS_PER_HOUR - 1e-9))


@dataclass(frozen=True)
class RappelRequest:
    """One Rappel simulation (`algorithm` rappel in `overlay_runs`)."""

    instance: str
    hours: float = 1.0
    seed: int = 1
    alpha: int = 6
    beta: int = 5
    mode: str = "bloom"
    utility: str = "interest-distance"
    failure: tuple[float, float, float | None] | None = None  # share, from, to (hours)
    churn: tuple[float, float] | None = None  # mean minutes online, offline
    arrivals: float = 0.0  # minutes over which nodes first come online
    model_seed: int = 1
    proper_leaves: float = 0.0  # the share of churn's session ends that are proper leaves (§4.4)

    @property
    def algorithm(self) -> str:
        return PROTOCOL

    @property
    def rounds(self) -> int:
        return _rounds(self.hours)

    def check(self) -> None:
        if self.hours <= 0:
            raise InputError(f"--hours must be positive, got {self.hours}")
        if self.mode not in MODES:
            raise InputError(f"--feed-summary must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.utility not in UTILITIES:
            raise InputError(f"--utility must be one of {', '.join(UTILITIES)}, got '{self.utility}'")
        if self.arrivals < 0:
            raise InputError(f"--arrivals must not be negative, got {self.arrivals}")
        if self.churn is not None and min(self.churn) <= 0:
            raise InputError(f"--churn needs positive mean session lengths, got {self.churn}")
        if self.proper_leaves and self.churn is None:
            raise InputError("--proper-leaves needs --churn: only the ends of churn's sessions can be proper leaves")
        try:
            self.params().check()
            self.presence(frozenset())
        except ValueError as error:
            raise InputError(str(error)) from None

    def params(self) -> RappelParams:
        return RappelParams(seed=self.seed, alpha=self.alpha, beta=self.beta, mode=self.mode, utility=self.utility)

    def presence(self, publishers: frozenset) -> Presence:
        share, start, end = self.failure or (0.0, 0.0, None)
        online, offline = self.churn or (0.0, 0.0)
        minutes = ROUNDS_PER_HOUR / 60
        return Presence(
            seed=self.seed,
            share=share,
            fail_round=1 + _rounds(start) if share else 0,
            return_round=1 + _rounds(end) if share and end is not None else None,
            spared=publishers,
            arrival_rounds=math.ceil(self.arrivals * minutes),
            mean_online=online * minutes,
            mean_offline=offline * minutes,
            proper_leaves=self.proper_leaves,
        )

    def default_run_id(self) -> str:
        return f"{self.instance}.rappel.h{self.hours:g}.s{self.seed}"

    def params_json(self) -> str:
        # proper_leaves only when set: the runs stored before it existed keep their parameters
        fields = {k: v for k, v in asdict(self).items() if k != "instance" and not (k == "proper_leaves" and not v)}
        return json.dumps({"request": fields, "protocol": asdict(self.params())}, sort_keys=True)


def node_coordinates(
    spark: SparkSession, lakehouse: Lakehouse, instance: str, ingest_id: str, model_seed: int, nodes: int
) -> np.ndarray:
    """float [nodes, 2] (ms), stored in `node_coordinates` the first time (the deliberate
    driver copy: every executor needs any node's position, as every Rappel node can learn any
    other's)."""
    coordinates = LatencyModel().coordinates(model_seed, np.arange(nodes, dtype=np.int64))
    lakehouse.ensure(S.NODE_COORDINATES)
    stored = (
        lakehouse.read(S.NODE_COORDINATES)
        .filter(
            (F.col(S.INSTANCE) == instance) & (F.col(S.INGEST_ID) == ingest_id) & (F.col(S.MODEL_SEED) == model_seed)
        )
        .limit(1)
        .count()
    )
    if not stored:  # a MERGE on the keys: two runs storing them at once store them once
        rows = [
            (instance, ingest_id, model_seed, v, float(x), float(y)) for v, (x, y) in enumerate(coordinates.tolist())
        ]
        lakehouse.insert_missing(
            S.NODE_COORDINATES,
            local_frame(spark, rows, S.NODE_COORDINATES.schema),
            (S.INSTANCE, S.INGEST_ID, S.MODEL_SEED, S.NODE_ID),
        )
    return coordinates


def feed_publishers(
    lakehouse: Lakehouse, instance: str, ingest_id: str, csr: Subscriptions, seed: int, social: bool
) -> tuple[np.ndarray, list[str]]:
    """Each topic's publisher and how it was chosen (see the module doc). The topic-to-node key
    match is collected: one row per topic, as the publishers array every executor needs."""
    topics = int(csr.topics.max()) + 1 if csr.rows else 0
    by_key = {}
    if topics and social:
        node_keys = lakehouse.instance_rows(S.NODE_KEYS, instance, ingest_id).select(S.KEY, F.col(S.ID).alias("node"))
        topic_keys = lakehouse.instance_rows(S.TOPIC_KEYS, instance, ingest_id).select(
            S.KEY, F.col(S.ID).alias("topic")
        )
        by_key = {r["topic"]: r["node"] for r in topic_keys.join(node_keys, S.KEY).collect()}
    owners = np.repeat(np.arange(csr.nodes, dtype=np.int64), np.diff(csr.offsets))
    draws = draw(seed, RAPPEL_PUBLISHER, csr.topics, owners)
    order = np.lexsort((owners, draws, csr.topics))
    first = np.searchsorted(csr.topics[order], np.arange(topics))
    seeded = owners[order][np.minimum(first, max(len(order) - 1, 0))]
    publishers = np.array([by_key.get(t, seeded[t]) for t in range(topics)], dtype=np.int64)
    return publishers, ["key" if t in by_key else "seeded" for t in range(topics)]


class _Pending:
    """The rounds since the last commit, stored together (`ROUND_TABLES`)."""

    def __init__(self, spark: SparkSession, subscriptions: DataFrame) -> None:
        self.spark, self.subscriptions = spark, subscriptions
        self.friendships: list[tuple[int, DataFrame]] = []
        self.steps: list[tuple[int, DataFrame]] = []
        self.seconds: dict[int, float] = {}

    def add(self, result: RoundResult) -> None:
        self.friendships.append((result.round, result.friendship))
        self.steps.append((result.round, result.step))
        self.seconds[result.round] = result.seconds

    def commit(self, lakehouse: Lakehouse, run_id: str) -> list[dict]:
        if not self.steps:
            return []
        delivered = lakehouse.lineage.cut(measures.deliveries(self.steps))
        moved = lakehouse.lineage.cut(measures.traffic(self.friendships, self.steps))
        rows = measures.round_summary(self.friendships, delivered, moved, self.subscriptions)
        last, step = self.steps[-1]
        lakehouse.append_run_rows(S.RAPPEL_DELIVERIES, run_id, delivered)
        lakehouse.append_run_rows(S.RAPPEL_TRAFFIC, run_id, moved)
        lakehouse.append_run_rows(S.FEED_TREES, run_id, measures.tree_layout(step, last))
        now = _now()
        stamped = [{**row, S.RUN_ID: run_id, S.SECONDS: self.seconds[row[S.ROUND]], S.COMPUTED_AT: now} for row in rows]
        table = [tuple(row.get(c) for c in S.RAPPEL_ROUNDS.columns) for row in stamped]
        lakehouse.append_run_rows(S.RAPPEL_ROUNDS, run_id, local_frame(self.spark, table, S.RAPPEL_ROUNDS.schema))
        self.friendships, self.steps, self.seconds = [], [], {}
        return stamped


def _simulate(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: RappelRequest,
    claimed: ledger.Claim,
    instance,
    snapshot_every: int,
    progress: bool,
) -> Simulated:
    run_id, attempt = claimed.run_id, claimed.attempt
    ingest_id = instance[S.INGEST_ID]
    subscriptions = lakehouse.lineage.cut(
        lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, ingest_id).select(S.NODE_ID, S.TOPIC_ID)
    )
    nodes = int(instance[S.NODES])
    csr = Subscriptions.collect(subscriptions, nodes)
    migrate_tree_states(lakehouse)
    resumed = last_snapshot(lakehouse, run_id, S.RAPPEL_TREE_STATES, S.ROUND)
    if resumed is None:
        for table in (*ROUND_TABLES, *SNAPSHOT_TABLES, S.FEED_PUBLISHERS):
            lakehouse.delete_run_rows(table, run_id)
    else:  # rappel_nodes and the links are replaced at the end either way
        for table in (*ROUND_TABLES, *SNAPSHOT_TABLES):
            lakehouse.delete_run_rows(table, run_id, F.col(S.ROUND) > resumed)
        log.info("simulate %s: resuming after round %d", run_id, resumed)
    coordinates = node_coordinates(spark, lakehouse, request.instance, ingest_id, request.model_seed, nodes)
    publishers, chosen_by = feed_publishers(
        lakehouse, request.instance, ingest_id, csr, request.seed, instance[S.SOURCE] == "social"
    )
    if resumed is None:
        sizes = np.bincount(csr.topics, minlength=len(publishers))
        rows = [(run_id, t, int(p), int(sizes[t]), how) for t, (p, how) in enumerate(zip(publishers, chosen_by))]
        lakehouse.append_run_rows(
            S.FEED_PUBLISHERS, run_id, local_frame(spark, rows, S.FEED_PUBLISHERS.schema).drop(S.RUN_ID)
        )
    presence = request.presence(frozenset(publishers.tolist()))
    simulation = RappelSimulation(
        spark, csr, coordinates, publishers, request.params(), presence, task_slots(spark), lakehouse.lineage
    )
    pending = _Pending(spark, subscriptions)
    last = request.rounds

    def on_round(result: RoundResult) -> dict:
        pending.add(result)
        if result.round % snapshot_every == 0 or result.round == last:
            ledger.check_owner(lakehouse, run_id, attempt)
            stored = pending.commit(lakehouse, run_id)[-1]
            _snapshot(lakehouse, run_id, simulation, result)
            return {
                "up": stored[S.NODES_UP],
                "covered": _share(stored[S.COVERED_SHARE]),
                "latency": _ms(stored[S.LATENCY_MEDIAN]),
                "p95": _ms(stored[S.LATENCY_P95]),
            }
        return {}

    first = 1 if resumed is None else resumed + 1
    with Progress(run_id, total=max(0, last - first + 1), unit="round", enabled=progress, logger=log) as bar:
        if resumed is None:
            state, trees = simulation.start()
        else:
            state, trees, friendship = simulation.resume(*_stored_snapshot(lakehouse, run_id, resumed))
            step = trees
        if first <= last:
            friendship, step = simulation.run(state, trees, first, last, on_round=on_round, on_step=bar.on_step)
        ledger.check_owner(lakehouse, run_id, attempt)
        links = (
            friendship.select(F.col(S.NODE_ID).alias("a"), F.explode("friends").alias("b"))
            .select(F.least("a", "b").alias(S.U), F.greatest("a", "b").alias(S.V))
            .distinct()
            .withColumn(S.ROUND, F.lit(last))
        )
        lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, numbered_links(links, [S.U, S.V]))
        final = measures.tree_layout(step, last)
        lakehouse.write_run_rows(S.RAPPEL_NODES, run_id, measures.node_summary(friendship, final))
        bar.step("stored the friendships as the run's links", stored=S.OVERLAY_EDGES.name)
    return Simulated(None)


run_rappel = simulation_job(_simulate, SNAPSHOT_EVERY, "round", "no feed to follow")


def _snapshot(lakehouse: Lakehouse, run_id: str, simulation: RappelSimulation, result: RoundResult) -> None:
    """Round r's snapshot, the states first: a snapshot counts once its trees are stored."""
    state, trees = simulation.snapshot(result)
    lakehouse.append_run_rows(S.RAPPEL_STATES, run_id, state.withColumn(S.ROUND, F.lit(result.round)))
    lakehouse.append_run_rows(
        S.RAPPEL_TREE_STATES,
        run_id,
        trees.withColumnRenamed("feed", S.TOPIC_ID).withColumn(S.ROUND, F.lit(result.round)),
    )


def _stored_snapshot(lakehouse: Lakehouse, run_id: str, round_: int) -> tuple[DataFrame, DataFrame]:
    """Round r's stored snapshot as `RappelSimulation.resume` takes it (checkpointed: two jobs);
    its trees are of the current layout (`migrate_tree_states` ran first)."""

    def rows(table: S.TableSpec) -> DataFrame:
        return lakehouse.read(table).filter((F.col(S.RUN_ID) == run_id) & (F.col(S.ROUND) == round_))

    trees = lakehouse.lineage.cut(
        rows(S.RAPPEL_TREE_STATES).select(F.col(S.TOPIC_ID).alias("feed"), S.LAYOUT_VERSION, *tree_codec.TREE_COLUMNS)
    )
    state = lakehouse.lineage.cut(rows(S.RAPPEL_STATES).drop(S.RUN_ID, S.ROUND))
    return state, trees


def migrate_tree_states(lakehouse: Lakehouse) -> None:
    """Rewrites `rappel_tree_states` in the current tree layout once, when it holds trees of an
    older one (the pickles stored before layout 1): a run stored then resumes as it would have.
    A tree the current classes cannot read (a pickle of another `FeedTree` layout) is dropped
    with its snapshot's other trees: that run resumes from an earlier snapshot, or round 1 (the
    same run either way: it is a function of its seed)."""
    table = S.RAPPEL_TREE_STATES
    if not lakehouse.exists(table) or not tree_codec.outdated(lakehouse.read(table)):
        return
    stored = lakehouse.read(table)
    readable = lakehouse.lineage.cut(tree_codec.current_rows(stored))
    keys = [S.RUN_ID, S.ROUND]
    lost = lakehouse.lineage.cut(
        stored.groupBy(*keys)
        .agg(F.count(F.lit(1)).alias("trees"))
        .join(readable.groupBy(*keys).agg(F.count(F.lit(1)).alias("read")), keys, "left")
        .where(F.coalesce("read", F.lit(0)) < F.col("trees"))
        .select(*keys)
    )
    dropped = sorted({r[S.RUN_ID] for r in lost.collect()})  # one row per snapshot lost: a few
    if dropped:
        log.warning(
            "%s: snapshots of %d run(s) hold trees of another FeedTree layout and are dropped (such a run "
            "resumes from its last readable snapshot, or round 1): %s",
            table.name,
            len(dropped),
            ", ".join(dropped),
        )
    log.info("%s: rewriting the stored trees in layout %d", table.name, tree_codec.LAYOUT_VERSION)
    lakehouse.rewrite(table, readable.join(lost, keys, "left_anti"))


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f} ms"


def round_rows(lakehouse: Lakehouse, run_id: str) -> list[dict]:
    """The run's stored rounds to print: every PRINT_EVERY-th and the last."""
    rows = [
        r.asDict() for r in lakehouse.read(S.RAPPEL_ROUNDS).filter(F.col(S.RUN_ID) == run_id).orderBy(S.ROUND).collect()
    ]
    return [r for i, r in enumerate(rows) if r[S.ROUND] % PRINT_EVERY == 0 or i == len(rows) - 1]
