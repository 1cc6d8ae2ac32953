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
from overlay.design.baselines import numbered_link_table, numbered_links, undirected_links
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
from pipelines.simulate import Simulated, simulation_job

log = logging.getLogger(__name__)

BATCH_SUBSCRIPTIONS = 20_000  # a commit's topics hold about this many subscriptions (spark regime)
MEMORY_BATCH_SUBSCRIPTIONS = 2_000_000  # and in the memory regime, where a batch's commit is most of its time
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


def _heartbeats(spark, lakehouse: Lakehouse, request: GossipsubRequest, claimed: ledger.Claim, instance, snapshot_every: int | None, progress: bool) -> Simulated:  # fmt: skip
    """Every batch of topics not yet committed, then the heartbeats combined and the meshes'
    union stored. `snapshot_every`: subscriptions per batch (None: the regime's default). A run
    whose batches all ran in this process in the memory regime is finished from memory: the
    heartbeats and the union from the batches' arrays, and its links handed to the evaluation."""
    run_id, attempt = claimed.run_id, claimed.attempt
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, instance[S.INGEST_ID])
    subscriptions = subscriptions.select(S.NODE_ID, S.TOPIC_ID)
    nodes = int(instance[S.NODES])
    csr = Subscriptions.collect(subscriptions, nodes)
    regime = lakehouse.cycles.pick(int(instance[S.SUBSCRIPTIONS]))
    log.info("simulate %s: topics in the %s regime", run_id, regime)
    params, presence, heartbeats = request.params(), request.presence(), request.heartbeats
    topic_ids = np.flatnonzero(np.diff(csr.members[0]))  # the topics with subscribers, ascending
    done = _committed(lakehouse, run_id) if claimed.found is not None else []
    after = done[-1][1] if done else -1  # the last topic committed
    if claimed.found is not None:  # rows of topics after it are debris of the stopped attempt
        lakehouse.delete_run_rows(S.GOSSIPSUB_MESH, run_id, F.col(S.TOPIC_ID) > after)
        lakehouse.delete_run_rows(S.GOSSIPSUB_BATCHES, run_id, F.col(S.BATCH) >= len(done))
        if done:
            log.info("simulate %s: resuming after batch %d (topic %d)", run_id, len(done), after)
    left = topic_ids > after
    per_batch = snapshot_every or (MEMORY_BATCH_SUBSCRIPTIONS if regime == MEMORY else BATCH_SUBSCRIPTIONS)
    plan = mesh_batches.batches(topic_ids[left], csr.topic_sizes[left], per_batch, first_number=len(done))
    positions = LatencyModel().coordinates(params.model_seed, np.arange(nodes)) if regime == MEMORY else None
    connections = linked = None
    if params.peers:
        connections = _connections(spark, lakehouse, run_id, csr, params, stored=claimed.found is not None)
    if params.peers and regime != MEMORY:  # the tasks read the stored connections
        stored = lakehouse.read(S.GOSSIPSUB_CONNECTIONS).filter(F.col(S.RUN_ID) == run_id)
        linked = stored.select(F.col(S.NODE_ID).alias("dialer"), F.col(S.PEER_ID).alias("listener"))
    in_memory = regime == MEMORY and not done  # every batch of the run runs here: finished from memory
    measures, meshes, seconds = [], [], 0.0
    with Progress(run_id, total=len(plan) + 1, unit="batch", enabled=progress, logger=log) as bar:
        for batch in plan:
            clock = time.monotonic()
            if regime == MEMORY:
                topics = topic_ids[(topic_ids >= batch.first_topic) & (topic_ids <= batch.last_topic)].tolist()
                measured, mesh = mesh_batches.in_memory(
                    csr.subscribers, topics, positions, params, heartbeats, presence, connections
                )
                mesh_frame = spark.createDataFrame(mesh)
                measure_rows = measured.to_pylist()
                if in_memory:
                    measures.append(np.stack([measured.column(name).to_numpy() for name in MEASURES], axis=1))
                    meshes.append(mesh)
            else:
                simulated = mesh_batches.on_spark(subscriptions, batch, params, heartbeats, presence, linked)
                rows = lakehouse.lineage.cut(simulated)
                mesh_frame = mesh_batches.spark_mesh(rows)
                measure_rows = [r.asDict() for r in mesh_batches.spark_measures(rows).collect()]  # one per heartbeat
            ledger.check_owner(lakehouse, run_id, attempt)
            lakehouse.append_run_rows(S.GOSSIPSUB_MESH, run_id, mesh_frame)
            elapsed = time.monotonic() - clock
            seconds += elapsed
            _commit(spark, lakehouse, run_id, batch, measure_rows, elapsed)
            bar.step(f"topics {batch.first_topic}-{batch.last_topic}", subscriptions=batch.subscriptions)
        if not plan:
            ledger.check_owner(lakehouse, run_id, attempt)
        if in_memory:
            links = _union(meshes)
            edges = spark.createDataFrame(numbered_link_table(links, heartbeats))
            combined = _heartbeat_frame(spark, run_id, _combined(measures, heartbeats), seconds / heartbeats)
        else:
            links = None
            edges = _stored_union(lakehouse, run_id, heartbeats)
            combined = _stored_heartbeats(spark, lakehouse, run_id, heartbeats)
        lakehouse.write_run_tables(run_id, [(S.GOSSIPSUB_HEARTBEATS, combined), (S.OVERLAY_EDGES, edges)])
        bar.step("stored the heartbeats and the meshes' union", stored=S.OVERLAY_EDGES.name)
    return Simulated(regime, links, csr if links is not None else None)


