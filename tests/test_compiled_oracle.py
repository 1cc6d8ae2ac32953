"""The compiled oracle (benchmarks/compiled_oracle.py) against the pure-Python references, link by
link, gains included. No Spark: the oracle is numba only."""

from __future__ import annotations

import ast
import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from benchmarks import compiled_oracle as C
from tests import ktco_oracle as K
from tests.instances import random_instance
from tests.oracles import greedy_oracle, tco_support_oracle

BUDGETS = [("gm", {}), ("minmaxoda", {})]
BUDGETS += [("gpa", {"max_edges": m}) for m in (1, 5, 30)]
BUDGETS += [("gpm", {"max_degree": d}) for d in (1, 2, 3, 5)]


def compiled(subscriptions, algorithm, nodes=None, **budget) -> list:
    pairs = np.array(subscriptions, dtype=np.int64).reshape(-1, 2)
    nodes = nodes if nodes is not None else (int(pairs[:, 0].max()) + 1 if len(pairs) else 0)
    u, v, gain, _ = C.greedy(nodes, pairs[:, 0], pairs[:, 1], algorithm, **budget)
    return list(zip(u.tolist(), v.tolist(), gain.tolist(), strict=True))


def assert_all_budgets_agree(subscriptions, nodes=None) -> None:
    for algorithm, budget in BUDGETS:
        expected = greedy_oracle(subscriptions, algorithm, **budget)
        assert compiled(subscriptions, algorithm, nodes, **budget) == expected, (algorithm, budget)


def random_case(seed: int) -> tuple[list, int]:
    """A random instance, sized and shaped by the seed: up to 40 nodes, some with no subscription
    (k = 0, or a node dropped: gaps in the ids) and some past the last id."""
    rng = random.Random(seed)
    topics = rng.randint(1, 20)
    high = rng.randint(1, min(topics, 8))
    low = rng.randint(0, high)
    nodes = rng.randint(2, 40)
    subscriptions = random_instance(("unif", "zipf", "expo")[seed % 3], nodes, topics, low, high, seed)
    if seed % 4 == 0:
        dropped = rng.randrange(nodes)
        subscriptions = [(n, t) for n, t in subscriptions if n != dropped]
    return subscriptions, nodes + rng.randint(0, 3)


@pytest.mark.parametrize("seed", range(60))
def test_random_instances_match_the_python_greedy(seed):
    subscriptions, nodes = random_case(seed)
    assert_all_budgets_agree(subscriptions, nodes)


@pytest.mark.parametrize("seed", range(6))
def test_larger_phased_instances(seed):
    """80 nodes: long phases, where rows hold waiting pairs and lowered ones at once (small
    instances seldom get there)."""
    subscriptions = random_instance(("unif", "zipf", "expo")[seed % 3], 80, 30, 2, 10, seed)
    for algorithm, budget in [("gm", {}), ("minmaxoda", {}), ("gpm", {"max_degree": 2}), ("gpm", {"max_degree": 3})]:
        assert compiled(subscriptions, algorithm, **budget) == greedy_oracle(subscriptions, algorithm, **budget)


@pytest.mark.parametrize("dist", ["unif", "zipf", "expo"])
@pytest.mark.parametrize("shape", [(40, 30, 1, 8), (30, 6, 2, 5), (25, 60, 3, 12)])
def test_dense_and_sparse_topics(dist, shape):
    nodes, topics, low, high = shape
    assert_all_budgets_agree(random_instance(dist, nodes, topics, low, high, seed=nodes * topics))


