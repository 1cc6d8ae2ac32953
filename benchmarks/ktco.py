"""Benchmark (not a test): kTCO designs and checks against plain Python, one run.

On the kTCO paper's workload (|T| = 200, each node in exactly 30 topics, Expo; |V| = --nodes) it
runs, each as a fresh `python -m pipelines` process on one lakehouse:

* `design --algorithm gm2` (exact, then relaxed): engine time (`overlay_runs.seconds`: Spark up,
  from claiming the run to completing it, the TCC check, the metrics and the 2TCO check
  included), rounds, links; then, in this process, the tests' plain lazy GM2
  (`tests.ktco_oracle.gm2_lazy`) on the same instance: the exact run must give the same links,
  gains included. The ratio is oracle seconds over engine seconds.
* `design --algorithm gm`, `cycle-pt` and `harary-pt --k 2,...,--max-k` (one process for the
  sweep): links, average degree, and the largest k at which HararyPT uses no more links than
  CyclePT (the paper: 12).
* `evaluate --run-id GM2 --k K` for K = 2 and 3: the seconds the job logs for the topic
  connectivity, against plain Python per topic in this process (k = 2: the oracle's
  Hopcroft-Tarjan blocks; k = 3: networkx's `node_connectivity`), which must find the same
  topics fine.

Usage:
  .venv/bin/python benchmarks/ktco.py [--lakehouse DIR] [--nodes 1000] [--max-k 14]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import current_subscriptions, print_markdown, run_summary, table  # noqa: E402
from tests import ktco_oracle as oracle  # noqa: E402

CONNECTIVITY_LOG = re.compile(r"topic connectivity up to k = (\d+) in ([0-9.]+)s")


def cli(lakehouse: str, *argv: str) -> tuple[float, str]:
    clock = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, *argv],
        check=True,
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    return time.monotonic() - clock, done.stderr


def links_of(lakehouse: str, run_id: str) -> list[tuple[int, int]]:
    edges = table(lakehouse, "overlay_edges")
    edges = edges[edges.run_id == run_id]
    return list(zip(edges.u.tolist(), edges.v.tolist()))


def plain_fine_topics(subscriptions, links, k: int) -> int:
    """Topics fine for a kTCO, in plain Python per topic."""
    fine = 0
    for nodes in oracle.subscribers(subscriptions).values():
        n = len(nodes)
        if n <= 1 or (n <= k and oracle.is_clique(nodes, links)):
            fine += 1
        elif n > k and k == 2:
            found = oracle.blocks(nodes, links)
            fine += len(found) == 1 and len(found[0]) == n
        elif n > k:
            graph = nx.Graph()
            graph.add_nodes_from(nodes)
            graph.add_edges_from((u, v) for u, v in links if u in nodes and v in nodes)
            fine += nx.node_connectivity(graph) >= k
    return fine


def benchmark(lakehouse: str, nodes: int, max_k: int) -> None:
    instance = f"kexpo-{nodes}"
    seconds, _ = cli(
        lakehouse,
        "-q",
        "ingest",
        "--instance",
        instance,
        "--source",
        "synthetic",
        "--dist",
        "expo",
        "--nodes",
        str(nodes),
        "--topics",
        "200",
        "--min-subs",
        "30",
        "--max-subs",
        "30",
        "--seed",
        "1",
    )
    print(f"ingest {instance}: {seconds:.0f}s", flush=True)
    subscriptions = current_subscriptions(lakehouse, instance)
    rows = []
    runs = {}
    for label, algorithm, flags in (
        ("gm2", "gm2", []),
        ("gm2 relaxed", "gm2", ["--mode", "relaxed"]),
        ("gm", "gm", []),
        ("cycle-pt", "cycle-pt", []),
    ):
        run_id = f"{instance}.{label.replace(' ', '-')}"
        end_to_end, _ = cli(
            lakehouse,
            "-q",
            "design",
            "--instance",
            instance,
            "--algorithm",
            algorithm,
            *flags,
            "--run-id",
            run_id,
            "--skip-diameters",
        )
        summary = run_summary(lakehouse, run_id)
        runs[label] = summary
        row = {
            "case": f"{instance} {label}",
            "rounds": summary["rounds"],
            "links": summary["edges"],
            "avg degree": f"{2 * summary['edges'] / nodes:.2f}",
            "engine s": f"{summary['seconds']:.1f}",
            "end to end s": f"{end_to_end:.0f}",
            "oracle s": "-",
            "ratio": "-",
            "check": "-",
        }
        if label == "gm2":
            clock = time.monotonic()
            expected = oracle.gm2_lazy(subscriptions)
            taken = time.monotonic() - clock
            row.update(
                {
                    "oracle s": f"{taken:.0f}",
                    "ratio": f"{taken / summary['seconds']:.1f}x",
                    "check": "same links" if expected == summary["sequence"] else "DIFFERENT",
                }
            )
        elif label == "gm2 relaxed":
            row["check"] = "a 2TCO (the run's own check)"
        rows.append(row)
        print(row, flush=True)
    end_to_end, _ = cli(
        lakehouse,
        "-q",
        "design",
        "--instance",
        instance,
        "--algorithm",
        "harary-pt",
        "--k",
        ",".join(str(k) for k in range(2, max_k + 1)),
        "--skip-diameters",
    )
    cycle_links = runs["cycle-pt"]["edges"]
    harary = {k: run_summary(lakehouse, f"{instance}.harary-pt.{k}tco.s1")["edges"] for k in range(2, max_k + 1)}
    within = [k for k, links in harary.items() if links <= cycle_links]
    rows.append(
        {
            "case": f"{instance} harary-pt k = 2..{max_k} (one process)",
            "links": ", ".join(f"{harary[k]}" for k in harary),
            "end to end s": f"{end_to_end:.0f}",
            "check": f"largest k with no more links than CyclePT ({cycle_links}): {max(within) if within else 'none'}",
        }
    )
    print(rows[-1], flush=True)
    gm2_links = links_of(lakehouse, f"{instance}.gm2")
    for k in (2, 3):
        _, log = cli(lakehouse, "evaluate", "--run-id", f"{instance}.gm2", "--k", str(k))
        found = [float(s) for kk, s in CONNECTIVITY_LOG.findall(log) if int(kk) == k]
        ktco = table(lakehouse, "overlay_ktco")
        stored = ktco[(ktco.run_id == f"{instance}.gm2") & (ktco.k == k)].iloc[0]
        clock = time.monotonic()
        fine = plain_fine_topics(subscriptions, gm2_links, k)
        taken = time.monotonic() - clock
        rows.append(
            {
                "case": f"{instance} evaluate gm2 --k {k}",
                "engine s": f"{found[0]:.1f}" if found else "?",
                "oracle s": f"{taken:.0f}",
                "ratio": f"{taken / found[0]:.1f}x" if found else "-",
                "check": f"{int(stored.k_connected_topics)} of {int(stored.topics)} topics fine"
                + (" (plain Python: same)" if fine == stored.k_connected_topics else f" (plain Python: {fine})"),
            }
        )
        print(rows[-1], flush=True)
    gm, gm2, cycle = runs["gm"]["edges"], runs["gm2"]["edges"], runs["cycle-pt"]["edges"]
    print(
        f"\navg degree ratios: GM2 / GM = {gm2 / gm:.2f} (paper: < 1.65), CyclePT / GM2 = {cycle / gm2:.2f} (paper: about 5)\n"
    )
    print_markdown(rows)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", default="/tmp/overlay-bench/ktco")
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--max-k", type=int, default=14)
    args = parser.parse_args()
    benchmark(args.lakehouse, args.nodes, args.max_k)


if __name__ == "__main__":
    main()
