"""The gossipsub job: libp2p's gossipsub meshes built by simulated heartbeats in time, as a run of
`overlay_runs` whose links are the union of its meshes (`overlay.gossip.gossipsub`).

Each topic's meshes are simulated whole, every heartbeat at once, in batches of consecutive
topics (`overlay.gossip.mesh_batches`): in this process in the memory regime, one Spark job per
batch in the spark regime. Storage protocol: the run row is claimed first; each batch appends its
meshes (`gossipsub_mesh`), then its measures per heartbeat (`gossipsub_batches`), the commit
point. The same command resumes a stopped run after its last committed batch (mesh rows of later
topics are debris and go first); the simulation is a function of the seed, so it ends as an
uninterrupted run would. At the end the batches are combined into `gossipsub_heartbeats`, the
meshes' union goes to `overlay_edges`, and the run is evaluated like any design: `evaluate`,
`export`, `resilience`, `route` and `disseminate` take it like any other overlay.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip import mesh_batches
from overlay.gossip.connections import Connections, deployed
from overlay.gossip.cycles import MEMORY
from overlay.gossip.gossipsub import DEFAULT_PROFILE, MEASURES, PROFILES, GossipsubParams, profile
from overlay.rappel.coordinates import LatencyModel
from overlay.rappel.presence import Presence
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.progress import Progress
from pipelines.simulate import simulation_job

log = logging.getLogger(__name__)

BATCH_SUBSCRIPTIONS = 20_000  # a commit's topics hold about this many subscriptions
PRINT_EVERY = 10  # what `simulate gossipsub` prints of the heartbeats: every 10th and the last
HEARTBEAT_COLUMNS = (
    S.HEARTBEAT,
    S.GRAFTS,
    S.PRUNES,
    S.REFUSED,
    S.MESH_AVG,
    S.MESH_MIN,
    S.MESH_MAX,
    S.BELOW_LOW,
    S.ABOVE_HIGH,
    S.BACKOFFS,
)


@dataclass(frozen=True)
class GossipsubRequest:
    """One gossipsub simulation: `heartbeats` heartbeat intervals with a profile's parameters."""

    instance: str
    heartbeats: int = 120
    seed: int = 1
    profile: str = DEFAULT_PROFILE
    churn: tuple[float, float] | None = None  # mean minutes online, offline
    failure: tuple[float, int, int | None] | None = None  # share, from, to (heartbeats; None: for good)
    model_seed: int = 1  # the latency model's: control messages' delays
    peers: int = 0  # connections per node (peers as deployed); 0: every subscriber of its topics

    protocol = "gossipsub"
    algorithm = "gossipsub"

    def check(self) -> None:
        if self.heartbeats < 1:
            raise InputError(f"--heartbeats must be at least 1, got {self.heartbeats}")
        self.params().check()
        try:
            self.presence()
        except ValueError as error:
            raise InputError(str(error)) from None

    def presence(self) -> Presence | None:
        """Who is up at each heartbeat (heartbeats as the presence model's rounds), None: everyone."""
        if self.churn is None and self.failure is None:
            return None
        share, start, end = self.failure or (0.0, 0, None)
        online, offline = self.churn or (0.0, 0.0)
        per_minute = 60_000 / PROFILES[self.profile].heartbeat_ms
        return Presence(
            seed=self.seed,
            share=share,
            fail_round=start,
            return_round=end,
            mean_online=online * per_minute,
            mean_offline=offline * per_minute,
        )

    def params(self) -> GossipsubParams:
        return profile(self.profile, self.seed, self.model_seed, self.peers)

    def default_run_id(self) -> str:
        churn = f".churn{self.churn[0]:g}-{self.churn[1]:g}" if self.churn else ""
        fail = ""
        if self.failure:
            share, start, end = self.failure
            fail = f".fail{share:g}at{start}" + (f"-{end}" if end is not None else "")
        model = f".m{self.model_seed}" if self.model_seed != 1 else ""
        peers = f".peers{self.peers}" if self.peers else ""
        return f"{self.instance}.gossipsub.{self.profile}.h{self.heartbeats}{peers}{churn}{fail}{model}.s{self.seed}"

    def params_json(self) -> str:
        fields = {"heartbeats": self.heartbeats, "seed": self.seed, "profile": self.profile}
        if self.churn or self.failure:
            fields.update(churn=self.churn, failure=self.failure)
        return json.dumps({"request": fields, "protocol": self.params().as_dict()}, sort_keys=True)


