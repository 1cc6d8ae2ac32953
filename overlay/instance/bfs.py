"""BFS sampling of a graph, as the papers build FB 1K / TW 10K: from a few seeds, over the
undirected view, until exactly `size` nodes are visited.

The rule, exactly: every node gets a pseudo-random rank `xxhash64(seed, node)`. The `seed_count`
lowest-ranked nodes are level 0. Level L+1 is every unvisited neighbour of level L. A level that
would overshoot `size` is cut to its lowest-ranked nodes. When the reachable part runs out before
`size` nodes, the lowest-ranked unvisited node starts the next level as a new seed. A graph with
at most `size` nodes is kept whole.

One Spark round per level (levels are few: the BFS depth of a social graph); the visited set is
checkpointed each round so lineage stays flat.
"""

from __future__ import annotations

import logging

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep, report

log = logging.getLogger(__name__)

NODE = "node"
_RANK = "_rank"


def bfs_sample(
    edges: DataFrame,
    a_col: str,
    b_col: str,
    size: int,
    seed: int,
    seed_count: int,
    on_step: OnStep | None = None,
    lineage: Lineage = LOCAL,
) -> DataFrame:
    """Nodes (node: long, level: int) of the BFS sample of the undirected view of `edges`.
    `on_step` hears of every level (stage `BFS level`: nodes visited of the sample size, counted
    anyway to cut the last level)."""
    if size <= 0 or seed_count <= 0:
        raise ValueError("size and seed_count must be positive")
    undirected = edges.select(F.col(a_col).alias("_from"), F.col(b_col).alias("_to"))
    adjacency = lineage.cut(
        undirected.union(undirected.select(F.col("_to").alias("_from"), F.col("_from").alias("_to"))).distinct()
    )
    nodes = lineage.cut(
        adjacency.select(F.col("_from").alias(NODE)).distinct().withColumn(_RANK, F.xxhash64(F.lit(seed), F.col(NODE)))
    )
    total = nodes.count()
    if total <= size:
        log.info("graph has %d nodes, not more than the sample size %d: keeping all", total, size)
        return nodes.select(NODE, F.lit(0).alias(S.LEVEL))

    first_seeds = min(seed_count, size)
    visited = nodes.orderBy(_RANK, NODE).limit(first_seeds).select(NODE, F.lit(0).alias(S.LEVEL))
    visited = lineage.cut(visited)
    count, level = first_seeds, 0
    while count < size:
        frontier = visited.filter(F.col(S.LEVEL) == level)
        reached = (
            frontier.join(adjacency, frontier[NODE] == adjacency["_from"])
            .select(F.col("_to").alias(NODE))
            .distinct()
            .join(visited, on=NODE, how="left_anti")
            .join(nodes, on=NODE)
        )
        found = reached.count()
        if found == 0:
            reached = nodes.join(visited, on=NODE, how="left_anti").orderBy(_RANK, NODE).limit(1)
            found = 1
            log.info("BFS level %d: reachable part exhausted at %d nodes; new seed", level + 1, count)
        elif count + found > size:
            reached = reached.orderBy(_RANK, NODE).limit(size - count)
            found = size - count
        level += 1
        visited = lineage.cut(visited.union(reached.select(NODE, F.lit(level).alias(S.LEVEL))))
        count += found
        log.debug("BFS level %d: %d nodes visited of %d", level, count, size)
        report(on_step, "BFS level", level, figures={"visited": count, "sample size": size})
    return visited
