"""Connected components of an undirected graph given as DataFrames.

Two backends, same answer (every vertex labelled with the smallest vertex id of its component):

* `graphframes`: GraphFrames' `connectedComponents(algorithm="two_phase")` with AQE handling
  skew (`broadcastThreshold=-1`), used when the GraphFrames JVM classes load;
* `dataframe`: the same family of algorithm written in DataFrame operations, for sessions
  without the GraphFrames jar (this workplace's registry does not serve it; see README). It is
  the alternating large-star / small-star algorithm of Kiveris et al., "Connected Components in
  MapReduce and Beyond" (SoCC 2014):
    - large-star: every vertex u links each strictly larger neighbour to min(N(u) + u);
    - small-star: every vertex u links itself and each smaller neighbour to the smallest of them;
  repeated until the graph is one star per component, centred on its smallest vertex (checked
  exactly after each round). Each round's edges are checkpointed, so lineage stays flat.

`backend="auto"` picks GraphFrames when it is loaded, else the DataFrame implementation.

On a small graph (the caller knows its vertex count, at most `PROPAGATION_MAX_VERTICES`), the
GraphFrames backend first runs GraphX's label propagation (`algorithm="graphx"`) for at most
`PROPAGATION_SUPERSTEPS` Pregel supersteps and keeps its labels only if no edge joins two labels
(one join): then each component carries one label, the id of one of its vertices, so the labels
are exactly the components. Otherwise (a component whose smallest vertex is farther than the
supersteps reach) the two-phase run follows. The two-phase rounds cost a fixed number of Spark
jobs that propagation does not: on topic graphs of 96-39,796 vertices propagation first took
0.20-0.87x the two-phase time (`benchmarks/components_small.py`; `docs/concepts/stack.md`,
"Connected components on small graphs").

Lineage is cut as the caller says (`Lineage`), never from session state: a reused session (a
Databricks job or notebook) may have no checkpoint directory, so local checkpoints are the default.
"""

from __future__ import annotations

import logging
from typing import Literal

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay.lineage import LOCAL, Lineage

log = logging.getLogger(__name__)

Backend = Literal["auto", "graphframes", "dataframe"]
ID, SRC, DST, COMPONENT = "id", "src", "dst", "component"
GRAPHFRAMES_CLASS = "org.graphframes.GraphFrame"
MAX_ROUNDS = 200
# Label propagation first on graphs up to this many vertices, for at most this many supersteps.
PROPAGATION_MAX_VERTICES = 50_000
PROPAGATION_SUPERSTEPS = 30
# GraphFrames 0.11.0's Python wrapper defaults max_iter to `2 ^ 31 - 2` (XOR: 31): pass it always.
GRAPHFRAMES_MAX_ITER = 2**31 - 2


def jvm_class_available(spark: SparkSession, class_name: str) -> bool:
    """Whether the driver JVM can load a class (False on Spark Connect, where there is no JVM)."""
    try:
        jvm = spark.sparkContext._jvm  # type: ignore[union-attr]
        loader = jvm.Thread.currentThread().getContextClassLoader()
        jvm.java.lang.Class.forName(class_name, False, loader)
        return True
    except Exception:
        return False


def resolve_backend(spark: SparkSession, backend: Backend) -> str:
    if backend == "auto":
        return "graphframes" if jvm_class_available(spark, GRAPHFRAMES_CLASS) else "dataframe"
    if backend == "graphframes" and not jvm_class_available(spark, GRAPHFRAMES_CLASS):
        raise RuntimeError(
            "backend 'graphframes' requested but the GraphFrames jar is not loaded; use backend 'auto' or 'dataframe'"
        )
    return backend


def _undirected(edges: DataFrame) -> DataFrame:
    """Both orientations of every edge, as (u, v)."""
    return edges.select(F.col(SRC).alias("u"), F.col(DST).alias("v")).union(
        edges.select(F.col(DST).alias("u"), F.col(SRC).alias("v"))
    )


