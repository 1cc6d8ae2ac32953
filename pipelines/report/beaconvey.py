"""The report's BeaConvey part over seeds: Tables 3-5 per workload (mean and range of every
system's ratios against Scribe(-) over the seeds' comparisons, the paper's beside), and Figs. 4-7
(the ratios as |T| grows at |V| = 1,023 under Zipf and Unif).

A comparison's seed is its instance's (the BFS seed of a sample, the instance seed of a synthetic
workload); the workflows give `compare --seed` the same number, so it also seeds the random rings
and fingers and the publications.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from overlay import schema as S
from pipelines.compare import OVERLAY_TYPES, SYSTEMS, system_name
from pipelines.report.workloads import (
    DIST,
    HIGH,
    KIND,
    LOW,
    MAX_SUBS,
    MEAN,
    MIN_SUBS,
    SEEDS,
    WORKLOAD,
    one_per_seed,
    spread,
    workload_table,
)

PUBLICATIONS, BASELINE = "publications", "long_baseline"
METRICS = {  # our column, the paper's column, how the report names it
    S.OVERHEAD_RATIO: (S.PAPER_OVERHEAD_RATIO, "overhead ratio"),
    S.PATH_RATIO: (S.PAPER_PATH_RATIO, "avg path ratio"),
}
TABLE = "table"  # a workload with the comparison's publications and long baseline
TABLE_COLUMNS = (
    TABLE,
    WORKLOAD,
    S.SYSTEM,
    S.TCO_SUPPORT,
    S.OVERHEAD_RATIO,
    "overhead_low",
    "overhead_high",
    S.PAPER_OVERHEAD_RATIO,
    S.PATH_RATIO,
    "path_low",
    "path_high",
    S.PAPER_PATH_RATIO,
    S.AVG_PATH_LENGTH,
    SEEDS,
)
SWEEP_NODES, SWEEP_SUBSCRIPTIONS = 1023, 20  # Figs. 4-7: |V| = 1,023, 20 topics each, |T| from 1,000 to 10,000
FIGURES = {  # figure -> (distribution, metric)
    "Fig. 4": ("zipf", S.OVERHEAD_RATIO),
    "Fig. 5": ("zipf", S.PATH_RATIO),
    "Fig. 6": ("unif", S.OVERHEAD_RATIO),
    "Fig. 7": ("unif", S.PATH_RATIO),
}
FAMILIES = (("BeaConvey", "pie"), ("Scribe", "scribe"), ("iScribe", "iscribe"))  # a figure's panels (a)-(c)
SWEEP_COLUMNS = (
    DIST,
    PUBLICATIONS,
    BASELINE,
    S.TOPICS,
    S.SYSTEM,
    S.OVERLAY_TYPE,
    S.PROTOCOL,
    "metric",
    MEAN,
    LOW,
    HIGH,
    SEEDS,
)


def comparison_settings(comparison_id: str) -> tuple[int, str]:
    """The publications and long baseline of a comparison id (`INSTANCE.pN.sS.BASELINE`)."""
    parts = comparison_id.split(".")
    return int(parts[-3][1:]), parts[-1]


@dataclass
class BeaConveyData:
    tables: pd.DataFrame  # TABLE_COLUMNS, per workload and system
    sweeps: pd.DataFrame  # SWEEP_COLUMNS, the points of Figs. 4-7

    @property
    def empty(self) -> bool:
        return self.tables.empty and self.sweeps.empty


def gather(comparisons: pd.DataFrame, instances: pd.DataFrame) -> BeaConveyData:
    """`comparisons`: `routing_comparison` rows of current routing runs; `instances`: listed."""
    empty = BeaConveyData(pd.DataFrame(columns=TABLE_COLUMNS), pd.DataFrame(columns=SWEEP_COLUMNS))
    if comparisons.empty or instances.empty:
        return empty
    workloads = workload_table(instances)
    rows = comparisons.merge(workloads, on=S.INSTANCE)
    if rows.empty:
        return empty
    settings = [comparison_settings(c) for c in rows[S.COMPARISON_ID]]
    rows[PUBLICATIONS] = [p for p, _ in settings]
    rows[BASELINE] = [b for _, b in settings]
    return BeaConveyData(_tables(rows), _sweeps(rows))


def _tables(rows: pd.DataFrame) -> pd.DataFrame:
    """Tables 3-5 on the BFS samples (the synthetic workloads are Figs. 4-7's)."""
    rows = rows[rows[KIND] == "social"]
    if rows.empty:
        return pd.DataFrame(columns=TABLE_COLUMNS)
    keys = [WORKLOAD, PUBLICATIONS, BASELINE, S.SYSTEM]
    order = [S.CREATED_AT, S.COMPUTED_AT]
    overhead = spread(rows, keys, S.OVERHEAD_RATIO, order=order)
    path = spread(rows, keys, S.PATH_RATIO, order=order)
    others = (
        one_per_seed(rows, keys, order)
        .groupby(keys)
        .agg(
            tco_support=(S.TCO_SUPPORT, "mean"),
            avg_path_length=(S.AVG_PATH_LENGTH, "mean"),
            paper_overhead_ratio=(S.PAPER_OVERHEAD_RATIO, "last"),
            paper_path_ratio=(S.PAPER_PATH_RATIO, "last"),
        )
        .reset_index()
    )
    table = (
        overhead.rename(columns={MEAN: S.OVERHEAD_RATIO, LOW: "overhead_low", HIGH: "overhead_high"})
        .merge(
            path[[*keys, MEAN, LOW, HIGH]].rename(columns={MEAN: S.PATH_RATIO, LOW: "path_low", HIGH: "path_high"}),
            on=keys,
        )
        .merge(others, on=keys)
    )
    table = table.rename(columns={"tco_support": S.TCO_SUPPORT, "avg_path_length": S.AVG_PATH_LENGTH})
    table[TABLE] = [
        f"{w}, {p:,} publications, {b} fingers"
        for w, p, b in zip(table[WORKLOAD], table[PUBLICATIONS], table[BASELINE])
    ]
    order = {system_name(*s): i for i, s in enumerate(SYSTEMS)}
    table["_order"] = table[S.SYSTEM].map(order)
    return table.sort_values([WORKLOAD, PUBLICATIONS, BASELINE, "_order"])[list(TABLE_COLUMNS)].reset_index(drop=True)


def _sweeps(rows: pd.DataFrame) -> pd.DataFrame:
    chosen = rows[
        (rows[KIND] == "synthetic")
        & (rows[S.NODES] == SWEEP_NODES)
        & rows[DIST].isin(("zipf", "unif"))
        & (rows[MIN_SUBS] == SWEEP_SUBSCRIPTIONS)
        & (rows[MAX_SUBS] == SWEEP_SUBSCRIPTIONS)
    ]
    if chosen.empty:
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    keys = [DIST, PUBLICATIONS, BASELINE, S.TOPICS, S.SYSTEM, S.OVERLAY_TYPE, S.PROTOCOL]
    parts = []
    for metric in METRICS:
        points = spread(chosen, keys, metric, order=[S.CREATED_AT, S.COMPUTED_AT])
        parts.append(points.assign(metric=metric))
    return (
        pd.concat(parts)[list(SWEEP_COLUMNS)]
        .sort_values(
            [DIST, "metric", PUBLICATIONS, BASELINE, S.SYSTEM, S.TOPICS],
        )
        .reset_index(drop=True)
    )


def figure_points(sweeps: pd.DataFrame, figure: str) -> pd.DataFrame:
    """One figure's points: its distribution and metric, at the publications and long baseline
    with the most points (a figure draws one workload setting)."""
    dist, metric = FIGURES[figure]
    points = sweeps[(sweeps[DIST] == dist) & (sweeps["metric"] == metric)]
    if points.empty:
        return points
    setting = points.groupby([PUBLICATIONS, BASELINE]).size().sort_values(kind="stable").index[-1]
    return points[(points[PUBLICATIONS] == setting[0]) & (points[BASELINE] == setting[1])]


def _mean(points: pd.DataFrame, system: str, topics: int | None = None) -> pd.Series:
    rows = points[points[S.SYSTEM] == system]
    if topics is not None:
        rows = rows[rows[S.TOPICS] == topics]
    return rows.set_index(S.TOPICS)[MEAN]


PAPER_MARKS = {"Fig. 6": [("BeaConvey(SL, Pie)", 10000, 0.379)]}  # (system, |T|, ratio) from the text
# (system, ratio) the text gives as an average over |T| (Fig. 5: 4.88 / 7.20 hops).
PAPER_MEANS = {
    "Fig. 4": [("BeaConvey(SL, Pie)", 0.594)],
    "Fig. 5": [("BeaConvey(SL, Pie)", round(4.88 / 7.20, 3))],
    "Fig. 6": [("BeaConvey(L, Pie)", 0.585), ("BeaConvey(S, Pie)", 0.653)],
}


def _paper(figure: str, system: str) -> float:
    """The paper's value for a system in a figure, from its text (a mean over |T|, else the point)."""
    means = dict(PAPER_MEANS.get(figure, []))
    return means[system] if system in means else next(v for s, _, v in PAPER_MARKS[figure] if s == system)


def checks(data: BeaConveyData) -> list[str]:
    """The paper's claims beside ours, for the points that exist."""
    lines = []
    for workload, rows in data.tables.groupby(TABLE):
        by = rows.set_index(S.SYSTEM)
        family = [s for s in (system_name("BeaConvey", o, "pie") for o in OVERLAY_TYPES) if s in by.index]
        if "BeaConvey(SL, Pie)" in by.index and len(family) > 1:
            least = by.loc[family, S.OVERHEAD_RATIO].idxmin() == "BeaConvey(SL, Pie)"
            lines.append(
                f"Tables 3-4, {workload}: SL gives BeaConvey (Pie) its least overhead of the four overlay types: "
                f"{'holds' if least else 'does not hold'} ({', '.join(f'{s} {v:.3f}' for s, v in by.loc[family, S.OVERHEAD_RATIO].items())}; "
                f"seeds {by.loc['BeaConvey(SL, Pie)', SEEDS]})."
            )
        if {"BeaConvey(SL, Pie)", "iScribe(-)"} <= set(by.index):
            below = by.loc["BeaConvey(SL, Pie)", S.OVERHEAD_RATIO] < min(1.0, by.loc["iScribe(-)", S.OVERHEAD_RATIO])
            lines.append(
                f"Tables 3-4, {workload}: BeaConvey(SL, Pie)'s overhead below Scribe(-)'s and iScribe(-)'s: "
                f"{'holds' if below else 'does not hold'}."
            )
        routings = ["BeaConvey(SL, Po)", "BeaConvey(SL, Pie)", "BeaConvey(SL, Pa1)"]
        if all(s in by.index for s in routings):
            values = by.loc[routings, S.OVERHEAD_RATIO]
            holds = values.iloc[0] < values.iloc[1] < values.iloc[2]
            lines.append(
                f"Table 5, {workload}: overhead Po < Pie < Pa1 on SL: {'holds' if holds else 'does not hold'} "
                f"({', '.join(f'{v:.3f}' for v in values)})."
            )
    zipf = figure_points(data.sweeps, "Fig. 4")
    if not zipf.empty:
        r = _mean(zipf, "BeaConvey(SL, Pie)")
        lines.append(
            f"Fig. 4 (Zipf): BeaConvey(SL, Pie)'s overhead {r.mean():.3f} of Scribe(-)'s on average over |T| = "
            f"{', '.join(f'{t:,}' for t in r.index)} (paper: {_paper('Fig. 4', 'BeaConvey(SL, Pie)')})."
        )
    paths = figure_points(data.sweeps, "Fig. 5")
    if not paths.empty:
        r = _mean(paths, "BeaConvey(SL, Pie)")
        lines.append(
            f"Fig. 5 (Zipf): BeaConvey(SL, Pie)'s average path {r.mean():.3f} of Scribe(-)'s on average "
            f"(paper: 4.88 / 7.20 = {_paper('Fig. 5', 'BeaConvey(SL, Pie)')})."
        )
    unif = figure_points(data.sweeps, "Fig. 6")
    if not unif.empty:
        sl, large, small = (_mean(unif, f"BeaConvey({o}, Pie)") for o in ("SL", "L", "S"))
        parts = []
        if 10000 in sl.index:
            parts.append(
                f"BeaConvey(SL, Pie)'s overhead at |T| = 10,000: {sl.loc[10000]:.3f} of Scribe(-)'s (paper {_paper('Fig. 6', 'BeaConvey(SL, Pie)')})"
            )
        if len(large) and len(small):
            parts.append(
                f"BeaConvey(L, Pie) {large.mean():.3f} and BeaConvey(S, Pie) {small.mean():.3f} on average "
                f"(paper {_paper('Fig. 6', 'BeaConvey(L, Pie)')} and {_paper('Fig. 6', 'BeaConvey(S, Pie)')}: L below S: {'holds' if large.mean() < small.mean() else 'does not hold'})"
            )
        if parts:
            lines.append("Fig. 6 (Unif): " + "; ".join(parts) + ".")
    unif_paths = figure_points(data.sweeps, "Fig. 7")
    if not unif_paths.empty:
        r = _mean(unif_paths, "BeaConvey(SL, Pie)")
        if len(r) > 1:
            falls = bool((r.diff().dropna() <= 0).all())
            lines.append(
                f"Fig. 7 (Unif): BeaConvey(SL, Pie)'s path ratio {', '.join(f'{v:.3f}' for v in r)} as |T| grows "
                f"(paper: falls toward 0.5: {'falls' if falls else 'does not fall throughout'})."
            )
    return lines


def table_rows(tables: pd.DataFrame) -> dict[str, list[dict]]:
    """Per table (workload, publications, long baseline), Tables 3-5 as markdown-ready rows:
    'mean [low-high]' cells."""
    out = {}
    for workload, rows in tables.groupby(TABLE):
        out[workload] = [
            {
                "system": r[S.SYSTEM],
                "TcoSuppR": round(float(r[S.TCO_SUPPORT]), 3) if pd.notna(r[S.TCO_SUPPORT]) else None,
                "overhead ratio": f"{r[S.OVERHEAD_RATIO]:.3f} [{r['overhead_low']:.3f}-{r['overhead_high']:.3f}]",
                "paper (overhead)": None if pd.isna(r[S.PAPER_OVERHEAD_RATIO]) else float(r[S.PAPER_OVERHEAD_RATIO]),
                "avg path ratio": f"{r[S.PATH_RATIO]:.3f} [{r['path_low']:.3f}-{r['path_high']:.3f}]",
                "paper (path)": None if pd.isna(r[S.PAPER_PATH_RATIO]) else float(r[S.PAPER_PATH_RATIO]),
                "avg path": round(float(r[S.AVG_PATH_LENGTH]), 2),
                SEEDS: r[SEEDS],
            }
            for _, r in rows.iterrows()
        ]
    return out
