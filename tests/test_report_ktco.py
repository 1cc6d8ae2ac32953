"""The report's kTCO sweep and failure summaries, on hand-made run rows (no Spark)."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from overlay import schema as S
from pipelines.report import figures
from pipelines.report.ktco import resilience_summary, sweep_checks, sweep_points

PARAMS = {"dist": "expo", "topics": 200, "min_subs": 30, "max_subs": 30, "seed": 1}


def instances() -> pd.DataFrame:
    rows = [(f"e{n}", "synthetic", json.dumps({**PARAMS, "nodes": n})) for n in (100, 200)]
    rows.append(("fb", "social", json.dumps({"path": "x"})))
    return pd.DataFrame(rows, columns=[S.INSTANCE, S.SOURCE, S.PARAMS])


def run(instance, algorithm, nodes, edges, k=None, diameters=None):
    dmax, davg = diameters or (0, 0.0)
    return {
        S.INSTANCE: instance,
        S.RUN_ID: f"{instance}.{algorithm}.{k}",
        S.ALGORITHM: algorithm,
        S.K: k,
        S.NODES: nodes,
        S.EDGES: edges,
        S.AVG_DEGREE: 2 * edges / nodes,
        S.DIAMETER_MAX: dmax,
        S.DIAMETER_AVG: davg,
        S.DIAMETER_METHOD: "exact" if diameters else "skipped",
    }


def quality() -> pd.DataFrame:
    return pd.DataFrame(
        [
            run("e100", "gm", 100, 300, diameters=(10, 5.0)),
            run("e100", "gm2", 100, 480, 2, diameters=(4, 2.0)),
            run("e100", "cycle-pt", 100, 2400, 2),
            *(
                run("e100", "harary-pt", 100, edges, k)
                for k, edges in ((2, 700), (3, 2500), (4, 1400), (6, 2300), (8, 2600))
            ),
            run("e200", "gm", 200, 560),
            run("e200", "gm2", 200, 940, 2),
            run("e200", "cycle-pt", 200, 5600, 2),
            run("fb", "gm2", 1000, 3000, 2),  # not a synthetic sweep: left out
        ]
    )


def test_sweep_points_and_checks_follow_the_runs():
    points = sweep_points(quality(), instances())
    assert points[S.NODES].tolist() == [100, 200]
    first, second = points.iloc[0], points.iloc[1]
    assert first.gm2_over_gm == pytest.approx(1.6) and second.gm2_over_gm == pytest.approx(940 / 560)
    assert first.cycle_pt_over_gm2 == pytest.approx(5.0) and second.cycle_pt_over_gm2 == pytest.approx(5600 / 940)
    assert first.largest_harary_k == 6 and pd.isna(second.largest_harary_k)  # k = 8 has more links than CyclePT
    assert first.harary_pt_2_degree == pytest.approx(14.0)
    assert (first.gm_diameter_max, first.gm2_diameter_avg) == (10, 2.0) and pd.isna(second.gm_diameter_max)
    checks = sweep_checks(points)
    assert "GM < GM2 < CyclePT in average degree at every |V|: holds" in checks[0]
    assert f"GM2 / GM {(1.6 + 940 / 560) / 2:.3f} on average" in checks[0] and "growing with |V|" in checks[0]
    assert "6 at |V| = 100" in checks[1]
    assert "below GM's at every |V|: holds; on average 0.40 x (max" in checks[2]
    assert figures.ktco_degrees(points) is not None and figures.ktco_diameters(points) is not None
    assert sweep_points(quality()[lambda q: q[S.ALGORITHM] == "gm"], instances()).empty  # no kTCO design


def test_resilience_summary_keeps_the_latest_seed_per_run_and_model():
    rows = pd.DataFrame(
        [
            {
                S.RUN_ID: "e100.gm.None",
                S.MODEL: "random-nodes",
                S.SEED: seed,
                S.SHARE: 0.1,
                S.TRIAL: trial,
                S.TCO_SUPPORT: support,
                S.CONNECTED_TOPIC_SHARE: connected,
            }
            for seed, trial, support, connected in ((1, 0, 0.5, 0.1), (2, 0, 0.9, 0.6), (2, 1, 0.7, 0.4))
        ]
    )
    summary = resilience_summary(rows, quality())
    assert summary[["trials", S.TCO_SUPPORT, "tco_support_min", "connected_min", "connected_max"]].values.tolist() == [
        [2, pytest.approx(0.8), 0.7, 0.4, 0.6],
    ]
    assert figures.resilience(summary, {"e100.gm.None": "GM"}) is not None
