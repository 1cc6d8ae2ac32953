"""The compare-meshes job: gossipsub beside the papers' overlays on one instance
(docs/readings/gossipsub.md#comparison; the workflow: conf/workflows/mesh_comparison.yaml).

It runs, or reuses when stored, every run it needs, then writes one `mesh_comparison` row per
system:

* gossipsub: `simulate gossipsub` (the profile's meshes after `heartbeats`); its publications
  spread by gossipsub's eager push and lazy gossip (`disseminate --protocol gossipsub-spread`);
* GPM at gossipsub's max degree, MinMaxODA (a TCO) and Feverfew (40 gossip cycles): each
  publication flooded along the run's topic subgraph (`disseminate --protocol flood`);
* BeaConvey's SL (GSwicoS ring, GSwicoL fingers) with Pie routing (`route --protocol pie`), which
  does not simulate failures.

Every spread runs with every node up and with 5% and 20% of the nodes down (the same nodes for
every system: the failures depend on the seed and the node ids only), the same publications
(topics and publishers depend on the seed and the instance only).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip.gossipsub import DEFAULT_PROFILE
from pipelines.design import DesignRequest, run_design
from pipelines.disseminate import FLOOD, GOSSIPSUB_SPREAD, DisseminateRequest, run_dissemination
from pipelines.gossipsub import GossipsubRequest, run_gossipsub
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.progress import Progress
from pipelines.route import RouteRequest, run_route
from pipelines.simulate import SimulateRequest, run_simulation

log = logging.getLogger(__name__)

FAILURES = (0.0, 0.05, 0.2)
SYSTEMS = ("gossipsub", "GPM (gossipsub's max degree)", "MinMaxODA", "Feverfew", "SL with Pie")


@dataclass(frozen=True)
class MeshComparisonRequest:
    instance: str
    seed: int = 1
    publications: int = 200
    heartbeats: int = 120
    profile: str = DEFAULT_PROFILE

    def check(self) -> None:
        if self.publications < 1:
            raise InputError(f"--publications must be positive, got {self.publications}")
        GossipsubRequest(self.instance, self.heartbeats, self.seed, self.profile).check()

    @property
    def comparison_id(self) -> str:
        return f"{self.instance}.meshes.{self.profile}.h{self.heartbeats}.p{self.publications}.s{self.seed}"


def run_mesh_comparison(
    spark: SparkSession, lakehouse: Lakehouse, request: MeshComparisonRequest, progress: bool = True
) -> DataFrame:
    """Run (or reuse) every run of the comparison, store and return its rows."""
    request.check()
    seed = request.seed
    bar = Progress(f"compare-meshes {request.comparison_id}", 5 + 1, enabled=progress, logger=log)
    with bar:
        mesh = run_gossipsub(
            spark,
            lakehouse,
            GossipsubRequest(request.instance, request.heartbeats, seed, request.profile),
            progress=progress,
            diameters=False,
        )
        degree = _metrics(lakehouse, mesh[S.RUN_ID])[S.MAX_DEGREE]
        bar.step(f"gossipsub {mesh[S.RUN_ID]}: {mesh[S.EDGES]} links, max degree {degree}", system="gossipsub")
        designed = {}
        for system, design in (
            (SYSTEMS[1], DesignRequest(request.instance, "gpm", max_degree=max(1, int(degree)), seed=seed)),
            (SYSTEMS[2], DesignRequest(request.instance, "minmaxoda", seed=seed)),
            (SYSTEMS[4], DesignRequest(request.instance, "swico", short="gswico", long="gswico", seed=seed)),
        ):
            designed[system] = run_design(spark, lakehouse, design, diameters=False, progress=progress)
            bar.step(f"{system}: {designed[system][S.RUN_ID]}", system=system)
        feverfew = run_simulation(
            spark,
            lakehouse,
            SimulateRequest(request.instance, "feverfew", seed=seed),
            progress=progress,
            diameters=False,
        )
        bar.step(f"Feverfew: {feverfew[S.RUN_ID]}", system="Feverfew")
        runs = {
            SYSTEMS[0]: mesh[S.RUN_ID],
            **{k: v[S.RUN_ID] for k, v in designed.items()},
            SYSTEMS[3]: feverfew[S.RUN_ID],
        }
        spread_ids: dict[str, list[str]] = {}  # per system: its routing runs, every node up first
        inputs: dict = {}  # a run's chosen publications and spread inputs, read once for its three spreads
        for system in SYSTEMS:
            run_id = runs[system]
            if system == SYSTEMS[4]:
                routed = run_route(
                    spark, lakehouse, RouteRequest(run_id, "pie", request.publications, seed), progress=False
                )
                spread_ids[system] = [routed[S.ROUTING_RUN_ID]]
            else:
                kind = GOSSIPSUB_SPREAD if system == SYSTEMS[0] else FLOOD
                spread_ids[system] = [
                    run_dissemination(
                        spark,
                        lakehouse,
                        DisseminateRequest(run_id, request.publications, seed=seed, mass_share=share, kind=kind),
                        progress=False,
                        inputs=inputs,
                    )[S.ROUTING_RUN_ID]
                    for share in FAILURES
                ]
        metrics = _rows(lakehouse, S.OVERLAY_METRICS, S.RUN_ID, list(runs.values()))  # 5 rows
        routed = _rows(lakehouse, S.ROUTING_METRICS, S.ROUTING_RUN_ID, [i for ids in spread_ids.values() for i in ids])
        rows = [
            _row(request, system, runs[system], metrics[runs[system]], [routed[i] for i in spread_ids[system]])
            for system in SYSTEMS
        ]
        bar.step("stored the comparison", stored=S.MESH_COMPARISON.name)
    columns = [c for c in S.MESH_COMPARISON.columns if c != S.COMPARISON_ID]
    frame = local_frame(
        spark, [tuple(r[c] for c in columns) for r in rows], S.frame_schema(S.MESH_COMPARISON, tuple(columns))
    )
    lakehouse.write_run_rows(S.MESH_COMPARISON, request.comparison_id, frame, key=S.COMPARISON_ID)
    return lakehouse.read(S.MESH_COMPARISON).filter(F.col(S.COMPARISON_ID) == request.comparison_id)


def _metrics(lakehouse: Lakehouse, run_id: str) -> Row:
    return lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == run_id).first()


def _rows(lakehouse: Lakehouse, table: S.TableSpec, key: str, ids: list[str]) -> dict[str, Row]:
    """The rows of these runs (a few: one per run), by id, in one read."""
    return {r[key]: r for r in lakehouse.read(table).filter(F.col(key).isin(ids)).collect()}


def _row(request: MeshComparisonRequest, system: str, run_id: str, metrics: Row, spreads: list[Row]) -> dict:
    up = spreads[0]
    delivered = up[S.DELIVERIES] or 0
    ratios = [m[S.DELIVERY_RATIO] for m in spreads] + [None] * (len(FAILURES) - len(spreads))
    return {
        S.INSTANCE: request.instance,
        S.SEED: request.seed,
        S.SYSTEM: system,
        S.RUN_ID: run_id,
        S.ROUTING_RUN_ID: up[S.ROUTING_RUN_ID],
        S.AVG_DEGREE: metrics[S.AVG_DEGREE],
        S.MAX_DEGREE: int(metrics[S.MAX_DEGREE]),
        S.TCO_SUPPORT: metrics[S.TCO_SUPPORT],
        S.DUPLICATES_PER_DELIVERY: up[S.DUPLICATE_DELIVERIES] / delivered if delivered else None,
        S.IRRELEVANT_PER_DELIVERY: up[S.ROUTING_OVERHEAD] / delivered if delivered else None,
        S.AVG_PATH_LENGTH: up[S.AVG_PATH_LENGTH],
        S.LATENCY_MEDIAN: up[S.LATENCY_MEDIAN],
        S.DELIVERY_RATIO: ratios[0],
        S.DELIVERY_RATIO_5: ratios[1],
        S.DELIVERY_RATIO_20: ratios[2],
        S.COMPUTED_AT: _now(),
        S.BYTES_PER_DELIVERY: up[S.BYTES_SENT] / delivered if delivered and up[S.BYTES_SENT] is not None else None,
    }


COLUMNS = (
    S.SYSTEM,
    S.AVG_DEGREE,
    S.MAX_DEGREE,
    S.TCO_SUPPORT,
    S.DUPLICATES_PER_DELIVERY,
    S.IRRELEVANT_PER_DELIVERY,
    S.AVG_PATH_LENGTH,
    S.DELIVERY_RATIO,
    S.DELIVERY_RATIO_5,
    S.DELIVERY_RATIO_20,
    S.BYTES_PER_DELIVERY,
)
