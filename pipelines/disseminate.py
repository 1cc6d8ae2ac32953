"""The disseminate job: push-pull gossip of publications on any stored overlay run, under churn or
mass failure (`overlay.gossip.dissemination`), stored as a routing run of protocol `push-pull`
with its completion per publication and cycle (`dissemination_completion`). With `--live`, on a
Feverfew simulation only, the gossip goes on while the publications spread and the overlay heals
(`overlay.gossip.healing`): protocol `push-pull-live`, same table.

Like `route`: the routing run row is claimed first (`pipelines.ledger`: status running, an
attempt token); the dissemination is a function of its request, so rerunning an unfinished one
takes it over and recomputes it, and its rows are replaced in one commit before the row is
flipped to complete, in a write that checks the attempt token. GPM, the small-world overlays and
Feverfew are compared under the very same failures: the failures depend on the seed and the node
ids only.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.frames import arrow_at_once, local_frame
from overlay.gossip.cycles import MEMORY
from overlay.gossip.dissemination import COMPLETION_COLUMNS, COMPLETION_SCHEMA, Failures, choose_topics, disseminate
from overlay.gossip.feverfew import FeverfewParams
from overlay.gossip.gossipsub import GossipsubParams
from overlay.gossip.healing import heal_and_disseminate
from overlay.gossip.spread import DELIVERY, SUMMARY, SpreadParams, spread_in_memory, spread_publications
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, check_run_id, complete_run, run_inputs
from pipelines.progress import Progress
from pipelines.route import claim_run
from pipelines.simulate import last_snapshot, stored_state
from pipelines.spark import jobs_started, task_slots
from routing.in_memory import publication_rows, spark_percentile

log = logging.getLogger(__name__)

PROTOCOL = "push-pull"
LIVE_PROTOCOL = "push-pull-live"
FLOOD, GOSSIPSUB_SPREAD = "flood", "gossipsub-spread"
SPREADS = (FLOOD, GOSSIPSUB_SPREAD)  # in latency-model time, stored like routing runs
KINDS = (PROTOCOL, *SPREADS)


@dataclass(frozen=True)
class DisseminateRequest:
    run_id: str
    publications: int
    cycles: int = 40
    seed: int = 1
    substitution: float = 0.0
    mass_share: float = 0.0
    mass_cycle: int = 1
    topic_sizes: tuple[int, ...] = ()
    live: bool = False
    kind: str = PROTOCOL  # push-pull in cycles, or a spread: flood, gossipsub-spread
    model_seed: int = 1  # a spread's latency model
    flood_publish: bool | None = None  # gossipsub-spread: the publisher sends to everyone (None: the profile's)
    message_bytes: int = 256  # a spread's message size
    upload_mbps: float = 0.0  # a spread's uplink per node (0: no limit)

    @property
    def protocol(self) -> str:
        return LIVE_PROTOCOL if self.live else self.kind

    @property
    def spreads(self) -> bool:
        return self.kind in SPREADS

    def failures(self) -> Failures:
        return Failures(self.substitution, self.mass_share, self.mass_cycle)

    def params_json(self) -> str:
        """The request as stored in `routing_runs.params` (`route.claim_run` compares it); a push-pull
        request as it was stored before the spreads came."""
        fields = asdict(self)
        if not self.spreads:
            for name in ("kind", "model_seed", "flood_publish", "message_bytes", "upload_mbps"):
                del fields[name]
        return json.dumps(fields, sort_keys=True)

    def check(self) -> None:
        """Every check that needs no Spark."""
        check_run_id(self.run_id)
        if self.publications < 1:
            raise InputError(f"--publications must be positive, got {self.publications}")
        if any(size < 2 for size in self.topic_sizes):
            raise InputError(f"--topic-sizes are sizes of topics with two or more subscribers, got {self.topic_sizes}")
        if self.topic_sizes and len(self.topic_sizes) != self.publications:
            raise InputError(
                f"--topic-sizes names {len(self.topic_sizes)} topics: give --publications {len(self.topic_sizes)}"
            )
        if self.cycles < 1:
            raise InputError(f"--cycles must be at least 1, got {self.cycles}")
        if self.kind not in KINDS:
            raise InputError(f"--protocol must be one of {', '.join(KINDS)}, got '{self.kind}'")
        if self.spreads and (self.live or self.substitution):
            raise InputError(
                f"--protocol {self.kind} spreads each publication in a few heartbeats' time: it takes "
                "--mass-failure (members down from the start), not --live or --churn"
            )
        if self.message_bytes < 1 or self.upload_mbps < 0:
            raise InputError(
                f"--message-bytes must be positive and --upload-mbps 0 (no limit) or more, got {self.message_bytes} "
                f"and {self.upload_mbps}"
            )
        if self.flood_publish is not None and self.kind != GOSSIPSUB_SPREAD:
            raise InputError("--flood-publish is gossipsub's: use it with --protocol gossipsub-spread")
        try:
            self.failures().check()
        except ValueError as error:
            raise InputError(str(error)) from None

    def default_routing_run_id(self) -> str:
        churn = f".sub{self.substitution:g}" if self.substitution else ""
        sizes = f".n{'-'.join(map(str, self.topic_sizes))}" if self.topic_sizes else ""
        if self.spreads:
            mass = f".fail{self.mass_share:g}" if self.mass_share else ""
            flood = {None: "", True: ".flood-publish", False: ".no-flood-publish"}[self.flood_publish]
            size = f".b{self.message_bytes}" if self.message_bytes != 256 else ""
            uplink = f".up{self.upload_mbps:g}" if self.upload_mbps else ""
            return (
                f"{self.run_id}.{self.kind}.p{self.publications}{sizes}{mass}{flood}{size}{uplink}"
                f".m{self.model_seed}.s{self.seed}"
            )
        mass = f".fail{self.mass_share:g}at{self.mass_cycle}" if self.mass_share else ""
        return f"{self.run_id}.{self.protocol}.p{self.publications}{sizes}.c{self.cycles}{churn}{mass}.s{self.seed}"


def run_dissemination(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: DisseminateRequest,
    routing_run_id: str | None = None,
    progress: bool = True,
    inputs: dict | None = None,
) -> Row:
    """Disseminate the request's publications on its overlay run; the routing run row, complete.
    `inputs` (optional): a dict the caller keeps between spreads of one run and workload (other
    failures, sizes or uplinks), in which the chosen publications and, in the memory regime, the
    spread's inputs are kept (`compare-meshes` spreads each run three times)."""
    request.check()
    routing_run_id = routing_run_id or request.default_routing_run_id()
    check_run_id(routing_run_id)
    run = complete_run(lakehouse, request.run_id)
    claimed = claim_run(lakehouse, routing_run_id, request, run[S.INSTANCE])
    if claimed.done:
        log.info("dissemination %s is complete already", routing_run_id)
        return claimed.found
    clock = time.monotonic()
    jobs, commits = jobs_started(spark), lakehouse.commits  # this attempt's, from its claim on
    with ledger.failing(lakehouse, claimed, "dissemination"):
        key = (request.run_id, request.kind, request.seed, request.publications, request.topic_sizes)
        kept = inputs.get(key) if inputs is not None and request.spreads else None
        with Progress(routing_run_id, total=2, enabled=progress, logger=log) as bar:
            if kept is None:
                instance, subscriptions, links = run_inputs(lakehouse, run)
                topics = choose_topics(subscriptions, request.seed, request.publications, request.topic_sizes)
                topics = lakehouse.lineage.cut(topics)
                chosen = topics.count()
                if chosen == 0:
                    raise InputError(f"run '{request.run_id}': no topic has two subscribers: nothing to disseminate")
                held: dict = {}
            else:  # a spread of this run and workload before: its inputs, its Arrow tables if held
                (instance, subscriptions, links, topics, chosen), held = kept
            bar.step(f"{chosen} publications chosen", publications=chosen)
            steps, messages = request.cycles, None
            if request.spreads:
                steps, messages = _spread(
                    spark, lakehouse, run, instance, request, routing_run_id, subscriptions, links, topics, held
                )
                if inputs is not None:
                    inputs[key] = ((instance, subscriptions, links, topics, chosen), held)
                bar.step("stored the deliveries and their metrics", stored=S.ROUTING_METRICS.name)
            else:
                if request.live:
                    completion = _live(spark, lakehouse, run, instance, request, subscriptions, topics, progress)
                else:
                    completion = disseminate(
                        subscriptions, links, topics, request.failures(), request.cycles, request.seed
                    )
                lakehouse.write_run_rows(S.DISSEMINATION_COMPLETION, routing_run_id, completion, key=S.ROUTING_RUN_ID)
                bar.step(f"stored {S.DISSEMINATION_COMPLETION.name}", stored=S.DISSEMINATION_COMPLETION.name)
        ledger.complete(
            lakehouse,
            claimed,
            **{
                S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock,
                S.SUPERSTEPS: steps,
                S.MESSAGES: messages,
                S.PUBLICATIONS: chosen,
                S.SPARK_JOBS: jobs_started(spark) - jobs,
                S.DELTA_COMMITS: lakehouse.commits + 1 - commits,  # the completion's own too
            },
        )
    return ledger.run_row(lakehouse, ledger.ROUTING, routing_run_id)


