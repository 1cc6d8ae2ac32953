"""GraphFrames' own operators for the per-vertex computations of overlay quality.

Each has a DataFrame twin in `overlay.quality`, with the same answer (tests/test_backends.py);
`overlay.quality` picks one with `Backend` through `pick_backend`:

* `aggregate_degrees`: degrees with `GraphFrame.aggregateMessages` (1 to each end of every
  edge, summed). `GraphFrame.degrees` is not used: in graphframes-py it is the very groupBy of
  the DataFrame form, so there would be nothing to compare;
* `farthest_source`: multi-source BFS as a GraphFrames `Pregel`, each vertex holding the set of
  sources that reached it; only vertices that learnt of a new source last round send
  (`setSkipMessagesFromNonActiveVertices`), so a round costs its frontier, as in the DataFrame
  form, and Pregel stops when no vertex learnt anything.

Lineage is cut as the caller's `Lineage` says (every call passes `use_local_checkpoints` and the
interval): a reused session may have no checkpoint directory, and the library reads no session
settings. Results GraphFrames returns persisted are materialised by a local checkpoint and then
unpersisted, so callers hold nothing cached.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay.graph import DST, ID, SRC, Backend, resolve_backend
from overlay.lineage import LOCAL, Lineage

DEGREE, FARTHEST = "degree", "farthest"
SOURCE = "is_source"
_SEEN, _FRONTIER, _ROUND = "_seen", "_frontier", "_round"
# Pregel's maxIter is a Java int; the BFS stops itself when nothing is new.
UNBOUNDED_ROUNDS = 2**31 - 1


def pick_backend(spark: SparkSession, backend: Backend, faster: str) -> str:
    """`backend`, where "auto" means the backend measured faster for this operation (`faster`)
    when it can run here; an explicit choice is honoured (and fails without the jar)."""
    if backend == "auto" and faster == "dataframe":
        return "dataframe"
    return resolve_backend(spark, backend)


def active_pregel(graph, lineage: Lineage, max_iterations: int = UNBOUNDED_ROUNDS):
    """`graph.pregel` with the caller's lineage, in which only active vertices send and which
    stops when no vertex is active (the caller sets the active-vertex expressions)."""
    return (
        graph.pregel.setMaxIter(max_iterations)
        .setCheckpointInterval(lineage.checkpoint_interval)
        .setUseLocalCheckpoints(lineage.local_checkpoints)
        .setSkipMessagesFromNonActiveVertices(True)
        .setStopIfAllNonActiveVertices(True)
    )


def _released(result: DataFrame, lineage: Lineage) -> DataFrame:
    """A persisted GraphFrames result checkpointed as `lineage` says, its cache released."""
    kept = lineage.cut(result)
    result.unpersist()
    return kept


def aggregate_degrees(vertices: DataFrame, edges: DataFrame, lineage: Lineage = LOCAL) -> DataFrame:
    """(id, degree) of every vertex with at least one edge end (a self-loop counts twice, as in
    `overlay.quality`); vertices: `id`, edges: `src`, `dst`, undirected."""
    from graphframes import GraphFrame
    from graphframes.lib import AggregateMessages as AM

    one = F.lit(1).cast("long")
    degrees = GraphFrame(vertices.select(ID), edges.select(SRC, DST)).aggregateMessages(
        [F.sum(AM.msg).alias(DEGREE)], sendToSrc=[one], sendToDst=[one]
    )
    return _released(degrees, lineage)


def _news() -> Column:
    """The sources a vertex hears of for the first time this round (Pregel's update phase)."""
    from graphframes.lib import Pregel

    return F.array_except(F.coalesce(Pregel.msg(), F.array().cast("array<bigint>")), F.col(_SEEN))


def farthest_source(vertices: DataFrame, edges: DataFrame, lineage: Lineage) -> DataFrame:
    """(id, farthest): for every vertex, its hop distance to the farthest `is_source` vertex
    that reaches it (0 when none but itself, or none at all, does).

    vertices: `id`, `is_source`; edges: `src`, `dst`, undirected. The largest `farthest` over a
    connected set of vertices is the largest eccentricity of its sources. A BFS on a finite
    graph ends, so Pregel runs until no vertex hears of a new source.
    """
    from graphframes import GraphFrame
    from graphframes.lib import Pregel

    both = edges.select(SRC, DST).union(edges.select(F.col(DST).alias(SRC), F.col(SRC).alias(DST)))
    # Messages read only the sender: with both orientations Pregel skips the destination join.
    graph = GraphFrame(vertices.select(ID, SOURCE), both)
    start = F.when(F.col(SOURCE), F.array(F.col(ID))).otherwise(F.array().cast("array<bigint>"))
    result = (
        active_pregel(graph, lineage)
        .withVertexColumn(_SEEN, start, F.concat(F.col(_SEEN), _news()))
        .withVertexColumn(_FRONTIER, start, _news())
        .withVertexColumn(_ROUND, F.lit(0), F.col(_ROUND) + 1)
        .withVertexColumn(FARTHEST, F.lit(0), F.when(F.size(_news()) > 0, F.col(_ROUND) + 1).otherwise(F.col(FARTHEST)))
        .setInitialActiveVertexExpression(F.col(SOURCE))
        .setUpdateActiveVertexExpression(F.size(_news()) > 0)
        .required_src_columns(_FRONTIER)
        .sendMsgToDst(Pregel.src(_FRONTIER))
        .aggMsgs(F.array_distinct(F.flatten(F.collect_list(Pregel.msg()))))
        .run()
    )
    farthest = lineage.cut(result.select(ID, FARTHEST))
    result.unpersist()
    return farthest
