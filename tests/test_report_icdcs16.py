"""The report's ICDCS'16 part from hand-made run rows: workloads without their seeds, the spread
over seeds, which runs each figure takes, Table I beside the paper's, and the checks (no Spark)."""

import json

import pandas as pd
import pytest

from overlay import schema as S
from overlay.summaries import BUDGET, BUDGET_RATIO
from pipelines.report import icdcs16, icdcs16_figures

FB = "/x/facebook_combined.txt.gz"
DOUBAN = "/x/soc-douban.mtx.gz"


def social(name, path, size, seed):
    params = {"path": path, "sample_bfs": size, "seed": seed, "feed_seeds": None, "directed": False}
    return {S.INSTANCE: name, S.SOURCE: "social", S.PARAMS: json.dumps(params), S.NODES: size, S.TOPICS: size}


def synthetic(name, dist, nodes, topics, low, high, seed):
    params = {"dist": dist, "nodes": nodes, "topics": topics, "min_subs": low, "max_subs": high, "seed": seed}
    return {S.INSTANCE: name, S.SOURCE: "synthetic", S.PARAMS: json.dumps(params), S.NODES: nodes, S.TOPICS: topics}


def run(instance, algorithm, tco, ratio=None, d=None, seed=1, edges=100):
    budget = f"ratio {ratio}" if ratio is not None else f"d = {d}"
    tag = f"r{ratio}" if ratio is not None else f"d{d}"
    return {
        S.INSTANCE: instance,
        S.RUN_ID: f"{instance}.{algorithm}.{tag}.s{seed}",
        S.ALGORITHM: algorithm,
        BUDGET: budget,
        BUDGET_RATIO: ratio,
        S.EDGES: edges,
        S.MAX_DEGREE: 4,
        S.TCO_SUPPORT: tco,
    }


def frames(instances, runs):
    return pd.DataFrame(runs), pd.DataFrame(instances)


def test_seeds_of_one_workload_make_one_point_with_its_spread():
    instances = [social(f"fb-1k-s{s}", FB, 1000, s) for s in (1, 2, 3)]
    runs = [run(f"fb-1k-s{s}", "gpm", tco, ratio=0.2, seed=s) for s, tco in zip((1, 2, 3), (0.90, 0.95, 1.0))]
    data = icdcs16.gather(*frames(instances, runs))
    row = data.table.iloc[0]
    assert (row[icdcs16.WORKLOAD], row[icdcs16.PAPER_COLUMN], row["paper"]) == ("FB 1K", "FB1K", 0.951)
    assert row[icdcs16.MEAN] == pytest.approx(0.95)
    assert (row[icdcs16.LOW], row[icdcs16.HIGH], row[icdcs16.SEEDS]) == (0.90, 1.0, "1,2,3")
    assert row[icdcs16.STD] == pytest.approx(0.05)
    points = data.sweeps["Figs. 4-5"]
    assert points[[icdcs16.PANEL, icdcs16.X, icdcs16.SEEDS]].values.tolist() == [["FB 1K", 0.2, "1,2,3"]]


def test_each_figure_takes_only_the_runs_of_its_fixed_settings():
    instances = [
        synthetic("n1k", "zipf", 1000, 1000, 20, 600, 1),  # Fig. 6 (d = 4) and Fig. 9 (ratios)
        synthetic("n2k", "zipf", 2000, 1000, 20, 600, 1),  # Fig. 6 (d = 4) and Fig. 7 (d = 3)
        synthetic("t2k", "zipf", 2000, 2000, 20, 600, 1),  # Fig. 7
        synthetic("r30", "zipf", 2000, 1000, 30, 110, 1),  # Fig. 8 (width 80)
        synthetic("odd", "zipf", 2000, 1000, 30, 100, 1),  # no figure (width 70)
        {**social("fb", FB, 0, 1), S.PARAMS: json.dumps({"path": FB, "sample_bfs": None, "seed": 1})},  # whole graph
    ]
    runs = [
        run("n1k", "gpm", 0.8, d=4),
        run("n1k", "gpm", 0.7, ratio=0.1),
        run("n2k", "gpm", 0.85, d=4),
        run("n2k", "gpm", 0.6, d=3),
        run("t2k", "gpm", 0.5, d=3),
        run("r30", "gpm", 0.4, d=4),
        run("odd", "gpm", 0.3, d=4),
        run("fb", "gpm", 0.9, ratio=0.2),
        run("n1k", "gm", 1.0, d=4),
    ]
    sweeps = icdcs16.gather(*frames(instances, runs)).sweeps
    xy = {figure: points[[icdcs16.X, icdcs16.MEAN]].values.tolist() for figure, points in sweeps.items()}
    assert xy == {
        "Figs. 4-5": [],
        "Fig. 6": [[1000, 0.8], [2000, 0.85]],
        "Fig. 7": [[1000, 0.6], [2000, 0.5]],
        "Fig. 8": [[70.0, 0.4]],
        "Fig. 9": [[0.1, 0.7]],
    }


