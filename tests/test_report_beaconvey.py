"""The report's BeaConvey part over seeds from hand-made comparison rows: Tables 3-5 as mean and
range per workload, the points of Figs. 4-7 and the checks against the paper's text (no Spark)."""

import json
from datetime import datetime

import pandas as pd
import pytest

from overlay import schema as S
from pipelines.report import beaconvey, beaconvey_figures


def zipf(name, topics, seed):
    params = {"dist": "zipf", "nodes": 1023, "topics": topics, "min_subs": 20, "max_subs": 20, "seed": seed}
    return {S.INSTANCE: name, S.SOURCE: "synthetic", S.PARAMS: json.dumps(params), S.NODES: 1023, S.TOPICS: topics}


def row(instance, seed, system, overhead, path, paper=(None, None)):
    overlay, protocol = {
        "BeaConvey(SL, Pie)": ("SL", "pie"),
        "BeaConvey(S, Pie)": ("S", "pie"),
        "Scribe(-)": ("-", "scribe"),
        "BeaConvey(SL, Po)": ("SL", "po"),
        "BeaConvey(SL, Pa1)": ("SL", "pa1"),
    }[system]
    return {
        S.COMPARISON_ID: f"{instance}.p500.s{seed}.chord",
        S.INSTANCE: instance,
        S.SYSTEM: system,
        S.OVERLAY_TYPE: overlay,
        S.PROTOCOL: protocol,
        S.ROUTING_RUN_ID: f"{instance}.{system}",
        S.TCO_SUPPORT: 1.0,
        S.ROUTING_OVERHEAD: 100,
        S.AVG_PATH_LENGTH: 5.0 * path,
        S.MAX_PATH_LENGTH: 9,
        S.OVERHEAD_RATIO: overhead,
        S.PATH_RATIO: path,
        S.PAPER_COLUMN: None,
        S.PAPER_OVERHEAD_RATIO: paper[0],
        S.PAPER_PATH_RATIO: paper[1],
        S.COMPUTED_AT: datetime(2026, 11, 28),
    }


def tw(name, size, seed):
    params = {
        "path": "/x/twitter_bofa_careers.edges.gz",
        "sample_bfs": size,
        "seed": seed,
        "directed": True,
        "reverse": True,
    }
    return {S.INSTANCE: name, S.SOURCE: "social", S.PARAMS: json.dumps(params), S.NODES: size, S.TOPICS: size}


def test_seeds_make_one_table_per_sample_and_figure_points_by_topics():
    instances = pd.DataFrame(
        [zipf(f"z{t}-s{s}", t, s) for t in (1000, 10000) for s in (1, 2)] + [tw("tw-s1", 1000, 1), tw("tw-s3", 1000, 3)]
    )
    rows = []
    for topics, base, seeds in ((1000, 0.5, ((1, 0.0), (2, 0.1))), (10000, 0.7, ((2, 0.1),))):
        for seed, shift in seeds:
            name = f"z{topics}-s{seed}"
            rows += [
                row(name, seed, "BeaConvey(SL, Pie)", base + shift, 0.6),
                row(name, seed, "Scribe(-)", 1.0, 1.0),
                row(name, seed, "BeaConvey(S, Pie)", base + 0.2, 0.7),
            ]
    for name, seed, shift in (("tw-s1", 1, 0.0), ("tw-s3", 3, 0.2)):
        rows += [
            row(name, seed, "BeaConvey(SL, Pie)", 0.3 + shift, 0.6, paper=(0.573, 0.902)),
            row(name, seed, "BeaConvey(S, Pie)", 0.35, 0.7),
            row(name, seed, "Scribe(-)", 1.0, 1.0),
            row(name, seed, "BeaConvey(SL, Po)", 0.2, 0.9),
            row(name, seed, "BeaConvey(SL, Pa1)", 0.45, 0.6),
        ]
    data = beaconvey.gather(pd.DataFrame(rows), instances)
    assert set(data.tables["table"]) == {"TW 1K, 500 publications, chord fingers"}  # synthetic: figures only
    table = data.tables.set_index(S.SYSTEM)
    assert table.loc["BeaConvey(SL, Pie)", S.OVERHEAD_RATIO] == pytest.approx(0.4)
    assert (table.loc["BeaConvey(SL, Pie)", "overhead_low"], table.loc["BeaConvey(SL, Pie)", "overhead_high"]) == (
        0.3,
        0.5,
    )
    assert (table.loc["BeaConvey(SL, Pie)", "seeds"], table.loc["BeaConvey(SL, Pie)", S.PAPER_OVERHEAD_RATIO]) == (
        "1,3",
        0.573,
    )
    points = beaconvey.figure_points(data.sweeps, "Fig. 4")
    sl = points[points[S.SYSTEM] == "BeaConvey(SL, Pie)"]
    assert sl[[S.TOPICS, "mean", "seeds"]].values.tolist() == [
        [1000, pytest.approx(0.55), "1,2"],
        [10000, pytest.approx(0.8), "2"],
    ]
    lines = beaconvey.checks(data)
    assert (
        "Fig. 4 (Zipf): BeaConvey(SL, Pie)'s overhead 0.675 of Scribe(-)'s on average over |T| = 1,000, 10,000 (paper: 0.594)."
        in lines
    )
    assert (
        "Table 5, TW 1K, 500 publications, chord fingers: overhead Po < Pie < Pa1 on SL: holds (0.200, 0.400, 0.450)."
        in lines
    )
    assert any(
        "SL gives BeaConvey (Pie) its least overhead of the four overlay types: does not hold" in line for line in lines
    )
    assert any("below Scribe(-)'s and iScribe(-)'s" in line for line in lines) is False  # no iScribe(-) row
    figure = beaconvey_figures.ratios(points, "Fig. 4")
    assert [ax.get_title() for ax in figure.axes] == ["(a) BeaConvey", "(b) Scribe", "(c) iScribe"]
    drawn = {c.get_label(): len(c.lines[0].get_xdata()) for c in figure.axes[0].containers}
    assert drawn == {"BeaConvey(SL, Pie)": 2, "BeaConvey(S, Pie)": 2}
    paper = [line for line in figure.axes[0].get_lines() if line.get_label().endswith("paper's mean (text)")]
    assert [(line.get_label(), list(line.get_xdata()), list(line.get_ydata())) for line in paper] == [
        ("BeaConvey(SL, Pie), paper's mean (text)", [1000, 10000], [0.594, 0.594])
    ]
    sl = next(c for c in figure.axes[0].containers if c.get_label() == "BeaConvey(SL, Pie)")
    assert paper[0].get_color() == sl.lines[0].get_color()  # the paper's line in its system's colour
