"""The disseminate job: push-pull gossip of publications on any stored overlay run, under churn or
mass failure (`overlay.gossip.dissemination`), stored as a routing run of protocol `push-pull`
with its completion per publication and cycle (`dissemination_completion`). With `--live`, on a
Feverfew simulation only, the gossip goes on while the publications spread and the overlay heals
(`overlay.gossip.healing`): protocol `push-pull-live`, same table.

Like `route`: the routing run row is claimed first (`pipelines.ledger`: status running, an
attempt token); the dissemination is a function of its request, so rerunning an unfinished one
takes it over and recomputes it, and its rows are replaced in one commit before the row is
flipped to complete, in a write that checks the attempt token. GPM, the small-world overlays and
Feverfew are compared under the very same failures: the failures depend on the seed and the node
ids only.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import asdict, dataclass

from pyspark.sql import Row, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from overlay.design.classes import Subscriptions
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.gossip.dissemination import COMPLETION_COLUMNS, COMPLETION_SCHEMA, Failures, choose_topics, disseminate
from overlay.gossip.feverfew import FeverfewParams
from overlay.gossip.healing import heal_and_disseminate
from pipelines import ledger
from pipelines.lakehouse import Lakehouse
from pipelines.overlays import _now, check_run_id, complete_run, run_inputs
from pipelines.progress import Progress
from pipelines.route import claim_run
from pipelines.simulate import last_snapshot, stored_state
from pipelines.spark import task_slots

log = logging.getLogger(__name__)

PROTOCOL = "push-pull"
LIVE_PROTOCOL = "push-pull-live"


@dataclass(frozen=True)
class DisseminateRequest:
    run_id: str
    publications: int
    cycles: int = 40
    seed: int = 1
    substitution: float = 0.0
    mass_share: float = 0.0
    mass_cycle: int = 1
    topic_sizes: tuple[int, ...] = ()
    live: bool = False

    @property
    def protocol(self) -> str:
        return LIVE_PROTOCOL if self.live else PROTOCOL

    def failures(self) -> Failures:
        return Failures(self.substitution, self.mass_share, self.mass_cycle)

    def params_json(self) -> str:
        """The request as stored in `routing_runs.params` (`route.claim_run` compares it)."""
        return json.dumps(asdict(self), sort_keys=True)

    def check(self) -> None:
        """Every check that needs no Spark."""
        check_run_id(self.run_id)
        if self.publications < 1:
            raise InputError(f"--publications must be positive, got {self.publications}")
        if any(size < 2 for size in self.topic_sizes):
            raise InputError(f"--topic-sizes are sizes of topics with two or more subscribers, got {self.topic_sizes}")
        if self.topic_sizes and len(self.topic_sizes) != self.publications:
            raise InputError(
                f"--topic-sizes names {len(self.topic_sizes)} topics: give --publications {len(self.topic_sizes)}"
            )
        if self.cycles < 1:
            raise InputError(f"--cycles must be at least 1, got {self.cycles}")
        try:
            self.failures().check()
        except ValueError as error:
            raise InputError(str(error)) from None

    def default_routing_run_id(self) -> str:
        churn = f".sub{self.substitution:g}" if self.substitution else ""
        mass = f".fail{self.mass_share:g}at{self.mass_cycle}" if self.mass_share else ""
        sizes = f".n{'-'.join(map(str, self.topic_sizes))}" if self.topic_sizes else ""
        return f"{self.run_id}.{self.protocol}.p{self.publications}{sizes}.c{self.cycles}{churn}{mass}.s{self.seed}"


def run_dissemination(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: DisseminateRequest,
    routing_run_id: str | None = None,
    progress: bool = True,
) -> Row:
    """Disseminate the request's publications on its overlay run; the routing run row, complete."""
    request.check()
    routing_run_id = routing_run_id or request.default_routing_run_id()
    check_run_id(routing_run_id)
    run = complete_run(lakehouse, request.run_id)
    claimed = claim_run(lakehouse, routing_run_id, request, run[S.INSTANCE])
    if claimed.done:
        log.info("dissemination %s is complete already", routing_run_id)
        return claimed.found
    clock = time.monotonic()
    with ledger.failing(lakehouse, claimed, "dissemination"):
        instance, subscriptions, links = run_inputs(lakehouse, run)
        with Progress(routing_run_id, total=2, enabled=progress, logger=log) as bar:
            topics = choose_topics(subscriptions, request.seed, request.publications, request.topic_sizes)
            topics = lakehouse.lineage.cut(topics)
            chosen = topics.count()
            if chosen == 0:
                raise InputError(f"run '{request.run_id}': no topic has two subscribers: nothing to disseminate")
            bar.step(f"{chosen} publications chosen", publications=chosen)
            if request.live:
                completion = _live(spark, lakehouse, run, instance, request, subscriptions, topics, progress)
            else:
                completion = disseminate(subscriptions, links, topics, request.failures(), request.cycles, request.seed)
            lakehouse.write_run_rows(S.DISSEMINATION_COMPLETION, routing_run_id, completion, key=S.ROUTING_RUN_ID)
            bar.step(f"stored {S.DISSEMINATION_COMPLETION.name}", stored=S.DISSEMINATION_COMPLETION.name)
        ledger.complete(
            lakehouse,
            claimed,
            **{
                S.FINISHED_AT: _now(),
                S.SECONDS: time.monotonic() - clock,
                S.SUPERSTEPS: request.cycles,
                S.PUBLICATIONS: chosen,
            },
        )
    return ledger.run_row(lakehouse, ledger.ROUTING, routing_run_id)


