"""The gossipsub job: libp2p's gossipsub v1.1 meshes built by simulated heartbeats, as a run of
`overlay_runs` whose links are the union of its meshes (`overlay.gossip.gossipsub`).

Storage protocol, as Feverfew's (`pipelines.simulate`): the run row is claimed first; every
`snapshot_every` heartbeats (and at the last) the heartbeats since the last snapshot are
committed (`gossipsub_heartbeats`), then every node's state (`gossipsub_states`), the commit
point. The same command resumes a stopped run from its last snapshot (rows of later heartbeats
are debris and go first); the simulation is a function of the seed, so it ends as an
uninterrupted run would. At the end the meshes go to `gossipsub_mesh` (one row per direction),
their union to `overlay_edges`, and the run is evaluated like any design: `evaluate`, `export`,
`resilience`, `route` and `disseminate` take it like any other overlay.
"""

from __future__ import annotations

import json
import logging
from dataclasses import asdict, dataclass, replace

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.baselines import numbered_links
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip.cycles import CycleState
from overlay.gossip.gossipsub import PROFILES, STATE_COLUMNS, GossipsubParams, gossipsub_engine, heartbeat_summary
from overlay.rappel.presence import Presence
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.progress import Progress
from pipelines.simulate import last_snapshot, simulation_job, snapshot, stored_state
from pipelines.spark import task_slots

log = logging.getLogger(__name__)

SNAPSHOT_EVERY = 20
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
    S.SECONDS,
)


@dataclass(frozen=True)
class GossipsubRequest:
    """One gossipsub simulation: `heartbeats` of the mesh maintenance with a profile's parameters."""

    instance: str
    heartbeats: int = 120
    seed: int = 1
    profile: str = "default"
    churn: tuple[float, float] | None = None  # mean minutes online, offline
    failure: tuple[float, int, int | None] | None = None  # share, from, to (heartbeats; None: for good)

    protocol = "gossipsub"
    algorithm = "gossipsub"

    def check(self) -> None:
        if self.heartbeats < 1:
            raise InputError(f"--heartbeats must be at least 1, got {self.heartbeats}")
        if self.profile not in PROFILES:
            raise InputError(f"--profile must be one of {', '.join(PROFILES)}, got '{self.profile}'")
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
        return replace(PROFILES[self.profile], seed=self.seed)

    def default_run_id(self) -> str:
        profile = "" if self.profile == "default" else f".{self.profile}"
        churn = f".churn{self.churn[0]:g}-{self.churn[1]:g}" if self.churn else ""
        fail = ""
        if self.failure:
            share, start, end = self.failure
            fail = f".fail{share:g}at{start}" + (f"-{end}" if end is not None else "")
        return f"{self.instance}.gossipsub{profile}.h{self.heartbeats}{churn}{fail}.s{self.seed}"

    def params_json(self) -> str:
        fields = {"heartbeats": self.heartbeats, "seed": self.seed, "profile": self.profile}
        if self.churn or self.failure:
            fields.update(churn=self.churn, failure=self.failure)
        return json.dumps({"request": fields, "protocol": asdict(self.params())}, sort_keys=True)


def _snapshot(lakehouse: Lakehouse, run_id: str, state: DataFrame, heartbeat: int) -> None:
    snapshot(lakehouse, run_id, state, heartbeat, S.GOSSIPSUB_STATES, S.HEARTBEAT, STATE_COLUMNS)


