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
    "facebook_combined": "FB", "twitter_bofa_careers": "TW", "soc-douban": "Douban", "soc-Slashdot0902": "Slashdot",
}
WORKLOAD = "workload"
KIND = "kind"  # social or synthetic
GRAPH = "graph"
DIST = "dist"
SIZE = "size"  # a sample's BFS size
MIN_SUBS, MAX_SUBS = "min_subs", "max_subs"
SEED = "seed"
MEAN, LOW, HIGH, STD, SEEDS = "mean", "low", "high", "std", "seeds"
COLUMNS = (S.INSTANCE, WORKLOAD, KIND, GRAPH, DIST, S.NODES, S.TOPICS, MIN_SUBS, MAX_SUBS, SEED, SIZE)


def workload_of(params: str, source: str, nodes: int, topics: int) -> dict | None:
    """An instance's workload settings and seed (None when not a workload the papers use: a whole
    graph, a feed cut, imported subscriptions)."""
    p = json.loads(params)
    if source == "synthetic":
        return {
            KIND: "synthetic", DIST: p["dist"], S.NODES: int(p["nodes"]), S.TOPICS: int(p["topics"]),
            MIN_SUBS: int(p["min_subs"]), MAX_SUBS: int(p["max_subs"]), SEED: int(p["seed"]),
            WORKLOAD: f"{p['dist']} |V| = {p['nodes']}, |T| = {p['topics']}, {p['min_subs']}-{p['max_subs']}",
        }
    if source == "social" and p.get("sample_bfs") and not p.get("feed_seeds"):
        stem = PurePath(p["path"]).name.split(".")[0]
        graph = GRAPHS.get(stem, stem)
        size = int(p["sample_bfs"])
        label = f"{size // 1000}K" if size % 1000 == 0 else f"{size:,}"
        return {
            KIND: "social", GRAPH: graph, S.NODES: nodes, S.TOPICS: topics, SEED: int(p["seed"]), SIZE: size,
            WORKLOAD: f"{graph} {label}",
        }
    return None


def workload_table(instances: pd.DataFrame) -> pd.DataFrame:
    """One row per listed instance that is a workload: `COLUMNS`."""
    rows = []
    for instance, params, source, nodes, topics in zip(
        instances[S.INSTANCE], instances[S.PARAMS], instances[S.SOURCE], instances[S.NODES], instances[S.TOPICS],
    ):
        workload = workload_of(params, source, nodes, topics)
        if workload is not None:
            rows.append({S.INSTANCE: instance, **workload})
    return pd.DataFrame(rows).reindex(columns=list(COLUMNS))


def spread(rows: pd.DataFrame, keys: list[str], value: str, order: str = S.RUN_ID) -> pd.DataFrame:
    """Per `keys`: `value`'s mean, lowest, highest and standard deviation over the seeds (each seed
    counted once: its row last in `order`), the seeds, and the mean links when rows have them."""
    extra = ["links"] if S.EDGES in rows else []
    if rows.empty:
        return pd.DataFrame(columns=[*keys, MEAN, LOW, HIGH, STD, SEEDS, *extra])
    latest = rows.sort_values(order).groupby([*keys, SEED], dropna=False).tail(1)
    grouped = latest.groupby(keys, dropna=False)
    columns = {MEAN: (value, "mean"), LOW: (value, "min"), HIGH: (value, "max"), STD: (value, "std")}
    if extra:
        columns["links"] = (S.EDGES, "mean")
    out = grouped.agg(**columns).reset_index()
    out[SEEDS] = grouped[SEED].apply(lambda s: ",".join(str(int(v)) for v in sorted(s))).reset_index(drop=True)
    return out
