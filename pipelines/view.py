"""The view job: an overlay run, or one topic's subgraph of it, as an interactive page (plotly),
written to one self-contained HTML file (the plotly library inlined: it opens offline).

Nodes are sized by degree and coloured by component: a topic's components are its stored
topic components (`topic_components`, the run's TCCs) when the run was evaluated, else those of
the links shown; the whole overlay's are the connected components of the links shown. Hovering
a node shows its key, degree and component. An overlay or topic larger than `max_nodes` is
shown as a breadth-first sample of that many nodes (`overlay.instance.bfs.bfs_sample`, seeded),
and the page says so: only the sample's nodes and the links among them reach the driver, a
bounded step.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance.bfs import NODE, bfs_sample
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import check_run_id, complete_run, run_inputs

log = logging.getLogger(__name__)

MAX_NODES = 400  # a readable page; the layout is computed on the driver


@dataclass(frozen=True)
class ViewRequest:
    run_id: str
    out: str
    topic: str | None = None  # a topic key of the run's instance
    max_nodes: int = MAX_NODES
    seed: int = 1

    def check(self) -> None:
        check_run_id(self.run_id)
        if self.max_nodes < 2:
            raise InputError(f"--max-nodes must be at least 2, got {self.max_nodes}")
        if not self.out.endswith((".html", ".htm")):
            raise InputError(f"--out names the page to write, a .html file; got '{self.out}'")


@dataclass
class Shown:
    """What the page shows: node ids with their keys, degrees (in the whole graph viewed) and
    components, the links among them, and how many nodes the graph has."""

    nodes: list[int]
    keys: dict[int, str]
    degree: dict[int, int]
    component: dict[int, int]
    links: list[tuple[int, int]]
    total: int
    title: str


def run_view(spark: SparkSession, lakehouse: Lakehouse, request: ViewRequest) -> Shown:
    """Write the page; what it shows."""
    request.check()
    run = complete_run(lakehouse, request.run_id)
    instance, subscriptions, links = run_inputs(lakehouse, run)
    keys = lakehouse.read(S.NODE_KEYS).filter(
        (F.col(S.INSTANCE) == run[S.INSTANCE]) & (F.col(S.INGEST_ID) == run[S.INGEST_ID])
    )
    what = f"run {run[S.RUN_ID]} ({run[S.ALGORITHM]})"
    components = None
    if request.topic is not None:
        topic = _topic_id(lakehouse, run, request.topic)
        members = subscriptions.filter(F.col(S.TOPIC_ID) == topic).select(F.col(S.NODE_ID).alias(NODE))
        inside = members.withColumnRenamed(NODE, S.U).crossJoin(members.withColumnRenamed(NODE, S.V))
        links = links.join(inside, [S.U, S.V])
        what += f", topic {request.topic}"
        if lakehouse.exists(S.TOPIC_COMPONENTS):
            stored = lakehouse.read(S.TOPIC_COMPONENTS).filter(
                (F.col(S.RUN_ID) == run[S.RUN_ID]) & (F.col(S.TOPIC_ID) == topic)
            )
            components = stored.select(F.col(S.NODE_ID).alias(NODE), S.COMPONENT)
    else:
        members = links.select(F.col(S.U).alias(NODE)).union(links.select(F.col(S.V).alias(NODE))).distinct()
    members = lakehouse.lineage.cut(members)
    total = members.count()
    if total == 0:
        raise InputError(f"{what} has no node to show")
    if total > request.max_nodes:
        chosen = bfs_sample(links, S.U, S.V, request.max_nodes, request.seed, 1, lineage=lakehouse.lineage).select(NODE)
        missing = request.max_nodes - chosen.count()
        if missing > 0:  # a topic's links reach fewer nodes: fill with its other members in id order
            chosen = chosen.union(members.join(chosen, NODE, "left_anti").orderBy(NODE).limit(missing))
        note = f"showing {request.max_nodes:,} of {total:,} nodes: a breadth-first sample (seed {request.seed})"
    else:
        chosen, note = members, f"all {total:,} nodes"
    shown = _collect(chosen, links, keys, components)
    shown.total, shown.title = total, f"{what}: {note}"
    _write(shown, request.out)
    log.info(
        "view %s: %d nodes, %d links written to %s", request.run_id, len(shown.nodes), len(shown.links), request.out
    )
    return shown


def _topic_id(lakehouse: Lakehouse, run, key: str) -> int:
    topics = lakehouse.read(S.TOPIC_KEYS).filter(
        (F.col(S.INSTANCE) == run[S.INSTANCE]) & (F.col(S.INGEST_ID) == run[S.INGEST_ID]) & (F.col(S.KEY) == key)
    )
    found = topics.select(S.ID).limit(1).collect()
    if not found:
        raise InputError(f"instance '{run[S.INSTANCE]}' has no topic '{key}' (topics are named by their keys)")
    return int(found[0][S.ID])


def _collect(chosen: DataFrame, links: DataFrame, keys: DataFrame, components: DataFrame | None) -> Shown:
    """The chosen nodes (at most max_nodes), their keys, degrees and stored components, and the
    links among them: the page's bounded driver copy."""
    ends = links.select(F.col(S.U).alias(NODE)).union(links.select(F.col(S.V).alias(NODE)))
    degree = ends.groupBy(NODE).agg(F.count(F.lit(1)).alias("degree"))
    nodes = chosen.join(degree, NODE, "left").join(keys.select(F.col(S.ID).alias(NODE), S.KEY), NODE, "left")
    if components is not None:
        nodes = nodes.join(components, NODE, "left")
    rows = nodes.collect()  # at most max_nodes
    ids = sorted(r[NODE] for r in rows)
    inside = links.join(chosen.withColumnRenamed(NODE, S.U), S.U).join(chosen.withColumnRenamed(NODE, S.V), S.V)
    shown_links = sorted((r[S.U], r[S.V]) for r in inside.select(S.U, S.V).collect())  # among max_nodes nodes
    component = {r[NODE]: r[S.COMPONENT] for r in rows if components is not None and r[S.COMPONENT] is not None}
    return Shown(
        ids,
        {r[NODE]: r[S.KEY] or str(r[NODE]) for r in rows},
        {r[NODE]: int(r["degree"] or 0) for r in rows},
        component,
        shown_links,
        len(ids),
        "",
    )


