"""Benchmark (not a test): the lab's gossipsub beside the real go-libp2p-pubsub on one instance,
seed by seed, and a table of both (docs/results/gossipsub.md, "Against go-libp2p-pubsub").

Per seed:

1. the lab (fresh `python -m pipelines` processes): `simulate gossipsub` with the profile, then
   `disseminate --protocol gossipsub-spread` of the same publications with 0%, 5% and 20% of the
   nodes down;
2. the inputs of the Go program written from the lakehouse (no Spark): every node's latency-model
   position and heartbeat phase, the subscriptions, every pair sharing a topic with the end that
   dials it (the lab's `outbound`), the lab's publications and down nodes per stage;
3. `benchmarks/gossipsub_go` (go-libp2p-pubsub on go-libp2p's mocknet, the same timers and
   latencies, built with `go build` the first time): its meshes after the warm-up and its
   deliveries;
4. the same measures read off both: mean mesh size after the warm-up (heartbeats 6 to the last),
   links per node (the meshes' union), max degree, the meshes' range, duplicates per delivery,
   delivery ratio per stage, hops, median latency.

Go is needed for step 3 only: without `go` on PATH the script says so and stops after the lab.

Usage:
  .venv/bin/python benchmarks/gossipsub_crosscheck.py --lakehouse DIR --instance fb-1k [--seeds 1 2 3]
      [--profile go-libp2p] [--heartbeats 120] [--publications 200] [--message-bytes 256] [--peers N]
      [--slow-down 10] [--work DIR] [--reuse-go]

With `--peers N` both sides use the lab run's own connections (`gossipsub_connections`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.design_greedy import current_subscriptions, print_markdown, table  # noqa: E402
from overlay.gossip.dissemination import Failures  # noqa: E402
from overlay.gossip.gossipsub import outbound_row, phases_us, profile  # noqa: E402
from overlay.rappel.coordinates import LatencyModel  # noqa: E402

GO_MODULE = ROOT / "benchmarks" / "gossipsub_go"
SHARES = (0.0, 0.05, 0.2)
WARM = 6  # the mean mesh is taken from this heartbeat on


def cli(lakehouse: str, *argv: str) -> float:
    clock = time.monotonic()
    subprocess.run([sys.executable, "-m", "pipelines", "--lakehouse", lakehouse, "-q", *argv], check=True, cwd=ROOT)
    return time.monotonic() - clock


def run_lab(args, seed: int) -> tuple[str, list[str]]:
    """The lab's run and its three spreads (reused when stored); their ids."""
    peers = f".peers{args.peers}" if args.peers else ""
    run_id = f"{args.instance}.gossipsub.{args.profile}.h{args.heartbeats}{peers}.s{seed}"
    cli(args.lakehouse, "simulate", "gossipsub", "--instance", args.instance, "--heartbeats", str(args.heartbeats),
        "--profile", args.profile, "--seed", str(seed), "--peers", str(args.peers), "--skip-diameters")  # fmt: skip
    spreads = []
    size = f".b{args.message_bytes}" if args.message_bytes != 256 else ""
    for share in SHARES:
        failure = ["--mass-failure", f"{share:g}"] if share else []
        cli(args.lakehouse, "disseminate", "--run-id", run_id, "--protocol", "gossipsub-spread",
            "--publications", str(args.publications), "--seed", str(seed), "--message-bytes",
            str(args.message_bytes), *failure)  # fmt: skip
        fail = f".fail{share:g}" if share else ""
        spreads.append(f"{run_id}.gossipsub-spread.p{args.publications}{fail}{size}.m1.s{seed}")
    return run_id, spreads


