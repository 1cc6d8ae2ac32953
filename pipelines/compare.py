"""The BeaConvey comparison (DEBS'18 Tables 3-5) on one instance: design the four overlay types,
route one workload with every system, and report each system's routing overhead and average path
length as ratios against Scribe(-), next to the paper's ratios.

Systems: BeaConvey(O, Pie), iScribe(O) and Scribe(O) on O in SL, S, L, - (Tables 3-4), plus
BeaConvey(SL, Po) and BeaConvey(SL, Pa1) (Table 5). The data-oblivious long fingers of S and -
are Chord's or RandomL's (the paper allows either). Designs and routing runs are ordinary runs
with default ids, so a rerun reuses every one already complete.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.frames import local_frame
from pipelines.design import DesignRequest, run_design
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now
from pipelines.progress import Progress
from pipelines.route import RouteRequest, run_route

log = logging.getLogger(__name__)

OVERLAY_TYPES = ("SL", "S", "L", "-")
SYSTEMS: tuple[tuple[str, str, str], ...] = (
    *(("BeaConvey", o, "pie") for o in OVERLAY_TYPES),
    *(("iScribe", o, "iscribe") for o in OVERLAY_TYPES),
    *(("Scribe", o, "scribe") for o in OVERLAY_TYPES),
    ("BeaConvey", "SL", "po"),
    ("BeaConvey", "SL", "pa1"),
)
BASELINE = ("Scribe", "-", "scribe")
PROTOCOL_NAMES = {"pie": "Pie", "po": "Po", "pa1": "Pa1", "scribe": "Scribe", "iscribe": "iScribe"}

# (routing overhead ratio, average path length ratio) against Scribe(-): Tables 3, 4 and 5.
PAPER: dict[str, dict[str, tuple[float, float]]] = {
    "FB1K": {
        "BeaConvey(SL, Pie)": (0.266, 0.700),
        "BeaConvey(S, Pie)": (0.355, 0.902),
        "BeaConvey(L, Pie)": (0.683, 0.780),
        "BeaConvey(-, Pie)": (0.908, 1.07),
        "iScribe(SL)": (0.427, 0.992),
        "iScribe(S)": (0.428, 0.975),
        "iScribe(L)": (0.993, 0.987),
        "iScribe(-)": (1.007, 1.004),
        "Scribe(SL)": (0.914, 1.014),
        "Scribe(S)": (1.05, 0.976),
        "Scribe(L)": (0.675, 0.985),
        "Scribe(-)": (1.0, 1.0),
        "BeaConvey(SL, Po)": (0.182, 0.794),
        "BeaConvey(SL, Pa1)": (0.341, 0.729),
    },
    "FB10K": {
        "BeaConvey(SL, Pie)": (0.449, 0.968),
        "BeaConvey(S, Pie)": (0.612, 1.629),
        "BeaConvey(L, Pie)": (0.827, 1.15),
        "BeaConvey(-, Pie)": (1.127, 2.088),
        "iScribe(SL)": (0.636, 1.035),
        "iScribe(S)": (0.591, 1.007),
        "iScribe(L)": (1.109, 1.024),
        "iScribe(-)": (1.049, 0.9999),
        "Scribe(SL)": (0.908, 1.040),
        "Scribe(S)": (1.024, 1.007),
        "Scribe(L)": (0.819, 1.031),
        "Scribe(-)": (1.0, 1.0),
        "BeaConvey(SL, Po)": (0.319, 1.300),
        "BeaConvey(SL, Pa1)": (0.557, 0.981),
    },
    "TW1K": {
        "BeaConvey(SL, Pie)": (0.573, 0.902),
        "BeaConvey(S, Pie)": (0.617, 1.273),
        "BeaConvey(L, Pie)": (0.757, 0.931),
        "BeaConvey(-, Pie)": (0.853, 1.357),
        "iScribe(SL)": (0.664, 1.041),
        "iScribe(S)": (0.596, 1.020),
        "iScribe(L)": (0.913, 1.007),
        "iScribe(-)": (0.817, 1.008),
        "Scribe(SL)": (0.853, 1.035),
        "Scribe(S)": (1.096, 1.019),
        "Scribe(L)": (0.714, 0.996),
        "Scribe(-)": (1.0, 1.0),
        "BeaConvey(SL, Po)": (0.359, 1.145),
        "BeaConvey(SL, Pa1)": (0.712, 0.928),
    },
    "TW10K": {
        "BeaConvey(SL, Pie)": (0.748, 1.131),
        "BeaConvey(S, Pie)": (0.797, 1.252),
        "BeaConvey(L, Pie)": (1.018, 1.121),
        "BeaConvey(-, Pie)": (1.17, 1.310),
        "iScribe(SL)": (0.768, 1.058),
        "iScribe(S)": (0.671, 1.001),
        "iScribe(L)": (1.167, 1.040),
        "iScribe(-)": (1.016, 1.004),
        "Scribe(SL)": (0.894, 1.051),
        "Scribe(S)": (1.012, 0.999),
        "Scribe(L)": (0.841, 1.040),
        "Scribe(-)": (1.0, 1.0),
        "BeaConvey(SL, Po)": (0.489, 1.688),
        "BeaConvey(SL, Pa1)": (0.917, 1.179),
    },
}
LONG_BASELINES = ("chord", "random")


def system_name(family: str, overlay: str, protocol: str) -> str:
    if family == "BeaConvey":
        return f"BeaConvey({overlay}, {PROTOCOL_NAMES[protocol]})"
    return f"{family}({overlay})"


@dataclass(frozen=True)
class CompareRequest:
    instance: str
    publications: int = 2000
    seed: int = 1
    long_baseline: str = "chord"
    paper: str | None = None  # FB1K, FB10K, TW1K, TW10K: the paper's column to print next to ours
    replace: bool = False  # redo the four overlays (and so every routing run on them): after a re-ingest
    overlays: tuple[str, ...] = OVERLAY_TYPES  # the overlay types compared (always "-": the baseline's)

    def check(self) -> None:
        unknown = [o for o in self.overlays if o not in OVERLAY_TYPES]
        if unknown or len(set(self.overlays)) != len(self.overlays):
            raise InputError(
                f"--overlays takes distinct overlay types among {', '.join(OVERLAY_TYPES)}, got {', '.join(self.overlays)}"
            )
        if BASELINE[1] not in self.overlays:
            raise InputError(
                f"--overlays must include '{BASELINE[1]}': the ratios are against {system_name(*BASELINE)}"
            )
        if self.long_baseline not in LONG_BASELINES:
            raise InputError(f"--long-baseline must be one of {', '.join(LONG_BASELINES)}")
        if self.paper is not None and self.paper not in PAPER:
            raise InputError(f"--paper must be one of {', '.join(PAPER)}, got '{self.paper}'")
        if self.publications < 1:
            raise InputError("--publications must be positive")

    @property
    def chosen_overlays(self) -> tuple[str, ...]:
        """The overlay types compared, in the tables' order."""
        return tuple(o for o in OVERLAY_TYPES if o in self.overlays)

    @property
    def systems(self) -> tuple[tuple[str, str, str], ...]:
        """The systems on the chosen overlays: all 14 by default."""
        return tuple(s for s in SYSTEMS if s[1] in self.overlays)

    @property
    def comparison_id(self) -> str:
        """The whole comparison's id; one on fewer overlay types names them (`-` as `none`)."""
        base = f"{self.instance}.p{self.publications}.s{self.seed}.{self.long_baseline}"
        if self.chosen_overlays == OVERLAY_TYPES:
            return base
        return base + "." + "_".join("none" if o == "-" else o for o in self.chosen_overlays)

    def overlay_request(self, overlay: str) -> DesignRequest:
        short = "gswico" if "S" in overlay else "random"
        long = "gswico" if "L" in overlay else self.long_baseline
        return DesignRequest(self.instance, "swico", short=short, long=long, seed=self.seed)