@pytest.mark.parametrize(
    "subscriptions",
    [
        [(n, 0) for n in range(12)],  # one topic: every gain 1, ties all the way
        [(n, t) for n in range(10) for t in range(4)],  # identical topic sets: equal shared counts
        [(n, t) for n in range(16) for t in (n % 3, (n + 1) % 3)],  # few topics, many equal counts
        random_instance("unif", 30, 3, 1, 2, seed=7),
        random_instance("unif", 36, 2, 1, 2, seed=8),
        [(n, n) for n in range(6)] + [(n, 100 + n // 3) for n in range(6)],  # one-subscriber topics
        [(0, 0), (1, 1), (2, 2), (3, 0), (3, 1)],  # isolated node 2, a hub 3
        [(n, t) for n in range(8) for t in range(3) if (n + t) % 4],
    ],
    ids=["one-topic", "identical", "few-topics", "unif-3", "unif-2", "singletons", "isolated", "lattice"],
)
def test_ties_and_degenerate_instances(subscriptions):
    assert_all_budgets_agree(subscriptions)
    assert_all_budgets_agree(subscriptions, nodes=max(n for n, _ in subscriptions) + 3)


def test_empty_instances():
    for algorithm, budget in BUDGETS + [("gm2", {})]:
        assert compiled([], algorithm, 0, **budget) == []
        assert compiled([], algorithm, 5, **budget) == []
        assert compiled([(3, 1)], algorithm, 5, **budget) == []


def test_topic_ids_need_not_be_dense_and_repeats_count_once():
    subscriptions = random_instance("zipf", 30, 12, 1, 6, seed=11)
    renamed = [(n, 1000 - 7 * t) for n, t in subscriptions]  # sparse, order reversed
    repeated = renamed + renamed[::3]
    expected = greedy_oracle(subscriptions, "gpm", max_degree=3)
    assert compiled(renamed, "gpm", max_degree=3) == expected
    assert compiled(repeated, "gpm", max_degree=3) == expected


def test_budgets_past_the_end_give_the_unbounded_runs():
    subscriptions = random_instance("expo", 35, 15, 1, 6, seed=3)
    gm, minmaxoda = compiled(subscriptions, "gm"), compiled(subscriptions, "minmaxoda")
    assert compiled(subscriptions, "gpa", max_edges=len(gm) + 10) == gm
    degree = {}
    for u, v, _ in minmaxoda:
        degree[u], degree[v] = degree.get(u, 0) + 1, degree.get(v, 0) + 1
    assert compiled(subscriptions, "gpm", max_degree=max(degree.values())) == minmaxoda


def gm2_instance(seed, nodes=9, topics=4, per_node=(1, 3)) -> list:
    """tests/test_ktco_oracle.py's instances."""
    rng = random.Random(seed)
    return sorted({(v, t) for v in range(nodes) for t in rng.sample(range(topics), rng.randint(*per_node))})


@pytest.mark.parametrize("seed", range(30))
def test_gm2_matches_the_reference(seed):
    shape = [(9, 4, (1, 3)), (12, 5, (1, 4)), (10, 3, (1, 3))][seed % 3]
    subscriptions = gm2_instance(seed, *shape)
    assert compiled(subscriptions, "gm2") == K.gm2_ref(subscriptions)


@pytest.mark.parametrize("seed", range(8))
def test_gm2_matches_the_lazy_reference_on_larger_instances(seed):
    rng = random.Random(seed)
    nodes = rng.randint(20, 45)
    subscriptions = random_instance(("unif", "zipf", "expo")[seed % 3], nodes, rng.randint(3, 10), 1, 4, seed)
    if seed % 2:
        subscriptions = [(n, t) for n, t in subscriptions if n != nodes // 2]  # a gap in the ids
    sequence = compiled(subscriptions, "gm2", nodes + 2)
    assert sequence == K.gm2_lazy(subscriptions)
    if seed < 2:
        K.verify_gm2_sequence(subscriptions, sequence)


@pytest.mark.parametrize("seed", range(10))
def test_tco_support_matches_the_definition(seed):
    rng = random.Random(seed)
    subscriptions, nodes = random_case(seed + 100)
    links = [(u, v) for u in range(nodes) for v in range(u + 1, nodes) if rng.random() < 0.1]
    pairs = np.array(subscriptions, dtype=np.int64).reshape(-1, 2)
    u = np.array([a for a, _ in links], dtype=np.int64)
    v = np.array([b for _, b in links], dtype=np.int64)
    expected = tco_support_oracle(subscriptions, links)[3]
    assert C.tco_support(nodes, pairs[:, 0], pairs[:, 1], u, v) == pytest.approx(expected)
    gm = compiled(subscriptions, "gm", nodes)
    assert C.tco_support(nodes, pairs[:, 0], pairs[:, 1], [a for a, _, _ in gm], [b for _, b, _ in gm]) == 1.0


def test_cli_prints_the_run(tmp_path, capsys):
    subscriptions = random_instance("zipf", 40, 20, 1, 6, seed=5)
    path = tmp_path / "subscriptions.parquet"
    columns = {"node_id": [n for n, _ in subscriptions], "topic_id": [t for _, t in subscriptions]}
    pq.write_table(pa.table(columns), path)
    C.main(["--subscriptions", str(path), "--algorithm", "gpm", "--max-degree", "2"])
    printed = json.loads(capsys.readouterr().out)
    expected = greedy_oracle(subscriptions, "gpm", max_degree=2)
    assert printed["links"] == len(expected)
    assert printed["gain_sum"] == sum(gain for _, _, gain in expected)
    assert printed["tco_support"] == pytest.approx(tco_support_oracle(subscriptions, [e[:2] for e in expected])[3])
    assert printed["seconds_candidates"] >= 0 and printed["seconds_greedy"] >= 0


def test_runs_as_a_script(tmp_path):
    """`python benchmarks/compiled_oracle.py ...` from elsewhere: numba's cache names the module
    benchmarks.compiled_oracle, which the script must be able to import."""
    path = tmp_path / "subscriptions.parquet"
    pq.write_table(pa.table({"node_id": [0, 0, 1, 1, 2], "topic_id": [0, 1, 0, 1, 1]}), path)
    script = [sys.executable, C.__file__, "--subscriptions", str(path), "--algorithm", "gm"]
    printed = json.loads(subprocess.run(script, cwd=tmp_path, capture_output=True, text=True, check=True).stdout)
    assert (printed["links"], printed["gain_sum"], printed["tco_support"]) == (2, 3, 1.0)


def test_timings_and_work_counts():
    subscriptions = random_instance("unif", 30, 10, 2, 5, seed=2)
    pairs = np.array(subscriptions, dtype=np.int64)
    counts = {}
    *_, seconds = C.greedy(30, pairs[:, 0], pairs[:, 1], "minmaxoda", counts=counts)
    assert set(seconds) == {"candidates", "greedy"} and min(seconds.values()) >= 0
    assert set(counts) == {*C.COUNTS, "pairs"} and counts["phases"] >= 2 and counts["pairs"] > 0


def test_the_oracle_imports_no_production_code():
    source = Path(C.__file__).read_text()
    imported = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            imported |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    standard = {"__future__", "argparse", "json", "sys", "time", "pathlib", "resource"}
    assert imported <= standard | {"numba", "numpy", "pyarrow", "benchmarks"}  # benchmarks: itself, run as a script
    assert "parallel" not in source and "prange" not in source
