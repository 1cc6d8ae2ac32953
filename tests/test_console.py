"""Printed tables say what they mean: units in the headers, blank for a figure not computed."""

from datetime import datetime

from overlay import schema as S
from pipelines.console import METRIC_COLUMNS, format_table, metric_rows


def test_headers_carry_units_and_missing_figures_are_blank():
    rows = [
        {S.RUN_ID: "a", S.SECONDS: 12.5, S.AVG_DEGREE: 4.25, S.DIAMETER_AVG: 3.0, S.EDGES: 1200},
        {S.RUN_ID: "b", S.SECONDS: None, S.AVG_DEGREE: 2.0, S.DIAMETER_AVG: None, S.EDGES: 7},
    ]
    header, rule, first, second = format_table(
        rows, [S.RUN_ID, S.SECONDS, S.AVG_DEGREE, S.DIAMETER_AVG, S.EDGES]
    ).splitlines()
    assert header.split() == ["run_id", "seconds[s]", "avg_degree[links/node]", "diameter_avg[hops]", "edges[links]"]
    assert first.split() == ["a", "12.5", "4.25", "3", "1,200"]
    assert second.split() == ["b", "2", "7"]  # the two figures not computed print nothing, never 0
    assert len(second) == len(first) and set(rule) == {"-", " "}


def test_metric_tables_name_each_unit():
    metrics = {S.DIAMETER_MAX: None, S.TCO_SUPPORT: 0.5, S.COMPUTED_AT: datetime(2026, 1, 2, 3, 4, 5)}
    table = format_table(metric_rows(metrics, list(metrics)), METRIC_COLUMNS).splitlines()
    assert table[0].split() == ["metric", "value", "unit"]
    assert table[2].split() == ["diameter_max", "hops"]
    assert table[3].split() == ["tco_support", "0.5", "0-1"]
    assert table[4].split() == ["computed_at", "2026-01-02", "03:04:05"]
