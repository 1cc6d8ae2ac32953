"""Push-pull dissemination inside Feverfew's gossip, under churn or mass failure: the overlay heals
while the publications spread, as the paper runs Fig. 9 (docs/readings/feverfew.md#push-pull,
#failures). `overlay.gossip.dissemination` spreads them on a stored, static overlay instead; the
failures, publishers and exchanges are the same draws, so the two are compared like for like.

It continues a Feverfew simulation from a state (its last cycle L): dissemination cycle k is
gossip cycle L + k of the same protocol and seed, with these additions, at every node p:

* who is up at k is `dissemination.Failures.alive` over all nodes, the publishers spared (each
  publication's publisher never fails);
* p down at k: it has no state (it loses its views and what it was told) and sends nothing; no
  one sends to it, since
* p up at k drops every entry of a node down at k from RV, SV, LV, MB, AV and its held copies
  before it acts (dead entries leave every view within one cycle: the failure detector is
  perfect);
* p back at k (down at k - 1) starts from empty views, uninformed, with a random view of
  `random_view` distinct nodes up at k, draw(GOSSIP_REJOIN, k, p, i) mod N for i = 0, 1, ...
  (skipping p, nodes down and repeats), ages 0;
* push-pull, on the state at the start of the cycle: for each publication (pub_id ascending) of a
  topic t p subscribes to, p contacts v, the draw(PUSH_PULL, pub_id, k, p) mod m-th of the m
  subscribers of t in its (filtered) LV, ascending; when exactly one of p, v was informed before
  k and its age k - informed is at most `theory.age_limit(n_t)`, the other is informed at k.
  So a node contacts a member of its own ln-covered view (a gossip peer comes from a local
  view), where the static dissemination takes a neighbour in the undirected overlay.

Cycle 0 is the publication: the publishers alone are informed. The completion of a publication
at k is its informed subscribers up at k over its subscribers up at k.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.draws import GOSSIP_REJOIN, PUBLISHER, PUSH_PULL, draw, draw_int
from overlay.gossip.cycles import CycleEngine, CycleState
from overlay.gossip.dissemination import COMPLETION_COLUMNS, Failures
from overlay.gossip.feverfew import (
    INFORMED_COLUMNS,
    PUSH_PULL_ANSWERED,
    PUSH_PULL_REQUEST,
    Feverfew,
    FeverfewParams,
    Interests,
    Node,
    distinct_draws,
)
from overlay.gossip.measures import view_summary
from overlay.gossip.pushpull import completion
from overlay.gossip.theory import age_limit
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep

# What a node tells its push-pull partner about a publication, as it stood at the start of the cycle.
UNINFORMED, PASSING, SPENT = 0, 1, 2


@dataclass(frozen=True)
class Publication:
    pub_id: int
    topic_id: int
    publisher: int
    members: np.ndarray  # the topic's subscribers, ascending
    age_limit: int


def publications(interests: Interests, chosen: list[tuple[int, int]], seed: int) -> list[Publication]:
    """The chosen (pub_id, topic_id), each with its members and its publisher: the subscriber of
    smallest draw(PUBLISHER, t, node), as in the static dissemination."""
    out = []
    for pub_id, topic in sorted(chosen):
        members = interests.subscribers(topic)
        publisher = int(members[int(np.argmin(draw(seed, PUBLISHER, topic, members)))])
        out.append(Publication(int(pub_id), int(topic), publisher, members, age_limit(len(members))))
    return out


class Healing:
    """What `Feverfew` does besides its gossip in a healing run (see the module doc): `alive` is
    bool [cycles + 1, N] over dissemination cycles; gossip cycle c is dissemination cycle c - base."""

    def __init__(
        self, base: int, alive: np.ndarray, publications: list[Publication], seed: int, random_view: int
    ) -> None:
        self.base, self.alive, self.seed, self.random_view = base, alive, seed, random_view
        self.publications = sorted(publications, key=lambda pub: pub.pub_id)
        self.by_id = {pub.pub_id: pub for pub in self.publications}

    def up(self, node: int, cycle: int) -> bool:
        return bool(self.alive[cycle - self.base, node])

    def enter(self, n: Node, cycle: int) -> Node:
        """The node as it starts the cycle: gone if down, fresh if back, else without the dead."""
        k = cycle - self.base
        up, me = self.alive[k], n.node
        if not up[me]:
            return Node(me)
        if not self.alive[k - 1, me]:
            fresh = distinct_draws(self.seed, GOSSIP_REJOIN, (k, me), self.random_view, len(up), me, up)
            return Node(me, rv=dict.fromkeys(fresh, 0))
        n.rv = {q: age for q, age in n.rv.items() if up[q]}
        n.sv = [q for q in n.sv if up[q]]
        n.lv = [q for q in n.lv if up[q]]
        n.mb = {q for q in n.mb if up[q]}
        n.av = [(o, t) for o, t in n.av if up[o]]
        n.held = [h for h in n.held if up[h[0]]]
        return n

    def state_code(self, n: Node, pub: Publication, k: int) -> int:
        at = n.informed.get(pub.pub_id)
        if at is None or at >= k:
            return UNINFORMED
        return PASSING if k - at <= pub.age_limit else SPENT

    def requests(self, n: Node, cycle: int, interests: Interests) -> Iterator[dict]:
        """p's push-pull contacts of the cycle, one per publication of its topics."""
        k, me = cycle - self.base, n.node
        mine = interests.subs(me)
        for index, pub in enumerate(self.publications):
            if pub.topic_id not in mine:
                continue
            options = sorted(q for q in n.lv if pub.topic_id in interests.subs(q))
            if options:
                v = options[draw_int(self.seed, PUSH_PULL, pub.pub_id, k, me) % len(options)]
                yield {
                    "dst": v,
                    "kind": PUSH_PULL_REQUEST,
                    "src": me,
                    "seq": index,
                    "other": pub.pub_id,
                    "ttl": self.state_code(n, pub, k),
                }

    def answer(self, n: Node, request: dict, cycle: int) -> dict:
        """The contacted side: its own start-of-cycle code back; informed if pushed to."""
        k, pub = cycle - self.base, self.by_id[request["other"]]
        code = self.state_code(n, pub, k)
        if request["ttl"] == PASSING and code == UNINFORMED:
            n.informed[pub.pub_id] = k
        return {
            "dst": request["src"],
            "kind": PUSH_PULL_ANSWERED,
            "src": n.node,
            "seq": request["seq"],
            "other": pub.pub_id,
            "ttl": code,
        }

    def pull(self, n: Node, answer: dict, cycle: int) -> None:
        """The contacting side: informed if its partner could pass the publication on."""
        if answer["ttl"] == PASSING and answer["other"] not in n.informed:
            n.informed[answer["other"]] = cycle - self.base