def _heartbeats(spark, lakehouse: Lakehouse, request: GossipsubRequest, run_id: str, attempt: str, instance, snapshot_every: int, progress: bool) -> str:  # fmt: skip
    """Every batch of topics not yet committed, then the heartbeats combined and the meshes'
    union stored; the regime the topics ran in. `snapshot_every`: subscriptions per batch."""
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, instance[S.INGEST_ID])
    subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID)
    nodes = int(instance[S.NODES])
    csr = Subscriptions.collect(subscriptions, nodes)
    regime = lakehouse.cycles.pick(int(instance[S.SUBSCRIPTIONS]))
    log.info("simulate %s: topics in the %s regime", run_id, regime)
    params, presence, heartbeats = request.params(), request.presence(), request.heartbeats
    topic_ids = np.flatnonzero(np.diff(csr.members[0]))  # the topics with subscribers, ascending
    plan = mesh_batches.batches(topic_ids, csr.topic_sizes, snapshot_every)
    done = _committed(lakehouse, run_id)
    if len(done) < len(plan):
        resume_from = plan[len(done)].first_topic
        lakehouse.delete_run_rows(S.GOSSIPSUB_MESH, run_id, F.col(S.TOPIC_ID) >= resume_from)
        lakehouse.delete_run_rows(S.GOSSIPSUB_BATCHES, run_id, F.col(S.BATCH) >= len(done))
        if done:
            log.info("simulate %s: resuming after batch %d of %d", run_id, len(done), len(plan))
    positions = LatencyModel().coordinates(params.model_seed, np.arange(nodes)) if regime == MEMORY else None
    connections = linked = None
    if params.peers:
        connections = _connections(spark, lakehouse, run_id, csr, params, stored=bool(done))
    if params.peers and regime != MEMORY:  # the tasks read the stored connections
        stored = lakehouse.read(S.GOSSIPSUB_CONNECTIONS).filter(F.col(S.RUN_ID) == run_id)
        linked = stored.select(F.col(S.NODE_ID).alias("dialer"), F.col(S.PEER_ID).alias("listener"))
    with Progress(run_id, total=len(plan) - len(done) + 1, unit="batch", enabled=progress, logger=log) as bar:
        for batch in plan[len(done) :]:
            clock = time.monotonic()
            if regime == MEMORY:
                topics = topic_ids[(topic_ids >= batch.first_topic) & (topic_ids <= batch.last_topic)].tolist()
                measures, mesh = mesh_batches.in_memory(
                    csr.subscribers, topics, positions, params, heartbeats, presence, connections
                )
                mesh_frame = spark.createDataFrame(mesh)
                measure_rows = measures.to_pylist()
            else:
                simulated = mesh_batches.on_spark(subscriptions, batch, params, heartbeats, presence, linked)
                rows = lakehouse.lineage.cut(simulated)
                mesh_frame = mesh_batches.spark_mesh(rows)
                measure_rows = [r.asDict() for r in mesh_batches.spark_measures(rows).collect()]  # one per heartbeat
            ledger.check_owner(lakehouse, run_id, attempt)
            lakehouse.append_run_rows(S.GOSSIPSUB_MESH, run_id, mesh_frame)
            seconds = time.monotonic() - clock
            _commit(spark, lakehouse, run_id, batch, measure_rows, seconds)
            bar.step(f"topics {batch.first_topic}-{batch.last_topic}", subscriptions=batch.subscriptions)
        ledger.check_owner(lakehouse, run_id, attempt)
        _combine(spark, lakehouse, run_id, heartbeats)
        mesh = lakehouse.read(S.GOSSIPSUB_MESH).filter(F.col(S.RUN_ID) == run_id)
        links = mesh.select(F.least(S.NODE_ID, S.PEER_ID).alias(S.U), F.greatest(S.NODE_ID, S.PEER_ID).alias(S.V))
        edges = numbered_links(links.distinct().withColumn(S.ROUND, F.lit(heartbeats)), [S.U, S.V])
        lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, edges.withColumn(S.GAIN, F.lit(None).cast("long")))
        bar.step("stored the heartbeats and the meshes' union", stored=S.OVERLAY_EDGES.name)
    return regime


