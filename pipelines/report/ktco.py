"""The report's kTCO and failure parts: PODC'13 Figs. 1-2 from the runs, and `resilience` rows.

A *sweep* is a family of synthetic instances with the same settings but |V| (what the kTCO
workflow ingests at several sizes): per size, the links and average degree of GM, GM2, CyclePT
and HararyPT (every k stored), and the topic diameters of GM and GM2. The paper's claims are
set beside ours (`PAPER`); its curves' values are not in the text.
"""

from __future__ import annotations

import json

import pandas as pd

from overlay import registry
from overlay import schema as S

FAMILY = "family"
# GM (a 1TCO) next to the kTCO designs.
KTCO_ALGORITHMS = ("gm", *(a.name for a in registry.ALGORITHMS.values() if a.builds_k is not None))
SWEEP_COLUMNS = (
    FAMILY,
    S.NODES,
    "gm_degree",
    "gm2_degree",
    "cycle_pt_degree",
    "harary_pt_2_degree",
    "gm2_over_gm",
    "cycle_pt_over_gm2",
    "largest_harary_k",
    "gm_diameter_max",
    "gm2_diameter_max",
    "gm_diameter_avg",
    "gm2_diameter_avg",
)
PAPER = (
    "PODC'13 (text only; the curves' values are not given): GM2's average degree below 1.65 x GM's "
    "on average (\"around 1.5 times\"); CyclePT's about 5 x GM2's and growing with |V|; HararyPT "
    "reaches a 12TCO with fewer links than CyclePT's 2TCO; GM2's topic diameters 0.40 x GM's "
    "(max) and 0.50 x (mean) on average, the gaps widening with |V|."
)
RESILIENCE_COLUMNS = (
    S.INSTANCE,
    S.RUN_ID,
    S.ALGORITHM,
    S.MODEL,
    S.SHARE,
    "trials",
    S.TCO_SUPPORT,
    "tco_support_min",
    S.CONNECTED_TOPIC_SHARE,
    "connected_min",
    "connected_max",
)


def family_of(params: str, source: str) -> str | None:
    """A synthetic instance's settings without |V| (None for other sources)."""
    if source != "synthetic":
        return None
    p = json.loads(params)
    return f"{p['dist']} |T| = {p['topics']}, {p['min_subs']}-{p['max_subs']} topics per node, seed {p['seed']}"


def sweep_points(quality: pd.DataFrame, instances: pd.DataFrame) -> pd.DataFrame:
    """One row per (family, |V|) with kTCO runs: the columns of `SWEEP_COLUMNS`. When a size has
    several runs of one algorithm (and k), the latest-named is taken (run ids sort)."""
    families = instances.assign(**{FAMILY: [family_of(p, s) for p, s in zip(instances[S.PARAMS], instances[S.SOURCE])]})
    runs = quality[quality[S.ALGORITHM].isin(KTCO_ALGORITHMS)].merge(
        families[[S.INSTANCE, FAMILY]].dropna(),
        on=S.INSTANCE,
    )
    if runs.empty or not runs[S.ALGORITHM].isin(("gm2", "cycle-pt", "harary-pt")).any():
        return pd.DataFrame(columns=SWEEP_COLUMNS)
    rows = []
    for (family, nodes), group in runs.sort_values(S.RUN_ID).groupby([FAMILY, S.NODES]):
        last = {algorithm: g.iloc[-1] for algorithm, g in group[group[S.ALGORITHM] != "harary-pt"].groupby(S.ALGORITHM)}
        harary = group[group[S.ALGORITHM] == "harary-pt"].groupby(S.K).tail(1).set_index(S.K)[S.EDGES]

        def value(algorithm, column, last=last):
            row = last.get(algorithm)
            if row is None or (column.startswith("diameter") and row[S.DIAMETER_METHOD] == "skipped"):
                return None
            return float(row[column])

        gm, gm2, cycle = (value(a, S.AVG_DEGREE) for a in ("gm", "gm2", "cycle-pt"))
        cycle_links = value("cycle-pt", S.EDGES)
        within = [int(k) for k, links in harary.items() if cycle_links is not None and links <= cycle_links]
        rows.append(
            {
                FAMILY: family,
                S.NODES: int(nodes),
                "gm_degree": gm,
                "gm2_degree": gm2,
                "cycle_pt_degree": cycle,
                "harary_pt_2_degree": 2 * float(harary[2]) / nodes if 2 in harary.index else None,
                "gm2_over_gm": gm2 / gm if gm and gm2 else None,
                "cycle_pt_over_gm2": cycle / gm2 if cycle and gm2 else None,
                "largest_harary_k": max(within) if within else None,
                "gm_diameter_max": value("gm", S.DIAMETER_MAX),
                "gm2_diameter_max": value("gm2", S.DIAMETER_MAX),
                "gm_diameter_avg": value("gm", S.DIAMETER_AVG),
                "gm2_diameter_avg": value("gm2", S.DIAMETER_AVG),
            }
        )
    return pd.DataFrame(rows, columns=SWEEP_COLUMNS)