def _spread(spark, lakehouse: Lakehouse, run: Row, instance: Row, request: DisseminateRequest, routing_run_id: str, subscriptions, links, topics, held: dict) -> tuple[int, int]:  # fmt: skip
    """A spread's deliveries, publications and metrics stored (`overlay.gossip.spread`): flood on
    the run's topic subgraphs, or gossipsub's push along the meshes of a gossipsub run with its
    lazy gossip; in the driver's memory when the instance's regime is memory (`lakehouse.cycles`),
    else on the executors. `held`: the memory regime's inputs as Arrow tables, filled by the first
    spread of a run and workload and read by the next ones (empty: read them). Returns the deepest
    delivery's hops and the copies sent."""
    if request.kind == GOSSIPSUB_SPREAD:
        if run[S.ALGORITHM] != "gossipsub":
            raise InputError(
                f"--protocol gossipsub-spread pushes along a gossipsub run's meshes; run '{run[S.RUN_ID]}' was made "
                f"by {run[S.ALGORITHM]}: use --protocol flood on it, or simulate gossipsub first"
            )
        mesh_params = GossipsubParams.stored(json.loads(run[S.PARAMS])["protocol"])
        params = SpreadParams(
            heartbeat_us=1000 * mesh_params.heartbeat_ms,
            d_lazy=mesh_params.d_lazy,
            gossip_factor=mesh_params.gossip_factor,
            mcache_gossip=mesh_params.mcache_gossip,
            flood_publish=mesh_params.flood_publish if request.flood_publish is None else request.flood_publish,
            seed=request.seed,
            message_bytes=request.message_bytes,
            idontwant_bytes=mesh_params.idontwant_bytes,
            upload_mbps=request.upload_mbps,
        )
    else:
        params = SpreadParams(
            gossip=False, seed=request.seed, message_bytes=request.message_bytes, upload_mbps=request.upload_mbps
        )
    in_memory = lakehouse.cycles.pick(int(instance[S.SUBSCRIPTIONS])) == MEMORY
    if not (in_memory and held):  # the inputs as DataFrames (read below, or run on the executors)
        if request.kind == GOSSIPSUB_SPREAD:
            mesh = lakehouse.read(S.GOSSIPSUB_MESH).filter(F.col(S.RUN_ID) == run[S.RUN_ID])
            push = mesh.select(S.TOPIC_ID, F.col(S.NODE_ID).alias(S.U), F.col(S.PEER_ID).alias(S.V))
        else:
            both = links.select(S.U, S.V).union(links.select(F.col(S.V).alias(S.U), F.col(S.U).alias(S.V)))
            at = subscriptions.select(F.col(S.NODE_ID).alias(S.U), S.TOPIC_ID)
            push = both.join(at, S.U).join(at.withColumnRenamed(S.U, S.V), [S.V, S.TOPIC_ID])
        spread_inputs = {
            "subscriptions": subscriptions.select(S.NODE_ID, S.TOPIC_ID),
            "push": push,
            "topics": topics.select(S.PUB_ID, S.TOPIC_ID),
        }
        if request.kind == GOSSIPSUB_SPREAD and mesh_params.peers:
            stored = lakehouse.read(S.GOSSIPSUB_CONNECTIONS).filter(F.col(S.RUN_ID) == run[S.RUN_ID])
            spread_inputs["connections"] = stored.select(
                F.col(S.NODE_ID).alias("dialer"), F.col(S.PEER_ID).alias("listener")
            )
    if in_memory:
        if not held:
            held.update(arrow_at_once(spread_inputs))
        deliveries, publications, counted = _spread_in_memory(spark, request, params, held)
    else:
        deliveries, publications, counted = _spread_on_spark(
            lakehouse,
            request,
            params,
            *(spread_inputs.get(k) for k in ("subscriptions", "push", "topics", "connections")),
        )
    expected, delivered = int(counted[S.EXPECTED_DELIVERIES] or 0), int(counted[S.DELIVERIES])
    deepest = int(counted[S.MAX_PATH_LENGTH] or 0)
    metrics = {
        S.RUN_ID: run[S.RUN_ID],
        S.PROTOCOL: request.protocol,
        S.PUBLICATIONS: int(counted[S.PUBLICATIONS]),
        S.ROUTING_OVERHEAD: 0,  # copies go to subscribers of the topic only
        S.AVG_PATH_LENGTH: counted[S.AVG_PATH_LENGTH],
        S.MAX_PATH_LENGTH: counted[S.MAX_PATH_LENGTH],
        S.LATENCY_MEDIAN: counted[S.LATENCY_MEDIAN],
        S.LATENCY_P95: counted[S.LATENCY_P95],
        S.STRETCH_MEDIAN: counted[S.STRETCH_MEDIAN],
        S.DELIVERY_RATIO: delivered / expected if expected else 1.0,
        S.DUPLICATE_DELIVERIES: int(counted[S.DUPLICATE_DELIVERIES] or 0),
        S.MISSING_DELIVERIES: expected - delivered,
        S.DELIVERIES: delivered,
        S.EXPECTED_DELIVERIES: expected,
        S.MESSAGES: int(counted[S.MESSAGES] or 0),
        S.SUPERSTEPS: deepest,
        S.COMPUTED_AT: _now(),
        S.BYTES_SENT: int(counted[S.BYTES_SENT] or 0),
    }
    columns = tuple(c for c in S.ROUTING_METRICS.columns if c != S.ROUTING_RUN_ID)
    row = local_frame(spark, [tuple(metrics[c] for c in columns)], S.frame_schema(S.ROUTING_METRICS, columns))
    lakehouse.write_run_tables(
        routing_run_id,
        [(S.ROUTING_DELIVERIES, deliveries), (S.ROUTING_PUBLICATIONS, publications), (S.ROUTING_METRICS, row)],
        key=S.ROUTING_RUN_ID,
    )
    return deepest, metrics[S.MESSAGES]