def _write(shown: Shown, out: str) -> None:
    import networkx as nx
    import plotly.graph_objects as go

    graph = nx.Graph()
    graph.add_nodes_from(shown.nodes)
    graph.add_edges_from(shown.links)
    if len(shown.component) < len(shown.nodes):  # no stored components: those of the links shown
        shown.component = {v: min(part) for part in nx.connected_components(graph) for v in part}
    position = nx.spring_layout(graph, seed=1)
    xs, ys = [], []
    for u, v in shown.links:
        xs += [position[u][0], position[v][0], None]
        ys += [position[u][1], position[v][1], None]
    names = sorted(set(shown.component.values()))
    colour = {c: i for i, c in enumerate(names)}
    largest = max(shown.degree.values(), default=1) or 1
    figure = go.Figure(
        [
            go.Scatter(x=xs, y=ys, mode="lines", line={"width": 0.6, "color": "#999"}, hoverinfo="skip", name="links"),
            go.Scatter(
                x=[position[v][0] for v in shown.nodes],
                y=[position[v][1] for v in shown.nodes],
                mode="markers",
                name="nodes",
                marker={
                    "size": [6 + 14 * shown.degree[v] / largest for v in shown.nodes],
                    "color": [colour[shown.component[v]] for v in shown.nodes],
                    "colorscale": "Turbo",
                    "line": {"width": 0.5, "color": "#333"},
                },
                text=[
                    f"node {shown.keys[v]} (id {v})<br>degree {shown.degree[v]}<br>component {shown.component[v]}"
                    for v in shown.nodes
                ],
                hoverinfo="text",
            ),
        ]
    )
    figure.update_layout(
        title=f"{shown.title}; {len(shown.links):,} links shown, {len(names)} component(s)",
        showlegend=False,
        xaxis={"visible": False},
        yaxis={"visible": False},
        plot_bgcolor="white",
    )
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    figure.write_html(out, include_plotlyjs=True, full_html=True, div_id="overlay-view")
