"""Plain-text tables for the terminal: units in the headers, blank for what was not computed."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime

from overlay import schema as S

# The unit of every printed figure whose unit is not in its name; a header reads `name[unit]`.
UNITS = {
    S.SECONDS: "s",
    S.SECONDS_SETUP: "s",
    S.SECONDS_ROUNDS: "s",
    S.SECONDS_COMMITS: "s",
    S.SECONDS_EVALUATE: "s",
    S.SPARK_SECONDS: "s",
    S.AVG_DEGREE: "links/node",
    S.MIN_DEGREE: "links",
    S.MAX_DEGREE: "links",
    S.DIAMETER_MAX: "hops",
    S.DIAMETER_AVG: "hops",
    S.AVG_PATH_LENGTH: "hops",
    S.MAX_PATH_LENGTH: "hops",
    S.ROUTING_OVERHEAD: "msgs",
    S.MESSAGES: "msgs",
    S.EDGES: "links",
    S.TCO_SUPPORT: "0-1",
    S.DELIVERY_RATIO: "0-1",
    S.CONNECTED_TOPIC_SHARE: "0-1",
    S.SHARE: "0-1",
    S.COVERED_SHARE: "0-1",
    S.COVERED_NODES: "nodes",
    S.VIEW_AVG: "nodes",
    S.CYCLON_MESSAGES: "msgs",
    S.GOSSIP_MESSAGES: "msgs",
    S.COPIES: "msgs",
    S.MATCHES: "msgs",
    S.DIAMETER: "hops",
    S.CLUSTERING: "0-1",
    S.LATENCY_MEDIAN: "ms",
    S.LATENCY_P95: "ms",
    S.STRETCH_MEDIAN: "x direct",
}


def _cell(value: object) -> str:
    if value is None:
        return ""  # not computed (null): blank, never 0
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, datetime):
        return value.strftime("%Y-%m-%d %H:%M:%S")
    return str(value)


def header(column: str) -> str:
    unit = UNITS.get(column)
    return f"{column}[{unit}]" if unit else column


def metric_rows(values: Mapping[str, object], metrics: Sequence[str]) -> list[dict]:
    """A metric / value / unit table of one result (evaluate, route)."""
    return [{"metric": m, "value": values[m], "unit": UNITS.get(m, "")} for m in metrics]


METRIC_COLUMNS = ("metric", "value", "unit")


def format_table(rows: Sequence[Mapping[str, object]], columns: Sequence[str]) -> str:
    cells = [[_cell(row.get(c)) for c in columns] for row in rows]
    titles = [header(c) for c in columns]
    widths = [max([len(t)] + [len(r[i]) for r in cells]) for i, t in enumerate(titles)]
    numeric = [all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.rjust(w) if n else v.ljust(w) for v, w, n in zip(values, widths, numeric)).rstrip()

    return "\n".join([line(titles), line(["-" * w for w in widths]), *[line(r) for r in cells]])