def _spread_on_spark(lakehouse: Lakehouse, request, params, subscriptions, push, topics, connections):
    """The spread's deliveries and publications as DataFrames (a Spark task a group of
    publications, `spread_publications`) and its counts in one pass (a Row)."""
    rows = lakehouse.lineage.cut(
        spread_publications(subscriptions, push, topics, request.mass_share, request.model_seed, params, connections)
    )
    deliveries = rows.filter(F.col("row_kind") == DELIVERY).select(
        S.PUB_ID, S.NODE_ID, S.HOPS, S.LATENCY_MS, S.DIRECT_MS
    )
    summaries = rows.filter(F.col("row_kind") == SUMMARY)
    counted = deliveries.groupBy(S.PUB_ID).agg(F.count(F.lit(1)).alias(S.DELIVERIES))
    publications = summaries.join(counted, S.PUB_ID, "left").select(
        S.PUB_ID,
        S.TOPIC_ID,
        S.PUBLISHER,
        F.col("messages").alias(S.RECEIVED),
        F.lit(0).cast("long").alias(S.PURE_FORWARDS),
        F.coalesce(S.DELIVERIES, F.lit(0)).cast("long").alias(S.DELIVERIES),
        *(F.col(name).alias(column) for name, column in _SUMMARY_COLUMNS),
    )
    summary, delivery = F.col("row_kind") == SUMMARY, F.col("row_kind") == DELIVERY
    counted = rows.agg(  # one pass over both kinds of rows
        F.count(F.when(summary, 1)).alias(S.PUBLICATIONS),
        F.sum(F.when(summary, F.col("messages"))).alias(S.MESSAGES),
        F.sum(F.when(summary, F.col("duplicates"))).alias(S.DUPLICATE_DELIVERIES),
        F.sum(F.when(summary, F.col("bytes_sent"))).alias(S.BYTES_SENT),
        F.sum(F.when(summary, F.col("expected"))).alias(S.EXPECTED_DELIVERIES),
        F.count(F.when(delivery, 1)).alias(S.DELIVERIES),
        F.avg(F.when(delivery, F.col(S.HOPS))).alias(S.AVG_PATH_LENGTH),
        F.max(F.when(delivery, F.col(S.HOPS))).alias(S.MAX_PATH_LENGTH),
        F.percentile(F.when(delivery, F.col(S.LATENCY_MS)), 0.5).alias(S.LATENCY_MEDIAN),
        F.percentile(F.when(delivery, F.col(S.LATENCY_MS)), 0.95).alias(S.LATENCY_P95),
        F.percentile(F.when(delivery, F.col(S.LATENCY_MS) / F.col(S.DIRECT_MS)), 0.5).alias(S.STRETCH_MEDIAN),
    ).first()
    return deliveries, publications, counted.asDict()


