"""Benchmark (not a test): where Rappel's friend coverage (ComNet'09 Fig. 9) falls short, on a
stored Rappel run's inputs (instance, coordinates, publishers, settings).

1. **The utility with global knowledge.** Each node picks its alpha friends greedily from every
   node by Fig. 3's set utility (exact feed sets, the run's distances in seconds; each step adds
   the node that raises U(i, F) most). No discovery limits it, so its coverage is what the
   utility itself allows on these inputs. Then the same with the interest-only utility, and, as
   a what-if outside the model, with a Vivaldi-style height per node (latency = plane distance
   + h_a + h_b, h uniform in [0, 2 m] ms for each `--heights` m): the access-link term that
   makes very near pairs rare.
2. **The protocol over time.** The tests' whole-network oracle (`tests/rappel_trees_oracle.py`,
   which equals the Spark run round by round) replays the run's settings for `--hours`,
   printing the coverage every 10 simulated minutes: protocol time, not Spark time.
3. **A what-if of discovery** (`--tree-hours H`, outside the paper's text): the same replay for
   H hours where, after every round, each node also hears of its parent and children in every
   tree (as it hears of the nodes its join walks met), so tree neighbours become candidates.

"Full" is the share of subscribers (nodes of >= 1 feed) whose every feed a friend shares, as the
report's Fig. 9 line; "covered" the share of all subscriptions a friend shares.

Usage:
  .venv/bin/python benchmarks/rappel_coverage.py --lakehouse DIR --run-id RUN [--hours 2] [--heights 10,20]
      [--tree-hours 0.5]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from rappel_trees_oracle import coupled_run  # noqa: E402

from benchmarks.design_greedy import print_markdown, table  # noqa: E402
from benchmarks.rappel_1k import oracle_inputs  # noqa: E402

MIN_SECONDS = 1e-4  # the utility's distance guard (docs/readings/rappel.md#utilities)
MANY = 9  # the last bucket of feeds subscribed: that many or more


def utility_greedy(member: np.ndarray, seconds: np.ndarray | None, alpha: int) -> np.ndarray:
    """Per node, its alpha friends chosen greedily by the set utility of Fig. 3 from every other
    node; `member` bool [nodes, feeds]; `seconds` [nodes, nodes] (None: interest only, 1 s).
    Returns bool [nodes, feeds]: the feeds some friend shares."""
    nodes, _ = member.shape
    sizes = member.sum(axis=1)
    counts = member.astype(np.int32)
    shared = counts @ counts.T
    union = sizes[:, None] + sizes[None, :] - shared
    jaccard = np.divide(shared, union, out=np.zeros(shared.shape), where=union > 0)
    held = np.zeros_like(member)
    as_float = member.astype(np.float64)
    for i in np.flatnonzero(sizes):
        weight = np.ones(nodes) if seconds is None else 1.0 / np.maximum(seconds[i], MIN_SECONDS)
        mine, holders, friends = member[i], np.zeros(member.shape[1], dtype=np.int32), []
        for _ in range(alpha):
            uncovered, once = mine & (holders == 0), mine & (holders == 1)
            sole = np.zeros(member.shape[1])  # per feed held once: its holder's weight (the bonus it would lose)
            for f in np.flatnonzero(once):
                sole[f] = weight[next(j for j in friends if member[j, f])]
            gain = weight * (jaccard[i] + member[:, uncovered].sum(axis=1) / sizes[i]) - as_float @ sole / sizes[i]
            gain[friends + [i]] = -np.inf
            if gain.max() == -np.inf:  # everyone else is a friend already
                break
            chosen = int(np.argmax(gain))
            friends.append(chosen)
            holders += member[chosen]
        held[i] = mine & (holders > 0)
    return held


def summary(label: str, member: np.ndarray, held: np.ndarray) -> dict:
    sizes = member.sum(axis=1)
    full = (held.sum(axis=1) == sizes)[sizes > 0]
    row = {"friends chosen by": label, "full": f"{full.mean():.1%}", "covered": f"{held.sum() / member.sum():.1%}"}
    for k in range(1, MANY + 1):
        bucket = np.minimum(sizes, MANY) == k
        if bucket.any():
            row[f"{k}{'+' if k == MANY else ''}"] = f"{(held.sum(axis=1) == sizes)[bucket].mean():.0%}"
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lakehouse", required=True)
    parser.add_argument("--run-id", required=True, help="a stored Rappel run (its instance, inputs and settings)")
    parser.add_argument("--hours", type=float, default=2.0, help="the oracle's replay (default 2; 0: none)")
    parser.add_argument("--heights", default="10,20", help="what-if mean access heights in ms (default 10,20)")
    parser.add_argument(
        "--tree-hours",
        type=float,
        default=0.0,
        help="what-if replay with tree neighbours as candidates, this long (default 0: none)",
    )
    args = parser.parse_args()

    runs = table(args.lakehouse, "overlay_runs")
    run = runs[runs.run_id == args.run_id].iloc[0]
    request = json.loads(run.params)["request"]
    nodes, subs, coords, publishers = oracle_inputs(args.lakehouse, run.instance, args.run_id, request["model_seed"])
    feeds = len(publishers)
    member = np.zeros((nodes, feeds), dtype=bool)
    for v, mine in subs.items():
        member[v, sorted(mine)] = True
    xy = np.array(coords, dtype=np.float64)
    plane_ms = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(axis=-1))
    alpha = int(request["alpha"])
    print(f"{args.run_id}: {nodes} nodes, {feeds} feeds, {int(member.sum())} subscriptions, alpha {alpha}", flush=True)

    rows = []
    clock = time.monotonic()
    rows.append(summary("utility, the model's latencies", member, utility_greedy(member, plane_ms / 1000.0, alpha)))
    rows.append(summary("interest-only utility", member, utility_greedy(member, None, alpha)))
    for mean in [float(m) for m in args.heights.split(",") if m]:
        height = np.random.default_rng(1).uniform(0.0, 2.0 * mean, nodes)
        with_heights = plane_ms + height[:, None] + height[None, :]
        rows.append(
            summary(
                f"utility, heights of mean {mean:g} ms (what-if)",
                member,
                utility_greedy(member, with_heights / 1000.0, alpha),
            )
        )
    print(f"global-knowledge greedy ({time.monotonic() - clock:.0f} s): full coverage overall and by feeds subscribed")
    print_markdown(rows)

    inputs = (nodes, subs, coords, publishers, member)
    if args.hours > 0:
        print(f"the protocol (the oracle replaying {args.run_id}'s settings for {args.hours:g} h):")
        print_markdown(replay(run.instance, request, inputs, args.hours, tree_neighbours=False))
    if args.tree_hours > 0:
        print(f"what-if: tree neighbours heard of every round ({args.tree_hours:g} h):")
        print_markdown(replay(run.instance, request, inputs, args.tree_hours, tree_neighbours=True))


def replay(instance: str, request: dict, inputs, hours: float, tree_neighbours: bool) -> list[dict]:
    """The oracle on the run's settings for `hours`: the coverage every 20 rounds."""
    from pipelines.rappel import RappelRequest

    nodes, subs, coords, publishers, member = inputs
    keep = {k: v for k, v in request.items() if k in RappelRequest.__dataclass_fields__}
    keep["failure"] = tuple(keep["failure"]) if keep.get("failure") else None
    keep["churn"] = tuple(keep["churn"]) if keep.get("churn") else None
    settings = RappelRequest(**{**keep, "instance": instance, "hours": hours})
    presence = settings.presence(frozenset(publishers))
    clock, timeline = time.monotonic(), []
    for r, fo, trees in coupled_run(
        nodes,
        subs,
        coords,
        publishers,
        settings.rounds,
        seed=settings.seed,
        alpha=settings.alpha,
        mode=settings.mode,
        utility=settings.utility,
        beta=settings.beta,
        presence_down=lambda r: presence.down(range(nodes), r),
        proper=presence.leaves_properly,
    ):
        if tree_neighbours:  # heard of at the next round, as the walks' met nodes
            for tree in trees.trees:
                for x, m in tree.members.items():
                    if m.online and m.parent is not None:
                        fo.met[x].append(m.parent)
                        fo.met[m.parent].append(x)
        if r % 20 == 0 or r == settings.rounds:
            held = np.zeros_like(member)
            for v in range(nodes):
                for j in fo.friends[v]:
                    held[v] |= member[j]
            held &= member
            timeline.append(
                {
                    "minutes": r // 2,
                    **summary(f"protocol at {r // 2} min", member, held),
                    "seconds": f"{time.monotonic() - clock:.0f}",
                }
            )
    return timeline


if __name__ == "__main__":
    main()