def export(args, seed: int, run_id: str, spreads: list[str], folder: Path) -> None:
    """The Go program's inputs (benchmarks/gossipsub_go/README.md) from the lakehouse."""
    params = profile(args.profile, seed)
    subs = np.asarray(current_subscriptions(args.lakehouse, args.instance), dtype=np.int64)
    nodes = np.unique(subs[:, 0])
    folder.mkdir(parents=True, exist_ok=True)
    slow = args.slow_down  # Go runs in slowed-down time: every duration times this
    positions = slow * LatencyModel().coordinates(params.model_seed, nodes)
    phase = slow * phases_us(seed, nodes, 1000 * params.heartbeat_ms)
    pd.DataFrame({"node_id": nodes, "x_ms": positions[:, 0], "y_ms": positions[:, 1], "phase_us": phase}).to_csv(
        folder / "nodes.csv", index=False
    )
    pd.DataFrame(subs, columns=["node_id", "topic_id"]).to_csv(folder / "subscriptions.csv", index=False)
    if args.peers:  # the run's own connections, dialled as the lab dialled them
        stored = table(args.lakehouse, "gossipsub_connections")
        stored = stored[stored.run_id == run_id]
        frame = pd.DataFrame({"dialer": stored.node_id, "listener": stored.peer_id})
        frame.to_csv(folder / "connections.csv", index=False)
        connections = len(frame)
    else:
        connections = all_pairs_connected(subs, seed, folder)
    publications = table(args.lakehouse, "routing_publications")
    stages, down = [], []
    for stage, (share, spread) in enumerate(zip(SHARES, spreads)):
        pubs = publications[publications.routing_run_id == spread].sort_values("pub_id")
        stages.append(pubs.assign(stage=stage)[["pub_id", "stage", "topic_id", "publisher"]])
        spared = np.searchsorted(nodes, pubs.publisher.to_numpy())
        alive = Failures(mass_share=share).alive(seed, nodes, 1, spared)[1]
        down += [(stage, int(v)) for v in nodes[~alive].tolist()]
    pd.concat(stages).to_csv(folder / "publications.csv", index=False)
    pd.DataFrame(down, columns=["stage", "node_id"]).to_csv(folder / "down.csv", index=False)
    settings = {
        "d": params.d, "d_low": params.d_low, "d_high": params.d_high, "d_score": params.d_score,
        "d_out": params.d_out, "d_lazy": params.d_lazy, "gossip_factor": params.gossip_factor,
        "heartbeat_ms": slow * params.heartbeat_ms, "prune_backoff_ms": slow * params.prune_backoff_ms,
        "history_length": 5,
        "history_gossip": params.mcache_gossip, "flood_publish": params.flood_publish,
        "message_bytes": args.message_bytes, "warmup_heartbeats": args.heartbeats,
        "publish_per_heartbeat": args.publish_per_heartbeat,
        "setup_seconds": args.setup_seconds or int(30 + connections / 2000), "seed": seed,
    }  # fmt: skip
    (folder / "params.json").write_text(json.dumps(settings, indent=1))


def all_pairs_connected(subs: np.ndarray, seed: int, folder: Path) -> int:
    """connections.csv: every pair sharing a topic, dialled by the lab's `outbound` end; how many."""
    frame = pd.DataFrame(subs, columns=["node_id", "topic_id"])
    pairs = set()
    for _, members in frame.groupby("topic_id").node_id:
        m = np.sort(members.to_numpy())
        for i, a in enumerate(m[:-1].tolist()):
            pairs.update((a, b) for b in m[i + 1 :].tolist())
    ordered = np.asarray(sorted(pairs), dtype=np.int64).reshape(-1, 2)
    dialer = np.empty(len(ordered), dtype=np.int64)
    for a in np.unique(ordered[:, 0]).tolist():  # the lab's `outbound`: the end that opened it dials
        at = ordered[:, 0] == a
        opened = outbound_row(seed, a, ordered[at, 1])
        dialer[at] = np.where(opened, a, ordered[at, 1])
    listener = np.where(dialer == ordered[:, 0], ordered[:, 1], ordered[:, 0])
    pd.DataFrame({"dialer": dialer, "listener": listener}).to_csv(folder / "connections.csv", index=False)
    return len(ordered)


def go_binary(work: Path) -> Path | None:
    """The Go program, built once into WORK; None (and why) when Go is not installed."""
    if shutil.which("go") is None:
        print("go is not on PATH: the cross-check needs Go (1.26; https://go.dev/dl) for its Go side; lab side done.")
        return None
    binary = work / "gossipsub-bench"
    if not binary.exists():
        subprocess.run(["go", "build", "-o", str(binary), "."], check=True, cwd=GO_MODULE)
    return binary


def tree_depths(first_sender: dict[int, int], root: int) -> dict[int, int]:
    """Each node's hops from `root` along the chain of the senders of its first copy."""
    depth = {root: 0}
    for v in first_sender:
        chain = []
        while v not in depth:
            chain.append(v)
            v = first_sender[v]
        d = depth[v]
        for w in reversed(chain):
            d += 1
            depth[w] = d
    return depth


def hops(deliveries: pd.DataFrame, publications: pd.DataFrame) -> pd.Series:
    """Each delivery's hops, by the chain of first senders back to the publisher."""
    out = []
    for pub, rows in deliveries.groupby("pub_id"):
        root = int(publications.loc[publications.pub_id == pub, "publisher"].iloc[0])
        depth = tree_depths(dict(zip(rows.node_id.tolist(), rows.from_id.tolist())), root)
        out += [depth[v] for v in rows.node_id.tolist()]
    return pd.Series(out, dtype=float)


def union_measures(mesh: pd.DataFrame, nodes: int) -> tuple[float, int]:
    links = set(zip(np.minimum(mesh.node_id, mesh.peer_id).tolist(), np.maximum(mesh.node_id, mesh.peer_id).tolist()))
    degree = pd.Series([u for u, _ in links] + [v for _, v in links]).value_counts()
    return 2 * len(links) / nodes, int(degree.max())