def _spread_in_memory(spark, request, params, got: dict):
    """`_spread_on_spark` in this process (the memory regime) on the inputs read (Arrow tables:
    subscriptions, push, topics, connections), every publication spread in the driver
    (`spread_in_memory`), the same rows and counts with numpy."""
    rows = spread_in_memory(
        got["subscriptions"], got["push"], got["topics"], request.mass_share, request.model_seed, params,
        got.get("connections"),
    )  # fmt: skip
    kind = rows.column("row_kind").to_numpy()
    delivered, summary = rows.filter(pa.array(kind == DELIVERY)), rows.filter(pa.array(kind == SUMMARY))
    deliveries = delivered.select([S.PUB_ID, S.NODE_ID, S.HOPS, S.LATENCY_MS, S.DIRECT_MS])
    pub = summary.column(S.PUB_ID).to_numpy()
    d_pub = delivered.column(S.PUB_ID).to_numpy()
    per_pub = np.bincount(publication_rows(pub, d_pub), minlength=len(pub))
    publications = pa.table(
        {
            S.PUB_ID: pub,
            S.TOPIC_ID: summary.column(S.TOPIC_ID),
            S.PUBLISHER: summary.column(S.PUBLISHER),
            S.RECEIVED: summary.column("messages"),
            S.PURE_FORWARDS: np.zeros(len(pub), np.int64),
            S.DELIVERIES: per_pub.astype(np.int64),
            **{column: summary.column(name) for name, column in _SUMMARY_COLUMNS},
        }
    )
    hops = delivered.column(S.HOPS).to_numpy().astype(np.int64)
    latency = delivered.column(S.LATENCY_MS).to_numpy()
    direct = delivered.column(S.DIRECT_MS).to_numpy()
    total = {c: int(summary.column(name).to_numpy().sum()) for name, c in _SUMMED}
    counted = {
        S.PUBLICATIONS: len(pub),
        **{c: (total[c] if len(pub) else None) for c in total},
        S.DELIVERIES: len(hops),
        S.AVG_PATH_LENGTH: float(hops.sum() / len(hops)) if len(hops) else None,
        S.MAX_PATH_LENGTH: int(hops.max()) if len(hops) else None,
        S.LATENCY_MEDIAN: spark_percentile(latency, 0.5),
        S.LATENCY_P95: spark_percentile(latency, 0.95),
        S.STRETCH_MEDIAN: spark_percentile(latency / direct, 0.5),
    }
    return spark.createDataFrame(deliveries), spark.createDataFrame(publications), counted