def sweep_checks(points: pd.DataFrame) -> list[str]:
    """Item 6 of the kTCO issue, per family, as sentences ('holds' or 'does not hold')."""
    lines = []
    for family, rows in points.groupby(FAMILY):
        rows = rows.sort_values(S.NODES)
        both = rows.dropna(subset=["gm_degree", "gm2_degree", "cycle_pt_degree"])
        if len(both):
            order = bool(((both.gm_degree < both.gm2_degree) & (both.gm2_degree < both.cycle_pt_degree)).all())
            mean = both.gm2_over_gm.mean()
            ratios = both.cycle_pt_over_gm2.round(2).tolist()
            growing = all(b >= a for a, b in zip(ratios, ratios[1:]))
            lines.append(
                f"{family}: GM < GM2 < CyclePT in average degree at every |V|: {'holds' if order else 'does not hold'}; "
                f"GM2 / GM {mean:.3f} on average (paper: below 1.65); CyclePT / GM2 {', '.join(map(str, ratios))} "
                f"({'growing' if growing else 'not always growing'} with |V|; paper: about 5)."
            )
        if rows.largest_harary_k.notna().any():
            ks = rows.dropna(subset=["largest_harary_k"])
            lines.append(
                f"{family}: largest k at which HararyPT uses no more links than CyclePT: "
                + ", ".join(f"{int(k)} at |V| = {n}" for n, k in zip(ks[S.NODES], ks.largest_harary_k))
                + " (paper: 12; only the k stored are tried)."
            )
        diameters = rows.dropna(subset=["gm_diameter_max", "gm2_diameter_max"])
        if len(diameters):
            below = bool(
                (
                    (diameters.gm2_diameter_max < diameters.gm_diameter_max)
                    & (diameters.gm2_diameter_avg < diameters.gm_diameter_avg)
                ).all()
            )
            lines.append(
                f"{family}: GM2's max and mean topic diameters below GM's at every |V|: "
                f"{'holds' if below else 'does not hold'}; on average "
                f"{(diameters.gm2_diameter_max / diameters.gm_diameter_max).mean():.2f} x (max, paper 0.40) and "
                f"{(diameters.gm2_diameter_avg / diameters.gm_diameter_avg).mean():.2f} x (mean, paper 0.50)."
            )
    return lines


def resilience_summary(rows: pd.DataFrame, quality: pd.DataFrame) -> pd.DataFrame:
    """Per current run, model and share: means and ranges over trials (the latest seed stored)."""
    if rows.empty:
        return pd.DataFrame(columns=RESILIENCE_COLUMNS)
    rows = rows.merge(quality[[S.RUN_ID, S.INSTANCE, S.ALGORITHM]], on=S.RUN_ID)
    grouped = rows.groupby([S.INSTANCE, S.RUN_ID, S.ALGORITHM, S.MODEL, S.SEED, S.SHARE])
    summary = grouped.agg(
        trials=(S.TRIAL, "count"),
        tco_support=(S.TCO_SUPPORT, "mean"),
        tco_support_min=(S.TCO_SUPPORT, "min"),
        connected_topic_share=(S.CONNECTED_TOPIC_SHARE, "mean"),
        connected_min=(S.CONNECTED_TOPIC_SHARE, "min"),
        connected_max=(S.CONNECTED_TOPIC_SHARE, "max"),
    ).reset_index()
    latest = summary.groupby([S.RUN_ID, S.MODEL])[S.SEED].transform("max")
    return (
        summary[summary[S.SEED] == latest][list(RESILIENCE_COLUMNS)]
        .sort_values([S.INSTANCE, S.MODEL, S.RUN_ID, S.SHARE])
        .reset_index(drop=True)
    )