def _connections(spark, lakehouse: Lakehouse, run_id: str, csr: Subscriptions, params: GossipsubParams, stored: bool) -> Connections:  # fmt: skip
    """Peers as deployed (`overlay.gossip.connections.deployed`, in the driver: one pass over the
    nodes, about 16 bytes a connection), written before the first batch (`stored`: a batch was
    committed, so they were)."""
    connections = deployed(csr, params.peers, params.seed)
    if not stored:
        table = pa.table({S.NODE_ID: connections.dialer, S.PEER_ID: connections.listener})
        lakehouse.write_run_rows(S.GOSSIPSUB_CONNECTIONS, run_id, spark.createDataFrame(table))
    return connections


def _committed(lakehouse: Lakehouse, run_id: str) -> list[int]:
    """The batches committed, in order (a prefix of the plan: batches commit one after another)."""
    if not lakehouse.exists(S.GOSSIPSUB_BATCHES):
        return []
    found = lakehouse.read(S.GOSSIPSUB_BATCHES).filter(F.col(S.RUN_ID) == run_id).select(S.BATCH).distinct()
    numbers = sorted(r[S.BATCH] for r in found.collect())  # one per batch committed
    return [b for i, b in enumerate(numbers) if b == i]


def _commit(spark, lakehouse: Lakehouse, run_id: str, batch, measure_rows: list[dict], seconds: float) -> None:
    """A batch's measures per heartbeat: its commit point."""
    now = _now()
    fixed = {
        S.RUN_ID: run_id,
        S.BATCH: batch.number,
        S.FIRST_TOPIC: batch.first_topic,
        S.LAST_TOPIC: batch.last_topic,
        S.SECONDS: seconds,
        S.COMPUTED_AT: now,
    }
    rows = [tuple({**row, **fixed}.get(c) for c in S.GOSSIPSUB_BATCHES.columns) for row in measure_rows]
    lakehouse.append_run_rows(S.GOSSIPSUB_BATCHES, run_id, local_frame(spark, rows, S.GOSSIPSUB_BATCHES.schema))


def _combine(spark, lakehouse: Lakehouse, run_id: str, heartbeats: int) -> None:
    """`gossipsub_heartbeats` from the run's batches (one row per heartbeat and batch: bounded)."""
    stored = lakehouse.read(S.GOSSIPSUB_BATCHES).filter(F.col(S.RUN_ID) == run_id)
    rows = [r.asDict() for r in stored.collect()]
    seconds = sum({r[S.BATCH]: r[S.SECONDS] for r in rows}.values()) / heartbeats
    combined = np.zeros((heartbeats, len(MEASURES)), dtype=np.int64)
    per_batch = {}
    for r in rows:
        per_batch.setdefault(r[S.BATCH], np.zeros((heartbeats, len(MEASURES)), np.int64))[r[S.HEARTBEAT] - 1] = [
            r[name] for name in MEASURES
        ]
    if per_batch:
        combined = mesh_batches.combine(np.stack(list(per_batch.values())))
    now, out = _now(), []
    for h, values in enumerate(combined.tolist(), start=1):
        row = dict(zip(MEASURES, values))
        meshes = row["meshes"]
        out.append(
            {
                **row,
                S.HEARTBEAT: h,
                S.MESH_AVG: row["mesh_links"] / meshes if meshes else None,
                S.MESH_MIN: row["mesh_min"] if row["mesh_min"] >= 0 else None,
                S.MESH_MAX: row["mesh_max"] if meshes else None,
                S.SECONDS: seconds,
                S.COMPUTED_AT: now,
            }
        )
    frame = local_frame(
        spark,
        [tuple({**r, S.RUN_ID: run_id}.get(c) for c in S.GOSSIPSUB_HEARTBEATS.columns) for r in out],
        S.GOSSIPSUB_HEARTBEATS.schema,
    )
    lakehouse.write_run_rows(S.GOSSIPSUB_HEARTBEATS, run_id, frame)


run_gossipsub = simulation_job(_heartbeats, BATCH_SUBSCRIPTIONS, "subscription", "no topic to keep a mesh of")


def heartbeat_rows(lakehouse: Lakehouse, run_id: str) -> list[dict]:
    """The run's stored heartbeats to print: every PRINT_EVERY-th and the last."""
    table = lakehouse.read(S.GOSSIPSUB_HEARTBEATS).filter(F.col(S.RUN_ID) == run_id).orderBy(S.HEARTBEAT)
    rows = [r.asDict() for r in table.collect()]  # one row per heartbeat: the run's length
    return [r for i, r in enumerate(rows) if r[S.HEARTBEAT] % PRINT_EVERY == 0 or i == len(rows) - 1]