# summary columns of `spread_publications` and the routing_publications / metrics columns they fill
_SUMMARY_COLUMNS = (
    ("expected", S.EXPECTED_DELIVERIES),
    ("duplicates", S.DUPLICATE_DELIVERIES),
    ("ihave", S.IHAVE),
    ("iwant", S.IWANT),
    ("idontwant", S.IDONTWANT),
    ("bytes_sent", S.BYTES_SENT),
)
_SUMMED = (
    ("messages", S.MESSAGES),
    ("duplicates", S.DUPLICATE_DELIVERIES),
    ("bytes_sent", S.BYTES_SENT),
    ("expected", S.EXPECTED_DELIVERIES),
)


def _live(
    spark,
    lakehouse: Lakehouse,
    run: Row,
    instance: Row,
    request: DisseminateRequest,
    subscriptions,
    topics,
    progress: bool,
):
    """The completion rows of a dissemination inside the gossip of the Feverfew run `run`, going on
    from its last stored state with its own protocol settings."""
    if run[S.ALGORITHM] != "feverfew":
        raise InputError(
            f"--live goes on with a Feverfew simulation's gossip; run '{run[S.RUN_ID]}' was made by "
            f"{run[S.ALGORITHM]}: drop --live to disseminate on its stored links"
        )
    params = FeverfewParams(**json.loads(run[S.PARAMS])["protocol"])
    last = last_snapshot(lakehouse, run[S.RUN_ID])
    state = stored_state(lakehouse, run[S.RUN_ID], last)
    csr = Subscriptions.collect(subscriptions, int(instance[S.NODES]))
    chosen = [(r[S.PUB_ID], r[S.TOPIC_ID]) for r in topics.collect()]  # the few publications asked for
    with Progress(f"{run[S.RUN_ID]} live", total=request.cycles, unit="cycle", enabled=progress, logger=log) as bar:
        rows, _ = heal_and_disseminate(
            spark,
            state,
            last,
            csr.offsets,
            csr.topics,
            params,
            chosen,
            request.failures(),
            request.cycles,
            request.seed,
            task_slots(spark),
            on_step=bar.on_step,
            lineage=lakehouse.lineage,
        )
    return local_frame(spark, [tuple(row[c] for c in COMPLETION_COLUMNS) for row in rows], COMPLETION_SCHEMA)