def go_measures(out: Path, nodes: int, slow: int) -> dict:
    beats = pd.read_csv(out / "heartbeats.csv")
    warm = beats[beats.heartbeat >= WARM]
    mesh = pd.read_csv(out / "mesh.csv")
    per_node, most = union_measures(mesh, nodes)
    pubs = pd.read_csv(out / "publications_out.csv")
    deliveries = pd.read_csv(out / "deliveries.csv")
    first = pubs[pubs.stage == 0]
    up = deliveries[deliveries.stage == 0]
    return {
        "mesh": (warm.mesh_links / warm.meshes).mean(),
        "links per node": per_node,
        "max degree": most,
        "mesh range": f"{warm.mesh_min.min()}-{warm.mesh_max.max()}",
        "duplicates per delivery": first.duplicates.sum() / first.delivered.sum(),
        "IDONTWANT per delivery": first.idontwant.sum() / first.delivered.sum(),
        **{
            f"delivered {s:g}": g.delivered.sum() / g.expected.sum() for s, (_, g) in zip(SHARES, pubs.groupby("stage"))
        },
        "hops": hops(up, first).mean(),
        "latency ms": up.latency_us.median() / 1000 / slow,
    }


def lab_measures(lakehouse: str, run_id: str, spreads: list[str], nodes: int) -> dict:
    beats = table(lakehouse, "gossipsub_heartbeats")
    beats = beats[(beats.run_id == run_id) & (beats.heartbeat >= WARM)]
    mesh = table(lakehouse, "gossipsub_mesh")
    per_node, most = union_measures(mesh[mesh.run_id == run_id], nodes)
    metrics = table(lakehouse, "routing_metrics").set_index("routing_run_id")
    up = metrics.loc[spreads[0]]
    publications = table(lakehouse, "routing_publications")
    idontwant = publications.loc[publications.routing_run_id == spreads[0], "idontwant"].sum()
    return {
        "mesh": (beats.mesh_avg).mean(),
        "links per node": per_node,
        "max degree": most,
        "mesh range": f"{beats.mesh_min.min()}-{beats.mesh_max.max()}",
        "duplicates per delivery": up.duplicate_deliveries / up.deliveries,
        "IDONTWANT per delivery": idontwant / up.deliveries,
        **{f"delivered {s:g}": metrics.loc[r, "delivery_ratio"] for s, r in zip(SHARES, spreads)},
        "hops": up.avg_path_length,
        "latency ms": up.latency_median,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--instance", default="fb-1k")
    parser.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    parser.add_argument("--profile", default="go-libp2p")
    parser.add_argument("--heartbeats", type=int, default=120)
    parser.add_argument("--publications", type=int, default=200)
    parser.add_argument("--message-bytes", type=int, default=256)
    parser.add_argument("--peers", type=int, default=0, help="peers as deployed: connections per node (0: all pairs)")
    parser.add_argument("--setup-seconds", type=int, default=0, help="Go's setup budget (default: from the pairs)")
    parser.add_argument(
        "--slow-down",
        type=int,
        default=10,
        help="Go's clock: heartbeats, backoffs, phases and latencies this many times longer, so that one machine's "
        "cores keep up with every host's messages (default 10; the lab's figures are in real time)",
    )
    parser.add_argument("--publish-per-heartbeat", type=int, default=50)
    parser.add_argument("--reuse-go", action="store_true", help="read a seed's Go outputs when WORK holds them")
    parser.add_argument("--work", default="/tmp/gossipsub-crosscheck")
    args = parser.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for seed in args.seeds:
        run_id, spreads = run_lab(args, seed)
        nodes = len(np.unique(np.asarray(current_subscriptions(args.lakehouse, args.instance))[:, 0]))
        rows.append({"seed": seed, "side": "lab", **lab_measures(args.lakehouse, run_id, spreads, nodes)})
        print(rows[-1], flush=True)
        binary = go_binary(work)
        if binary is None:
            continue
        folder = work / (run_id + (f".b{args.message_bytes}" if args.message_bytes != 256 else ""))
        clock = time.monotonic()
        if not (args.reuse_go and (folder / "go-out" / "publications_out.csv").exists()):
            export(args, seed, run_id, spreads, folder / "in")
            subprocess.run([str(binary), "-in", str(folder / "in"), "-out", str(folder / "go-out")], check=True)
        rows.append(
            {"seed": seed, "side": "go-libp2p-pubsub", **go_measures(folder / "go-out", nodes, args.slow_down),
             "go s": round(time.monotonic() - clock)}
        )  # fmt: skip
        print(rows[-1], flush=True)
    print_markdown([{k: (f"{v:.3f}" if isinstance(v, float) else v) for k, v in row.items()} for row in rows])


if __name__ == "__main__":
    main()