def _live(
    spark,
    lakehouse: Lakehouse,
    run: Row,
    instance: Row,
    request: DisseminateRequest,
    subscriptions,
    topics,
    progress: bool,
):
    """The completion rows of a dissemination inside the gossip of the Feverfew run `run`, going on
    from its last stored state with its own protocol settings."""
    if run[S.ALGORITHM] != "feverfew":
        raise InputError(
            f"--live goes on with a Feverfew simulation's gossip; run '{run[S.RUN_ID]}' was made by "
            f"{run[S.ALGORITHM]}: drop --live to disseminate on its stored links"
        )
    params = FeverfewParams(**json.loads(run[S.PARAMS])["protocol"])
    last = last_snapshot(lakehouse, run[S.RUN_ID])
    state = stored_state(lakehouse, run[S.RUN_ID], last)
    csr = Subscriptions.collect(subscriptions, int(instance[S.NODES]))
    chosen = [(r[S.PUB_ID], r[S.TOPIC_ID]) for r in topics.collect()]  # the few publications asked for
    with Progress(f"{run[S.RUN_ID]} live", total=request.cycles, unit="cycle", enabled=progress, logger=log) as bar:
        rows, _ = heal_and_disseminate(
            spark,
            state,
            last,
            csr.offsets,
            csr.topics,
            params,
            chosen,
            request.failures(),
            request.cycles,
            request.seed,
            task_slots(spark),
            on_step=bar.on_step,
            lineage=lakehouse.lineage,
        )
    return local_frame(spark, [tuple(row[c] for c in COMPLETION_COLUMNS) for row in rows], COMPLETION_SCHEMA)


SUMMARY_COLUMNS = ("pub_id", "topic_id", "subscribers", "publisher", "first_complete", "final_completion")


def summary_rows(lakehouse: Lakehouse, routing_run_id: str) -> list[dict]:
    """Per publication: the first cycle all alive subscribers were informed, and the last
    cycle's completion (one row per publication: the few the request asked for)."""
    rows = lakehouse.read(S.DISSEMINATION_COMPLETION).filter(F.col(S.ROUTING_RUN_ID) == routing_run_id)
    last = rows.agg(F.max(S.CYCLE)).first()[0]
    summary = rows.groupBy(S.PUB_ID, S.TOPIC_ID, S.SUBSCRIBERS, S.PUBLISHER).agg(
        F.min(F.when(F.col(S.COMPLETION) >= 1.0, F.col(S.CYCLE))).alias("first_complete"),
        F.max(F.when(F.col(S.CYCLE) == last, F.col(S.COMPLETION))).alias("final_completion"),
    )
    return [r.asDict() for r in summary.orderBy(S.PUB_ID).collect()]