def publish(state: DataFrame, pubs: list[Publication]) -> DataFrame:
    """The state at dissemination cycle 0: the publishers hold their publications (age 0)."""
    spark = state.sparkSession
    held: dict[int, list[int]] = {}
    for pub in pubs:
        held.setdefault(pub.publisher, []).append(pub.pub_id)
    rows = [(node, sorted(ids), [0] * len(ids)) for node, ids in sorted(held.items())]
    (pub_column, pub_type), (at_column, at_type) = INFORMED_COLUMNS
    publishers = spark.createDataFrame(rows, f"node_id bigint, {pub_column} {pub_type}, {at_column} {at_type}")
    return state.join(F.broadcast(publishers), "node_id", "left").select(
        *state.columns,
        F.coalesce(pub_column, F.array().cast(pub_type)).alias(pub_column),
        F.coalesce(at_column, F.array().cast(at_type)).alias(at_column),
    )


def heal_and_disseminate(
    spark,
    state: DataFrame,
    base: int,
    offsets: np.ndarray,
    topics: np.ndarray,
    params: FeverfewParams,
    chosen: list[tuple[int, int]],
    failures: Failures,
    cycles: int,
    seed: int,
    partitions: int,
    on_step: OnStep | None = None,
    lineage: Lineage = LOCAL,
) -> tuple[list[dict], DataFrame]:
    """Completion rows (`COMPLETION_COLUMNS`) of the `chosen` (pub_id, topic_id) at cycles
    0..`cycles`, Feverfew going on from `state` (its cycle `base`) with the gossip seed of
    `params` and the dissemination `seed` (failures, publishers, contacts). The rows are few
    (publications x cycles): a list; with the last state (checkpointed). Two Spark jobs per cycle:
    the cycle, and one aggregate (informed per publication, coverage of the nodes up)."""
    failures.check()
    nodes = len(offsets) - 1
    pubs = publications(Interests(offsets, topics, nodes, params.shuffle), chosen, seed)
    alive = failures.alive(
        seed, np.arange(nodes, dtype=np.int64), cycles, np.asarray([pub.publisher for pub in pubs], dtype=np.int64)
    )
    healing = Healing(base, alive, pubs, seed, params.random_view)
    engine = CycleEngine(spark, Feverfew, (params, offsets, topics, healing), partitions, lineage)
    informed = {0: {pub.pub_id: 1 for pub in pubs}}

    def on_cycle(cycle: int, cycle_state: CycleState, seconds: float) -> dict:
        k = cycle - base
        summary = view_summary(
            cycle_state.frame,
            *(
                F.sum(F.array_contains("informed_pub", F.lit(pub.pub_id)).cast("int")).alias(f"informed_{pub.pub_id}")
                for pub in pubs
            ),
        )
        informed[k] = {pub.pub_id: summary[f"informed_{pub.pub_id}"] for pub in pubs}
        share = summary[S.COVERED_SHARE]
        done = [informed[k].get(pub.pub_id, 0) / max(1, int(alive[k, pub.members].sum())) for pub in pubs]
        return {"completion": f"{min(done):.3f}", "covered_up": f"{share:.1%}" if share is not None else "-"}

    last = engine.run(publish(state, pubs), base + 1, base + cycles, on_cycle=on_cycle, on_step=on_step)
    rows = []
    for pub in pubs:
        up = alive[:, pub.members].sum(axis=1).astype(np.int64)
        told = np.asarray([informed[k].get(pub.pub_id, 0) for k in range(cycles + 1)], dtype=np.int64)
        for k, ratio in enumerate(completion(up, told)):
            rows.append(
                dict(
                    zip(
                        COMPLETION_COLUMNS,
                        (
                            pub.pub_id,
                            pub.topic_id,
                            pub.publisher,
                            len(pub.members),
                            k,
                            int(up[k]),
                            int(told[k]),
                            float(ratio),
                        ),
                    )
                )
            )
    return rows, last