def _heartbeats(spark, lakehouse: Lakehouse, request: GossipsubRequest, run_id: str, attempt: str, instance, snapshot_every: int, progress: bool) -> str:  # fmt: skip
    """The heartbeats (from the last snapshot on), then the meshes and their union stored; the
    regime they ran in."""
    subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, instance[S.INGEST_ID])
    nodes = int(instance[S.NODES])
    csr = Subscriptions.collect(subscriptions.select(S.NODE_ID, S.TOPIC_ID), nodes)
    regime = lakehouse.cycles.pick(int(instance[S.SUBSCRIPTIONS]))
    log.info("simulate %s: heartbeats in the %s regime", run_id, regime)
    engine = gossipsub_engine(
        spark, csr, request.params(), task_slots(spark), lakehouse.lineage, request.presence(), regime
    )
    resumed = last_snapshot(lakehouse, run_id, S.GOSSIPSUB_STATES, S.HEARTBEAT)
    if resumed is None:
        for table in (S.GOSSIPSUB_HEARTBEATS, S.GOSSIPSUB_STATES):
            lakehouse.delete_run_rows(table, run_id)
        state = lakehouse.lineage.cut(engine.start(spark, nodes))
        _snapshot(lakehouse, run_id, state, 0)
        first = 1
    else:
        for table in (S.GOSSIPSUB_HEARTBEATS, S.GOSSIPSUB_STATES):
            lakehouse.delete_run_rows(table, run_id, F.col(S.HEARTBEAT) > resumed)
        state = stored_state(lakehouse, run_id, resumed, S.GOSSIPSUB_STATES, S.HEARTBEAT, STATE_COLUMNS)
        first = resumed + 1
        log.info("simulate %s: resuming after heartbeat %d", run_id, resumed)
    last, pending = request.heartbeats, []

    def on_heartbeat(heartbeat: int, state: CycleState, seconds: float) -> dict:
        summary = heartbeat_summary(state)
        pending.append({**summary, S.HEARTBEAT: heartbeat, S.SECONDS: seconds, S.COMPUTED_AT: _now()})
        if heartbeat % snapshot_every == 0 or heartbeat == last:
            ledger.check_owner(lakehouse, run_id, attempt)
            rows = [tuple({**row, S.RUN_ID: run_id}.get(c) for c in S.GOSSIPSUB_HEARTBEATS.columns) for row in pending]
            frame = local_frame(spark, rows, S.GOSSIPSUB_HEARTBEATS.schema)
            lakehouse.append_run_rows(S.GOSSIPSUB_HEARTBEATS, run_id, frame)
            pending.clear()
            _snapshot(lakehouse, run_id, state.frame, heartbeat)
        avg = summary[S.MESH_AVG]
        return {"mesh": "-" if avg is None else round(avg, 2), "grafts": summary[S.GRAFTS], "prunes": summary[S.PRUNES]}

    with Progress(run_id, total=max(0, last - first + 1), unit="heartbeat", enabled=progress, logger=log) as bar:
        if first <= last:
            state = engine.run(state, first, last, on_cycle=on_heartbeat, on_step=bar.on_step)
        ledger.check_owner(lakehouse, run_id, attempt)
        mesh = lakehouse.lineage.cut(
            state.select(S.NODE_ID, F.arrays_zip("mesh_topic", "mesh_peer").alias("_pairs"))
            .select(S.NODE_ID, F.explode("_pairs").alias("_pair"))
            .select(F.col("_pair.mesh_topic").alias(S.TOPIC_ID), S.NODE_ID, F.col("_pair.mesh_peer").alias(S.PEER_ID))
        )
        lakehouse.write_run_rows(S.GOSSIPSUB_MESH, run_id, mesh)
        links = mesh.select(F.least(S.NODE_ID, S.PEER_ID).alias(S.U), F.greatest(S.NODE_ID, S.PEER_ID).alias(S.V))
        edges = numbered_links(links.distinct().withColumn(S.ROUND, F.lit(last)), [S.U, S.V])
        lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, edges.withColumn(S.GAIN, F.lit(None).cast("long")))
        bar.step("stored the meshes and their union", stored=S.OVERLAY_EDGES.name)
    return regime


run_gossipsub = simulation_job(_heartbeats, SNAPSHOT_EVERY, "heartbeat", "no topic to keep a mesh of")


def heartbeat_rows(lakehouse: Lakehouse, run_id: str) -> list[dict]:
    """The run's stored heartbeats to print: every PRINT_EVERY-th and the last."""
    table = lakehouse.read(S.GOSSIPSUB_HEARTBEATS).filter(F.col(S.RUN_ID) == run_id).orderBy(S.HEARTBEAT)
    rows = [r.asDict() for r in table.collect()]  # one row per heartbeat: the run's length
    return [r for i, r in enumerate(rows) if r[S.HEARTBEAT] % PRINT_EVERY == 0 or i == len(rows) - 1]