def _large_star(edges: DataFrame) -> DataFrame:
    both = _undirected(edges)
    smallest = both.groupBy("u").agg(F.least(F.min("v"), F.col("u")).alias("m"))
    return (
        both.filter(F.col("v") > F.col("u"))
        .join(smallest, on="u")
        .select(F.col("v").alias(SRC), F.col("m").alias(DST))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    smaller = _undirected(edges).filter(F.col("v") < F.col("u"))
    smallest = smaller.groupBy("u").agg(F.min("v").alias("m"))
    linked = smaller.join(smallest, on="u")
    neighbours = linked.filter(F.col("v") != F.col("m")).select(F.col("v").alias(SRC), F.col("m").alias(DST))
    itself = smallest.select(F.col("u").alias(SRC), F.col("m").alias(DST))
    return neighbours.union(itself).distinct()


def _is_star_forest(edges: DataFrame) -> bool:
    """Every vertex links to at most one smaller vertex, and no such target links further.

    Then each component is a star around its smallest vertex: the algorithm's fixed point, and
    an exact stopping test (the rounds only ever preserve connectivity).
    """
    ends = edges.select(F.col(SRC).alias("_v"), F.lit(1).alias("_out"), F.lit(0).alias("_in")).union(
        edges.select(F.col(DST).alias("_v"), F.lit(0).alias("_out"), F.lit(1).alias("_in"))
    )
    per_vertex = ends.groupBy("_v").agg(F.sum("_out").alias("_out"), F.sum("_in").alias("_in"))
    bad = per_vertex.filter((F.col("_out") > 1) | ((F.col("_out") == 1) & (F.col("_in") > 0)))
    return bad.limit(1).count() == 0


def _dataframe_components(vertices: DataFrame, edges: DataFrame, lineage: Lineage) -> DataFrame:
    current = lineage.cut(
        edges.filter(F.col(SRC) != F.col(DST))
        .select(F.greatest(SRC, DST).alias(SRC), F.least(SRC, DST).alias(DST))
        .distinct()
    )
    rounds = 0
    rows = current.count()
    touched = 2 * rows  # vertices with an edge: at most two per edge, and rounds never add one
    while not _is_star_forest(current):
        rounds += 1
        if rounds > MAX_ROUNDS:
            raise RuntimeError(f"connected components did not converge in {MAX_ROUNDS} rounds")
        # A checkpoint keeps the size estimate of the plan it came from, and a round joins its
        # input with itself: the estimate grew tenfold per round, and with it planning time.
        # The limit never binds (a large-star round keeps at most one edge per edge; a small-star
        # round adds at most one per vertex) and resets the estimate to the real row count.
        current = lineage.cut(_small_star(_large_star(current)).limit(rows + touched))
        rows = current.count()
    log.debug("connected components: %d large/small-star rounds", rounds)
    # Stars: every non-centre vertex has one edge, to its centre (the component's minimum).
    centre = current.select(F.col(SRC).alias(ID), F.col(DST).alias(COMPONENT))
    return (
        vertices.select(ID)
        .join(centre, on=ID, how="left")
        .select(ID, F.coalesce(F.col(COMPONENT), F.col(ID)).alias(COMPONENT))
    )


def _labelled_by_smallest(labels: DataFrame) -> DataFrame:
    """(id, component) with each component relabelled by its smallest member, whatever label the
    library chose. `labels` should be computed already (it is read twice); the caller cuts the
    result where it needs one."""
    smallest = labels.groupBy(COMPONENT).agg(F.min(ID).alias("_min"))
    return labels.join(smallest, on=COMPONENT).select(ID, F.col("_min").alias(COMPONENT))


def _graphframes_components(vertices: DataFrame, edges: DataFrame, lineage: Lineage) -> DataFrame:
    from graphframes import GraphFrame

    result = GraphFrame(vertices.select(ID), edges.select(SRC, DST)).connectedComponents(
        algorithm="two_phase",
        checkpointInterval=lineage.checkpoint_interval,
        broadcastThreshold=-1,
        use_local_checkpoints=lineage.local_checkpoints,
        max_iter=GRAPHFRAMES_MAX_ITER,
    )
    return _labelled_by_smallest(lineage.cut(result.select(ID, COMPONENT)))


def propagated_components(
    vertices: DataFrame, edges: DataFrame, lineage: Lineage = LOCAL, supersteps: int = PROPAGATION_SUPERSTEPS
) -> DataFrame | None:
    """GraphX's label propagation (through GraphFrames) for at most `supersteps` supersteps: the
    (id, component) labels if they settled (no edge joins two labels), else None."""
    from graphframes import GraphFrame

    result = GraphFrame(vertices.select(ID), edges.select(SRC, DST)).connectedComponents(
        algorithm="graphx", max_iter=supersteps
    )
    labels = lineage.cut(result.select(ID, COMPONENT))
    at_src = labels.select(F.col(ID).alias(SRC), F.col(COMPONENT).alias("_at_src"))
    at_dst = labels.select(F.col(ID).alias(DST), F.col(COMPONENT).alias("_at_dst"))
    unsettled = edges.select(SRC, DST).join(at_src, on=SRC).join(at_dst, on=DST)
    if unsettled.filter(F.col("_at_src") != F.col("_at_dst")).limit(1).count():
        return None
    return _labelled_by_smallest(labels)


def connected_components(
    vertices: DataFrame,
    edges: DataFrame,
    backend: Backend = "auto",
    lineage: Lineage = LOCAL,
    vertex_count: int | None = None,
) -> DataFrame:
    """(id, component) for every vertex of `vertices` (column `id`), edges in `src`, `dst`.

    Edges are undirected; self-loops and repeated edges are fine; both ends must be vertices.
    `component` is the smallest vertex id in the vertex's component. `vertex_count`, when the
    caller knows it without a job: at most `PROPAGATION_MAX_VERTICES` tries label propagation first.
    The result is a short plan over labels already computed: a caller that reads it more than once
    cuts it (`Lineage.cut`), as the evaluation does.
    """
    chosen = resolve_backend(vertices.sparkSession, backend)
    if chosen == "graphframes" and vertex_count is not None and vertex_count <= PROPAGATION_MAX_VERTICES:
        propagated = propagated_components(vertices, edges, lineage, PROPAGATION_SUPERSTEPS)
        if propagated is not None:
            log.info("connected components: GraphX label propagation settled (%d vertices)", vertex_count)
            return propagated
        log.info("connected components: label propagation unsettled after %d supersteps", PROPAGATION_SUPERSTEPS)
    log.info("connected components with the %s backend", chosen)
    if chosen == "graphframes":
        return _graphframes_components(vertices, edges, lineage)
    return _dataframe_components(vertices, edges, lineage)