SUMMARY_COLUMNS = ("pub_id", "topic_id", "subscribers", "publisher", "first_complete", "final_completion")
SPREAD_COLUMNS = (
    S.PUBLICATIONS,
    S.DELIVERY_RATIO,
    S.DELIVERIES,
    S.EXPECTED_DELIVERIES,
    S.DUPLICATE_DELIVERIES,
    S.MESSAGES,
    S.AVG_PATH_LENGTH,
    S.MAX_PATH_LENGTH,
    S.LATENCY_MEDIAN,
    S.LATENCY_P95,
)


def spread_rows(lakehouse: Lakehouse, routing_run_id: str) -> list[dict]:
    """A spread's `routing_metrics` row (one)."""
    rows = lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID) == routing_run_id).collect()
    return [r.asDict() for r in rows]


def summary_rows(lakehouse: Lakehouse, routing_run_id: str) -> list[dict]:
    """Per publication: the first cycle all alive subscribers were informed, and the last
    cycle's completion (one row per publication: the few the request asked for)."""
    rows = lakehouse.read(S.DISSEMINATION_COMPLETION).filter(F.col(S.ROUTING_RUN_ID) == routing_run_id)
    last = rows.agg(F.max(S.CYCLE)).first()[0]
    summary = rows.groupBy(S.PUB_ID, S.TOPIC_ID, S.SUBSCRIBERS, S.PUBLISHER).agg(
        F.min(F.when(F.col(S.COMPLETION) >= 1.0, F.col(S.CYCLE))).alias("first_complete"),
        F.max(F.when(F.col(S.CYCLE) == last, F.col(S.COMPLETION))).alias("final_completion"),
    )
    return [r.asDict() for r in summary.orderBy(S.PUB_ID).collect()]