def run_compare(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: CompareRequest,
    progress: bool = True,
) -> DataFrame:
    """Run (or reuse) every design and routing run of the comparison; store and return its rows.
    `progress`: one step per overlay (4) and per system (14), each with the figures its run row
    holds, around the designs' and routing runs' own progress (`pipelines.progress`)."""
    request.check()
    designs: dict[str, Row] = {}
    overlays, systems = request.chosen_overlays, request.systems
    bar = Progress(f"compare {request.comparison_id}", len(overlays) + len(systems), enabled=progress, logger=log)
    with bar:
        for i, overlay in enumerate(overlays, 1):
            designs[overlay] = run_design(
                spark,
                lakehouse,
                request.overlay_request(overlay),
                diameters=False,
                progress=progress,
                replace=request.replace,
            )
            done = designs[overlay]
            tco = "-" if done[S.TCO_SUPPORT] is None else f"{done[S.TCO_SUPPORT]:.4f}"
            bar.step(
                f"overlay {i}/{len(overlays)} {overlay} ({done[S.RUN_ID]}): {done[S.EDGES]} links, TcoSuppR {tco}",
                overlay=overlay,
            )
        routed: dict[tuple[str, str, str], Row] = {}
        inputs: dict = {}  # each overlay's routing tables and placed workload, built once for its systems
        for i, system in enumerate(systems, 1):
            family, overlay, protocol = system
            routed[system] = run_route(
                spark,
                lakehouse,
                RouteRequest(designs[overlay][S.RUN_ID], protocol, request.publications, request.seed),
                progress=progress,
                inputs=inputs,
            )
            if routed[system][S.STATUS] != S.COMPLETE:
                raise InputError(
                    f"{system_name(*system)} did not deliver exactly once: {routed[system][S.COUNTER_EXAMPLE]}"
                )
            bar.step(
                f"system {i}/{len(systems)} {system_name(*system)}: {routed[system][S.SUPERSTEPS]} supersteps, "
                f"{routed[system][S.MESSAGES]} messages",
                system=system_name(*system),
            )
    ids = [row[S.ROUTING_RUN_ID] for row in routed.values()]
    metrics = {
        r[S.ROUTING_RUN_ID]: r
        for r in lakehouse.read(S.ROUTING_METRICS).filter(F.col(S.ROUTING_RUN_ID).isin(ids)).collect()  # <= 14 rows
    }
    base = metrics[routed[BASELINE][S.ROUTING_RUN_ID]]
    paper = PAPER.get(request.paper or "", {})
    rows = []
    for system in systems:
        name = system_name(*system)
        m = metrics[routed[system][S.ROUTING_RUN_ID]]
        ratio_overhead = m[S.ROUTING_OVERHEAD] / base[S.ROUTING_OVERHEAD] if base[S.ROUTING_OVERHEAD] else None
        ratio_path = m[S.AVG_PATH_LENGTH] / base[S.AVG_PATH_LENGTH] if base[S.AVG_PATH_LENGTH] else None
        theirs = paper.get(name, (None, None))
        rows.append(
            (
                request.comparison_id,
                request.instance,
                name,
                system[1],
                system[2],
                routed[system][S.ROUTING_RUN_ID],
                designs[system[1]][S.TCO_SUPPORT],
                m[S.ROUTING_OVERHEAD],
                m[S.AVG_PATH_LENGTH],
                m[S.MAX_PATH_LENGTH],
                ratio_overhead,
                ratio_path,
                request.paper,
                theirs[0],
                theirs[1],
                _now(),
            )
        )
    columns = [c for c in S.ROUTING_COMPARISON.columns if c != S.COMPARISON_ID]
    frame = local_frame(spark, [row[1:] for row in rows], S.frame_schema(S.ROUTING_COMPARISON, tuple(columns)))
    lakehouse.write_run_rows(S.ROUTING_COMPARISON, request.comparison_id, frame, key=S.COMPARISON_ID)
    return lakehouse.read(S.ROUTING_COMPARISON).filter(F.col(S.COMPARISON_ID) == request.comparison_id)


def markdown(rows: list[Row]) -> str:
    """The comparison as a README table: ours next to the paper's."""

    def fmt(value, digits=3):
        return "—" if value is None else f"{value:.{digits}f}"

    lines = [
        "| system | TcoSuppR | overhead ratio | paper | avg path ratio | paper | overhead | avg path |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    order = {system_name(*s): i for i, s in enumerate(SYSTEMS)}
    for r in sorted(rows, key=lambda r: order.get(r[S.SYSTEM], 99)):
        lines.append(
            f"| {r[S.SYSTEM]} | {fmt(r[S.TCO_SUPPORT])} | {fmt(r[S.OVERHEAD_RATIO])} | {fmt(r[S.PAPER_OVERHEAD_RATIO])} "
            f"| {fmt(r[S.PATH_RATIO])} | {fmt(r[S.PAPER_PATH_RATIO])} | {r[S.ROUTING_OVERHEAD]:,} | {fmt(r[S.AVG_PATH_LENGTH], 2)} |"
        )
    return "\n".join(lines)