def test_table1_names_the_stand_in_and_the_checks_compare_with_the_paper():
    instances = [social("fb-1k", FB, 1000, 1), social("db-10k", DOUBAN, 10000, 1)]
    values = {  # (FB 1K, Douban 10K): GPM grows, the gap to RandomM widens; SpiderCastM above GPM on Douban
        "gpa": (1.0, 1.0),
        "gpm": (0.95, 0.97),
        "spidercast-m": (0.90, 0.98),
        "random-m": (0.4, 0.1),
    }
    runs = [
        run(instance, algorithm, pair[i], ratio=0.2)
        for algorithm, pair in values.items()
        for i, instance in enumerate(("fb-1k", "db-10k"))
    ]
    runs.append(
        {**run("fb-1k", "gpa", 0.99, ratio=0.2), BUDGET: "ratio 0.2, m = d|V|/2", S.RUN_ID: "fb-1k.gpa.r0.2d.s1"}
    )
    data = icdcs16.gather(*frames(instances, runs))
    columns, rows = icdcs16.table1_rows(data.table)
    assert columns == ["algorithm", "FB 1K (FB1K)", "Douban 10K (FB10K stand-in)"]
    assert rows[-1] == {
        "algorithm": "GPA (m = d|V|/2)",
        "FB 1K (FB1K)": "0.990 [0.990-0.990] (1) / 1.000",
        "Douban 10K (FB10K stand-in)": None,
    }
    assert rows[0]["FB 1K (FB1K)"].startswith("1.000")  # the eq. 36 GPA run stays apart
    assert rows[1] == {
        "algorithm": "GPM",
        "FB 1K (FB1K)": "0.950 [0.950-0.950] (1) / 0.951",
        "Douban 10K (FB10K stand-in)": "0.970 [0.970-0.970] (1) / 0.974",
    }
    lines = data.checks()
    assert "Table I, FB 1K: GPA >= GPM >= SpiderCastM > RandomM at every point (1): holds." in lines
    assert "Table I, FB 1K: GPA (m = d|V|/2) >= GPM >= SpiderCastM > RandomM at every point (1): holds." in lines
    assert (
        "Table I, Douban 10K: GPA >= GPM >= SpiderCastM > RandomM at every point (1): does not hold "
        "(at 0.2: GPM 0.970 < SpiderCastM 0.980)." in lines
    )
    assert any("0.950 to 0.970 (grows; paper FB 1K to FB 10K: 0.951 to 0.974)" in line for line in lines)
    assert any("0.550 to 0.870 (widens; paper: 0.585 to 0.914)" in line for line in lines)


def test_sweep_checks_and_figure():
    instances = [synthetic(f"e{n}", "expo", n, 1000, 20, 600, 1) for n in (1000, 10000)]
    runs = [
        run("e1000", "gpm", 0.70, d=4),
        run("e10000", "gpm", 0.80, d=4),
        run("e1000", "random-m", 0.30, d=4),
        run("e10000", "random-m", 0.30, d=4),
    ]
    data = icdcs16.gather(*frames(instances, runs))
    line = next(c for c in data.checks() if c.startswith("Fig. 6"))
    assert line == (
        "Fig. 6, expo: GPM's TcoSuppR rises with |V| (0.700, 0.800); 0.800 at 10,000 (paper 0.835); "
        "GPM - RandomM 0.450 on average (paper 0.439)."
    )
    spec = next(s for s in icdcs16.SWEEPS if s.figure == "Fig. 6")
    figure = icdcs16_figures.sweep(data.sweeps["Fig. 6"], spec, icdcs16.paper_marks(spec))
    (ax,) = figure.axes
    assert ax.get_title() == "expo"
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["GPM", "RandomM", "paper (text)"]
    assert icdcs16_figures.sweep(data.sweeps["Fig. 7"], spec, []) is None


def test_no_runs_on_workloads_leave_every_part_empty():
    instances = pd.DataFrame([synthetic("tiny", "zipf", 24, 10, 1, 5, 1)])
    quality = pd.DataFrame([run("tiny", "gpm", 0.5, ratio=0.5)])
    data = icdcs16.gather(quality, instances)
    assert data.empty and data.checks() == [] and data.swept_instances() == set()
    assert icdcs16.gather(quality.iloc[:0], instances).empty


def test_figs_4_5_keep_1k_samples_and_a_later_instance_of_a_seed_replaces_an_earlier_one():
    instances = pd.DataFrame(
        [
            {**social("fb-1k", FB, 1000, 1), S.CREATED_AT: pd.Timestamp("2026-11-26")},  # older, same workload and seed
            {**social("fb-1k-s1", FB, 1000, 1), S.CREATED_AT: pd.Timestamp("2026-11-28")},
            {**social("fb-1k-s2", FB, 1000, 2), S.CREATED_AT: pd.Timestamp("2026-11-28")},
            {**social("db-10k-s1", DOUBAN, 10000, 1), S.CREATED_AT: pd.Timestamp("2026-11-28")},
        ]
    )
    runs = [
        run("fb-1k", "gpm", 0.10, ratio=0.2, seed=1),
        run("fb-1k-s1", "gpm", 0.90, ratio=0.2, seed=1),
        run("fb-1k-s2", "gpm", 0.80, ratio=0.2, seed=2),
        run("fb-1k-s2", "gpm", 0.70, ratio=0.1, seed=2),
        run("db-10k-s1", "gpm", 0.95, ratio=0.2, seed=1),
    ]
    data = icdcs16.gather(*frames(instances, runs))
    points = data.sweeps["Figs. 4-5"]
    assert points[[icdcs16.PANEL, icdcs16.X, icdcs16.MEAN, icdcs16.SEEDS]].values.tolist() == [
        ["FB 1K", 0.1, 0.70, "2"],
        ["FB 1K", 0.2, pytest.approx(0.85), "1,2"],
    ]
    assert data.table[[icdcs16.WORKLOAD, icdcs16.SEEDS]].values.tolist() == [["FB 1K", "1,2"], ["Douban 10K", "1"]]