def _union(meshes: list[pa.Table]) -> np.ndarray:
    """The meshes' links, undirected, each once, ascending by (u, v): k x 2."""
    if not meshes:
        return np.zeros((0, 2), np.int64)
    table = pa.concat_tables(meshes)
    return undirected_links(table.column(S.NODE_ID).to_numpy(), table.column(S.PEER_ID).to_numpy())


def _stored_union(lakehouse: Lakehouse, run_id: str, heartbeats: int):
    mesh = lakehouse.read(S.GOSSIPSUB_MESH).filter(F.col(S.RUN_ID) == run_id)
    links = mesh.select(F.least(S.NODE_ID, S.PEER_ID).alias(S.U), F.greatest(S.NODE_ID, S.PEER_ID).alias(S.V))
    edges = numbered_links(links.distinct().withColumn(S.ROUND, F.lit(heartbeats)), [S.U, S.V])
    return edges.withColumn(S.GAIN, F.lit(None).cast("long"))


def _connections(spark, lakehouse: Lakehouse, run_id: str, csr: Subscriptions, params: GossipsubParams, stored: bool) -> Connections:  # fmt: skip
    """Peers as deployed (`overlay.gossip.connections.deployed`, in the driver: one pass over the
    nodes, about 16 bytes a connection), written before the first batch (`stored`: a batch was
    committed, so they were)."""
    connections = deployed(csr, params.peers, params.seed)
    if not stored:
        table = pa.table({S.NODE_ID: connections.dialer, S.PEER_ID: connections.listener})
        lakehouse.write_run_rows(S.GOSSIPSUB_CONNECTIONS, run_id, spark.createDataFrame(table))
    return connections


def _committed(lakehouse: Lakehouse, run_id: str) -> list[tuple[int, int]]:
    """The batches committed, in order, with the last topic of each (a prefix of the run's
    batches: they commit one after another)."""
    if not lakehouse.exists(S.GOSSIPSUB_BATCHES):
        return []
    found = lakehouse.read(S.GOSSIPSUB_BATCHES).filter(F.col(S.RUN_ID) == run_id)
    rows = found.select(S.BATCH, S.LAST_TOPIC).distinct().collect()  # one per batch committed
    ordered = sorted((r[S.BATCH], r[S.LAST_TOPIC]) for r in rows)
    return [(b, last) for i, (b, last) in enumerate(ordered) if b == i]


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


def _stored_heartbeats(spark, lakehouse: Lakehouse, run_id: str, heartbeats: int):
    """`gossipsub_heartbeats` from the run's stored batches (one row per heartbeat and batch:
    bounded), for a run resumed or simulated in the spark regime."""
    stored = lakehouse.read(S.GOSSIPSUB_BATCHES).filter(F.col(S.RUN_ID) == run_id)
    rows = [r.asDict() for r in stored.collect()]
    seconds = sum({r[S.BATCH]: r[S.SECONDS] for r in rows}.values()) / heartbeats
    per_batch: dict[int, np.ndarray] = {}
    for r in rows:
        per_batch.setdefault(r[S.BATCH], np.zeros((heartbeats, len(MEASURES)), np.int64))[r[S.HEARTBEAT] - 1] = [
            r[name] for name in MEASURES
        ]
    return _heartbeat_frame(spark, run_id, _combined(list(per_batch.values()), heartbeats), seconds)


def _combined(per_batch: list[np.ndarray], heartbeats: int) -> np.ndarray:
    """[heartbeats, MEASURES] of the batches' (each [heartbeats, MEASURES])."""
    if not per_batch:
        return mesh_batches.combine(np.zeros((0, heartbeats, len(MEASURES)), np.int64))
    return mesh_batches.combine(np.stack(per_batch))


def _heartbeat_frame(spark, run_id: str, combined: np.ndarray, seconds: float):
    """The `gossipsub_heartbeats` rows of the combined measures; `seconds`: a heartbeat's share."""
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
    return local_frame(
        spark,
        [tuple({**r, S.RUN_ID: run_id}.get(c) for c in S.GOSSIPSUB_HEARTBEATS.columns) for r in out],
        S.GOSSIPSUB_HEARTBEATS.schema,
    )


run_gossipsub = simulation_job(_heartbeats, None, "subscription", "no topic to keep a mesh of")


def heartbeat_rows(lakehouse: Lakehouse, run_id: str) -> list[dict]:
    """The run's stored heartbeats to print: every PRINT_EVERY-th and the last."""
    table = lakehouse.read(S.GOSSIPSUB_HEARTBEATS).filter(F.col(S.RUN_ID) == run_id).orderBy(S.HEARTBEAT)
    rows = [r.asDict() for r in table.collect()]  # one row per heartbeat: the run's length
    return [r for i, r in enumerate(rows) if r[S.HEARTBEAT] % PRINT_EVERY == 0 or i == len(rows) - 1]
