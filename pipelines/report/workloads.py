"""Workloads and seeds for the reports that reproduce papers: an instance's settings without its
seed (a BFS sample of a graph at a size, or a synthetic distribution at |V|, |T| and a
subscription range), so that runs on instances differing only in the seed are one point, shown
as the mean and spread over seeds."""

from __future__ import annotations

import json
from pathlib import PurePath

import pandas as pd

from overlay import schema as S

GRAPHS = {  # a graph file's stem -> its short name
    "facebook_combined": "FB",
    "twitter_bofa_careers": "TW",
    "soc-douban": "Douban",
    "soc-Slashdot0902": "Slashdot",
}
ORIENTATIONS = {"FB": (False, False), "TW": (True, True), "Douban": (False, False), "Slashdot": (True, False)}
WORKLOAD = "workload"
KIND = "kind"  # social or synthetic
GRAPH = "graph"
DIST = "dist"
SIZE = "size"  # a sample's BFS size
MIN_SUBS, MAX_SUBS = "min_subs", "max_subs"
SEED = "seed"
MEAN, LOW, HIGH, STD, SEEDS = "mean", "low", "high", "std", "seeds"
COLUMNS = (S.INSTANCE, WORKLOAD, KIND, GRAPH, DIST, S.NODES, S.TOPICS, MIN_SUBS, MAX_SUBS, SEED, SIZE, S.CREATED_AT)


def workload_of(params: str, source: str, nodes: int, topics: int) -> dict | None:
    """An instance's workload settings and seed (None when not a workload the papers use: a whole
    graph, a feed cut, imported subscriptions)."""
    p = json.loads(params)
    if source == "synthetic":
        return {
            KIND: "synthetic",
            DIST: p["dist"],
            S.NODES: int(p["nodes"]),
            S.TOPICS: int(p["topics"]),
            MIN_SUBS: int(p["min_subs"]),
            MAX_SUBS: int(p["max_subs"]),
            SEED: int(p["seed"]),
            WORKLOAD: f"{p['dist']} |V| = {p['nodes']}, |T| = {p['topics']}, {p['min_subs']}-{p['max_subs']}",
        }
    if source == "social" and p.get("sample_bfs") and not p.get("feed_seeds"):
        stem = PurePath(p["path"]).name.split(".")[0]
        graph = GRAPHS.get(stem, stem)
        size = int(p["sample_bfs"])
        label = f"{size // 1000}K" if size % 1000 == 0 else f"{size:,}"
        orientation = (bool(p.get("directed")), bool(p.get("reverse")))
        if orientation != ORIENTATIONS.get(graph, orientation):  # read otherwise than the graph's own way
            label += " (directed, reversed)" if orientation[1] else " (directed)" if orientation[0] else " (undirected)"
        return {
            KIND: "social",
            GRAPH: graph,
            S.NODES: nodes,
            S.TOPICS: topics,
            SEED: int(p["seed"]),
            SIZE: size,
            WORKLOAD: f"{graph} {label}",
        }
    return None


def workload_table(instances: pd.DataFrame) -> pd.DataFrame:
    """One row per listed instance that is a workload: `COLUMNS` (`created_at` when listed)."""
    rows = []
    created = instances[S.CREATED_AT] if S.CREATED_AT in instances else [pd.NaT] * len(instances)
    for instance, params, source, nodes, topics, at in zip(
        instances[S.INSTANCE],
        instances[S.PARAMS],
        instances[S.SOURCE],
        instances[S.NODES],
        instances[S.TOPICS],
        created,
    ):
        workload = workload_of(params, source, nodes, topics)
        if workload is not None:
            rows.append({S.INSTANCE: instance, **workload, S.CREATED_AT: at})
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS))


def one_per_seed(rows: pd.DataFrame, keys: list[str], order: list[str]) -> pd.DataFrame:
    """Per `keys` and seed, the row last in `order` (a later instance of the same workload and
    seed, or a later run, replaces an earlier one)."""
    return rows.sort_values(order, na_position="first").groupby([*keys, SEED], dropna=False).tail(1)


def spread(rows: pd.DataFrame, keys: list[str], value: str, order: list[str] | None = None) -> pd.DataFrame:
    """Per `keys`: `value`'s mean, lowest, highest and standard deviation over the seeds (each seed
    counted once: `one_per_seed` in `order`, by default the instance's creation then the run id),
    the seeds, and the mean links when rows have them."""
    extra = ["links"] if S.EDGES in rows else []
    if rows.empty:
        return pd.DataFrame(columns=[*keys, MEAN, LOW, HIGH, STD, SEEDS, *extra])
    order = order or [c for c in (S.CREATED_AT, S.RUN_ID) if c in rows]
    latest = one_per_seed(rows, keys, order)
    columns = {
        MEAN: (value, "mean"),
        LOW: (value, "min"),
        HIGH: (value, "max"),
        STD: (value, "std"),
        SEEDS: (SEED, lambda s: ",".join(str(int(v)) for v in sorted(s))),
    }
    if extra:
        columns["links"] = (S.EDGES, "mean")
    return latest.groupby(keys, dropna=False).agg(**columns).reset_index()
