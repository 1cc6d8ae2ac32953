"""The design job: build an overlay for an instance with a greedy algorithm or a baseline.

Storage protocol (what makes a run resumable and safe to read):

* the run row is inserted first with status `running` and an `attempt` token naming this process;
* completed rounds append their edges to `overlay_edges`, then their rows to `overlay_rounds`:
  a round row is its round's commit point; edges of a round without a row are debris of a
  crash and are deleted when the run resumes. Rounds are committed in groups, at most
  `COMMIT_SECONDS` apart (`--commit-every`): each Delta commit costs about a second locally;
* at the end the job checks the engine's TCC count against the topic components, labelled on
  the driver and proven by Spark joins (`overlay.certified`), stores the quality metrics, and only then flips the run to `complete`, in a write that
  checks the attempt token (`pipelines.ledger`, as every job's runs): a process that was taken
  over can neither complete nor fail its successor's run.

Running the same command again after a crash (or `kill -9`) resumes after the last completed
round: the greedy output is the canonical sequence (see `overlay.design.greedy`), so a resumed
run ends with exactly the overlay of an uninterrupted one. A second process that resumes the
same run takes it over (new attempt token); the first stops at its next round.

The MinMaxODA reference of a budget ratio is shared: a design that needs it while another
process computes it waits for it (`_await_owner`) instead of taking it over.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass

import numpy as np
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from overlay import registry
from overlay import schema as S
from overlay.design.baselines import random_a, random_m
from overlay.design.classes import Subscriptions
from overlay.design.greedy import (
    DEFAULT_EPSILON,
    GREEDY_ALGORITHMS,
    MEMORY_BUDGET,
    MODES,
    GreedyDesign,
    GreedyParams,
    GreedyRound,
    GreedyStart,
    InstanceSize,
)
from overlay.design.incremental import KeptLinks, keep_links, open_topics, release_redundant
from overlay.design.per_topic import NODE_ORDERS, cycle_pt, harary_pt
from overlay.design.spidercast import SpiderCastParams, spidercast_m
from overlay.errors import InputError
from overlay.frames import local_frame
from overlay.graph import Backend
from overlay.smallworld.fingers import property_1_violation
from overlay.smallworld.gswico import LONG_KINDS, SHORT_KINDS, small_world_overlay
from pipelines import incremental as day_two
from pipelines import ledger
from pipelines.lakehouse import Lakehouse, UnknownRunError
from pipelines.overlays import _now, check_run_id, complete_run, evaluate_run, store_ktco
from pipelines.progress import Progress
from pipelines.spark import jobs_started, task_slots

log = logging.getLogger(__name__)

ALGORITHMS = tuple(registry.ALGORITHMS)
EDGE_BUDGETED = registry.algorithms(budget=registry.EDGES)
RATIO_EDGES = ("links", "degree")  # what a budget ratio bounds for EDGE_BUDGETED: see DesignRequest
DEGREE_BUDGETED = registry.algorithms(budget=registry.DEGREE)
UNBUDGETED = tuple(a.name for a in registry.ALGORITHMS.values() if a.budget is None)
# The k each kTCO design builds (HararyPT: any k >= 2, given by --k).
KTCO = {a.name: a.builds_k or None for a in registry.ALGORITHMS.values() if a.builds_k is not None}
# A design waiting for a run another process computes (the shared MinMaxODA reference) looks at
# it every REFERENCE_POLL_SECONDS. An owner that shows no progress (a committed round, its
# metrics, a new attempt) for REFERENCE_STALE_SECONDS is presumed dead and its run is taken
# over: far above the 30 s between round commits, the setup before the first round and the
# final evaluation of the instances this lab designs.
REFERENCE_POLL_SECONDS = 5.0
REFERENCE_STALE_SECONDS = 900.0


class DesignError(RuntimeError):
    """A design run finished inconsistently (for instance the two TCC counts disagree)."""


@dataclass(frozen=True)
class DesignRequest:
    instance: str
    algorithm: str
    max_degree: int | None = None
    max_edges: int | None = None
    budget_ratio: float | None = None
    seed: int = 1
    short: str | None = None  # swico: how the ring is built (gswico, random)
    long: str | None = None  # swico: how the long fingers are chosen (gswico, chord, random)
    mode: str = "exact"  # greedy: exact (the canonical sequence) or relaxed
    epsilon: float | None = None  # relaxed: the slack factor (default DEFAULT_EPSILON)
    k: int | None = None  # kTCO designs: the connectivity built and checked (gm2, cycle-pt: 2)
    node_order: str | None = None  # harary-pt: the global order, ids (default) or random (seeded)
    # gpa, random-a with a ratio: m = ratio x MinMaxODA's links (eq. 36, "links") or
    # m = floor(ratio x its max degree) x |V| / 2 ("degree": the d of the degree-budgeted designs, as
    # ICDCS'16 sets m = d|V|/2 in Figs. 6-8, so that every algorithm gets about the same links)
    ratio_edges: str = "links"

    def __post_init__(self) -> None:
        if self.algorithm in KTCO and self.k is None:
            object.__setattr__(self, "k", KTCO[self.algorithm])
        if self.algorithm == "harary-pt" and self.node_order is None:
            object.__setattr__(self, "node_order", "ids")
        if self.algorithm == "swico":
            object.__setattr__(self, "short", self.short or "gswico")
            object.__setattr__(self, "long", self.long or "gswico")
        if self.mode == "relaxed" and self.epsilon is None:
            object.__setattr__(self, "epsilon", DEFAULT_EPSILON)

    def check(self) -> None:
        """Every check that needs no Spark: runs before anything is written."""
        if self.algorithm not in ALGORITHMS:
            raise InputError(f"unknown algorithm '{self.algorithm}'; choose one of {', '.join(ALGORITHMS)}")
        if self.algorithm != "swico" and (self.short or self.long):
            raise InputError(
                "--short and --long choose the parts of a small-world overlay: only with --algorithm swico"
            )
        if self.algorithm == "swico":
            if self.short not in SHORT_KINDS:
                raise InputError(f"--short must be one of {', '.join(SHORT_KINDS)}, got '{self.short}'")
            if self.long not in LONG_KINDS:
                raise InputError(f"--long must be one of {', '.join(LONG_KINDS)}, got '{self.long}'")
        if self.mode not in MODES:
            raise InputError(f"--mode must be one of {', '.join(MODES)}, got '{self.mode}'")
        if self.mode == "relaxed" and self.algorithm not in GREEDY_ALGORITHMS:
            raise InputError(f"--mode relaxed is for the greedy algorithms ({', '.join(GREEDY_ALGORITHMS)})")
        if self.epsilon is not None and self.mode != "relaxed":
            raise InputError("--epsilon is the slack of --mode relaxed")
        if self.epsilon is not None and not (0 < self.epsilon < math.inf):
            raise InputError(f"--epsilon must be a positive number, got {self.epsilon}")
        given = [name for name in ("max_degree", "max_edges", "budget_ratio") if getattr(self, name) is not None]
        if len(given) > 1:
            raise InputError("give one budget: --max-degree, --max-edges or --budget-ratio")
        for name in ("max_degree", "max_edges"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise InputError(f"--{name.replace('_', '-')} must be positive, got {value}")
        ratio = self.budget_ratio
        if ratio is not None and not (0 < ratio <= 1) or (ratio is not None and math.isnan(ratio)):
            raise InputError(f"--budget-ratio must lie in (0, 1], got {ratio}")
        if self.k is not None and self.algorithm not in KTCO:
            raise InputError(
                f"--k is the connectivity of a kTCO design (gm2, harary-pt, cycle-pt), not of {self.algorithm}"
            )
        if self.algorithm == "harary-pt" and (self.k is None or self.k < 2):
            raise InputError(f"harary-pt needs --k K with K >= 2, got {self.k}")
        if KTCO.get(self.algorithm) is not None and self.k != KTCO[self.algorithm]:
            k = KTCO[self.algorithm]
            raise InputError(f"{self.algorithm} builds a {k}TCO: --k must be {k} or left out")
        if self.node_order is not None and self.algorithm != "harary-pt":
            raise InputError("--node-order is HararyPT's global order: only with --algorithm harary-pt")
        if self.node_order is not None and self.node_order not in NODE_ORDERS:
            raise InputError(f"--node-order must be one of {', '.join(NODE_ORDERS)}, got '{self.node_order}'")
        if self.ratio_edges not in RATIO_EDGES:
            raise InputError(f"--ratio-edges must be one of {', '.join(RATIO_EDGES)}, got '{self.ratio_edges}'")
        if self.ratio_edges != "links" and (self.budget_ratio is None or self.algorithm not in EDGE_BUDGETED):
            raise InputError(
                f"--ratio-edges sets the edge budget a ratio gives {' and '.join(EDGE_BUDGETED)}: "
                "only with --budget-ratio and one of them"
            )
        if self.algorithm == "swico" and given:
            raise InputError(
                "swico's degrees are fixed by Property 1 (ceil(log2 |V|) fingers per node): it takes no budget"
            )
        if self.algorithm in UNBUDGETED and given:
            raise InputError(f"{self.algorithm} builds a complete {self.k or ''}TCO and takes no budget")
        if self.algorithm not in UNBUDGETED and not given:
            raise InputError(f"{self.algorithm} needs a budget: --max-degree, --max-edges or --budget-ratio")
        if self.algorithm in DEGREE_BUDGETED and self.max_edges is not None:
            raise InputError(f"{self.algorithm} bounds the maximum degree: give --max-degree or --budget-ratio")

    def default_run_id(self) -> str:
        if self.algorithm == "swico":
            return f"{self.instance}.swico.{self.short}-{self.long}.s{self.seed}"
        if self.k is not None:
            order = ".random" if self.node_order == "random" else ""
            mode = f".relaxed{self.epsilon:g}" if self.mode == "relaxed" else ""
            return f"{self.instance}.{self.algorithm}.{self.k}tco{order}{mode}.s{self.seed}"
        budget = (
            f"d{self.max_degree}"
            if self.max_degree is not None
            else f"m{self.max_edges}"
            if self.max_edges is not None
            else f"r{self.budget_ratio:g}{'d' if self.ratio_edges == 'degree' else ''}"
            if self.budget_ratio is not None
            else "tco"
        )
        mode = f".relaxed{self.epsilon:g}" if self.mode == "relaxed" else ""
        return f"{self.instance}.{self.algorithm}.{budget}{mode}.s{self.seed}"


@dataclass(frozen=True)
class EngineChoice:
    """How a design's greedy runs (`conf/lab.yaml`, `design`): the regime (auto, memory, rounds),
    the in-memory regime's budget in bytes, and whether the design cross-checks its components
    with a connected-components run (GraphFrames where loaded) instead of trusting the engine's
    state checked against a BFS forest of its links."""

    regime: str = "auto"
    memory_budget: int = MEMORY_BUDGET
    cross_check: bool = False
    keep_round_rows: bool = True  # the rounds' partitions keep their rows between rounds


def design_run_id(request: DesignRequest, ingest_id: str, incremental: day_two.IncrementalChoice | None) -> str:
    """The default run id: the request's, and for an incremental design the instance version
    after it (each day's run has its own)."""
    return request.default_run_id() + ("" if incremental is None else f".{ingest_id}")


@dataclass(frozen=True)
class DesignPlan:
    """A checked `design` command: its requests (one per k of a sweep), where the greedy runs,
    and how it starts (None: fresh)."""

    requests: list[DesignRequest]
    engine: EngineChoice
    incremental: day_two.IncrementalChoice | None = None


def check_greedy_options(algorithm: str, **given: object) -> None:
    """Refuse the greedy engine's options (batch size, per-node cap, regime, memory budget,
    cross-check, an incremental start) on an algorithm that does not run it: one rule for the library and the CLI, which
    passes its flags by their option names (a value of None or False counts as not given)."""
    if algorithm in GREEDY_ALGORITHMS:
        return
    named = [f"--{name.replace('_', '-')}" for name, value in given.items() if value not in (None, False)]
    if named:
        raise InputError(f"{', '.join(named)}: only for the greedy algorithms ({', '.join(GREEDY_ALGORITHMS)})")


@dataclass(frozen=True)
class Budget:
    """The budget the algorithm runs with, after a ratio is turned into numbers (eq. 36)."""

    max_degree: int | None
    max_edges: int | None
    reference_run: str | None = None


def _params_json(request: DesignRequest) -> str:
    fields = {k: v for k, v in asdict(request).items() if k != "instance"}
    for name in ("short", "long", "epsilon", "k", "node_order"):  # other runs' params stay as they were
        if fields[name] is None:
            del fields[name]
    if fields["ratio_edges"] == "links":
        del fields["ratio_edges"]
    if fields["mode"] == "exact":
        del fields["mode"]
    return json.dumps(fields, sort_keys=True)


def _stored_reference(lakehouse: Lakehouse, instance: str, ingest_id: str) -> Row | None:
    """The earliest complete MinMaxODA run of this instance version, if any."""
    if not lakehouse.exists(S.OVERLAY_RUNS):
        return None
    found = (
        lakehouse.read(S.OVERLAY_RUNS)
        .filter(
            (F.col(S.INSTANCE) == instance)
            & (F.col(S.INGEST_ID) == ingest_id)
            & (F.col(S.ALGORITHM) == "minmaxoda")
            & (F.col(S.STATUS) == S.COMPLETE)
        )
        .orderBy(S.STARTED_AT)
        .limit(1)
        .collect()
    )
    return found[0] if found else None


def _reference_minmaxoda(spark, lakehouse: Lakehouse, request: DesignRequest, ingest_id: str, progress: bool) -> Row:
    """The complete MinMaxODA run of this instance version: reused if stored (any complete
    `minmaxoda` run, such as a workflow's reference step), else computed under the run id
    INSTANCE.minmaxoda.INGEST_ID, or awaited when another design is computing it there, so two
    budgeted designs started together share one reference. MinMaxODA is deterministic: the
    reference has the default seed whatever the budgeted design's seed is."""
    found = _stored_reference(lakehouse, request.instance, ingest_id)
    if found is not None:
        return found
    reference = DesignRequest(instance=request.instance, algorithm="minmaxoda")
    log.info("budget ratio: computing the MinMaxODA reference overlay of %s first", request.instance)
    return run_design(
        spark,
        lakehouse,
        reference,
        f"{request.instance}.minmaxoda.{ingest_id}",
        progress=progress,
        diameters=False,
        wait=True,
    )


def resolve_budget(
    spark, lakehouse: Lakehouse, request: DesignRequest, ingest_id: str, nodes: int, progress: bool
) -> Budget:
    if request.budget_ratio is None:
        max_edges = request.max_edges
        if request.algorithm in EDGE_BUDGETED and max_edges is None and request.max_degree is not None:
            max_edges = request.max_degree * nodes // 2  # ICDCS'16 section IX: m = d |V| / 2
        return Budget(max_degree=request.max_degree, max_edges=max_edges)
    reference = _reference_minmaxoda(spark, lakehouse, request, ingest_id, progress)
    # A complete design run has its metrics stored: read the max degree, do not recount it.
    metrics = lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == reference[S.RUN_ID]).first()
    max_degree = metrics[S.MAX_DEGREE]
    ratio = request.budget_ratio
    degree = math.floor(ratio * max_degree + 1e-9)
    budget = Budget(
        max_degree=degree,
        max_edges=(
            degree * nodes // 2
            if request.ratio_edges == "degree"
            else math.floor(ratio * int(reference[S.EDGES] or 0) + 1e-9)
        ),
        reference_run=reference[S.RUN_ID],
    )
    needed = budget.max_edges if request.algorithm in EDGE_BUDGETED else budget.max_degree
    if needed < 1:
        raise InputError(
            f"budget ratio {ratio} of MinMaxODA's overlay ({reference[S.EDGES]} edges, max degree "
            f"{max_degree}) leaves no edge; use a larger ratio"
        )
    return budget


def claim_run(
    lakehouse: Lakehouse,
    run_id: str,
    request: DesignRequest,
    ingest_id: str,
    params: str,
    wait: bool,
) -> ledger.Claim:
    """The run's row claimed for this process (`ledger.claim`): inserted, or the same request's
    unfinished run taken over, or its complete run found. With `wait`, a run another process is
    computing is awaited (`_await_owner`), and taken over only when that process looks dead."""
    record = {
        S.RUN_ID: run_id,
        S.INSTANCE: request.instance,
        S.INGEST_ID: ingest_id,
        S.ALGORITHM: request.algorithm,
        S.PARAMS: params,
        S.STARTED_AT: _now(),
    }
    return ledger.claim(
        lakehouse,
        ledger.OVERLAY,
        record,
        lambda existing: _check_same_run(existing, run_id, request, ingest_id, params),
        wait=(lambda existing: _await_owner(lakehouse, run_id, existing)) if wait else None,
        redo="or design it anew with --replace",
    )


def _check_same_run(existing: Row, run_id: str, request: DesignRequest, ingest_id: str, params: str) -> None:
    """A stored run of this id must be this request on this instance version."""
    same = existing[S.ALGORITHM] == request.algorithm and existing[S.INSTANCE] == request.instance
    stored, asked = json.loads(existing[S.PARAMS]), json.loads(params)
    if not same or any(stored.get(part) != asked.get(part) for part in ("request", "start")):
        raise InputError(
            f"run id '{run_id}' exists with other settings ({existing[S.ALGORITHM]} {existing[S.PARAMS]}): "
            f"choose another --run-id, or redo it with these settings with --replace "
            f"(`python -m pipelines runs show {run_id}` says what it is)"
        )
    if existing[S.INGEST_ID] != ingest_id:
        raise InputError(
            f"run '{run_id}' was made on an earlier version of instance '{request.instance}' (still readable: "
            f"`python -m pipelines instances --history {request.instance}`): redo it on the current version with "
            "--replace, or choose another --run-id"
        )


def _progress_mark(lakehouse: Lakehouse, run: Row) -> tuple:
    """What changes while a live process designs the run: its attempt, status, metrics, rounds."""
    rounds = (
        lakehouse.read(S.OVERLAY_ROUNDS).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).count()
        if lakehouse.exists(S.OVERLAY_ROUNDS)
        else 0
    )
    return run[S.ATTEMPT], run[S.STATUS], run[S.TCO_SUPPORT], rounds


def _await_owner(lakehouse: Lakehouse, run_id: str, run: Row) -> Row:
    """Wait while another process designs run `run_id`; its row once complete.

    The owner is presumed dead (a crash, kill -9) when it shows no progress for
    REFERENCE_STALE_SECONDS of this process's own clock (other machines' clocks never matter):
    then the row is returned as last seen and the caller takes the run over. Running the run's
    own design command takes it over at once. A run that fails meanwhile is an error naming it."""
    mark, since = _progress_mark(lakehouse, run), time.monotonic()
    log.info(
        "run %s is being designed by another process (attempt %s): waiting for it (it is taken over after "
        "%.0f s without progress; its own design command takes it over at once)",
        run_id,
        run[S.ATTEMPT],
        REFERENCE_STALE_SECONDS,
    )
    while True:
        time.sleep(REFERENCE_POLL_SECONDS)
        run = lakehouse.run_row(run_id)
        if run[S.STATUS] == S.COMPLETE:
            log.info("run %s is complete: using it", run_id)
            return run
        if run[S.STATUS] == S.FAILED:
            raise DesignError(
                f"run '{run_id}', which this design waited for, failed ({run[S.MESSAGE]}); "
                "fix the cause and run this design again: it resumes that run"
            )
        latest = _progress_mark(lakehouse, run)
        if latest != mark:
            mark, since = latest, time.monotonic()
            log.info("still waiting for run %s (%d rounds committed)", run_id, latest[-1])
        elif time.monotonic() - since >= REFERENCE_STALE_SECONDS:
            log.warning(
                "run %s made no progress for %.0f s: its process (attempt %s) is presumed dead; taking the run over",
                run_id,
                time.monotonic() - since,
                run[S.ATTEMPT],
            )
            return run


def _resume_point(lakehouse: Lakehouse, run_id: str) -> tuple[GreedyStart, DataFrame | None]:
    """The state after the run's last completed round; debris of a torn round is deleted."""
    last = None
    if lakehouse.exists(S.OVERLAY_ROUNDS):
        rows = (
            lakehouse.read(S.OVERLAY_ROUNDS)
            .filter(F.col(S.RUN_ID) == run_id)
            .orderBy(F.desc(S.ROUND))
            .limit(1)
            .collect()
        )
        last = rows[0] if rows else None
    done = last[S.ROUND] if last else 0
    lakehouse.delete_run_rows(S.OVERLAY_EDGES, run_id, F.col(S.ROUND) > done)
    if last is None:
        return GreedyStart(), None
    edges = lakehouse.read(S.OVERLAY_EDGES).filter(F.col(S.RUN_ID) == run_id).select(S.U, S.V)
    return GreedyStart(edges=edges, rounds_done=done, phase=last[S.NEXT_PHASE]), last


def _report_round(bar: Progress, r: GreedyRound) -> None:
    """A greedy round: one log line (or the edge bar moved on a terminal)."""
    bar.step(
        f"round {r.round} phase {r.phase}: +{len(r.edges)} edges ({r.edges_total} total), {r.candidates} candidates, "
        f"TcoSuppR {r.tco_support:.4f}, {r.seconds:.1f}s",
        advance=len(r.edges),
        round=r.round,
        phase=r.phase,
        tco=f"{r.tco_support:.3f}",
    )


COMMIT_SECONDS = 30.0


def _store_rounds(
    spark,
    lakehouse: Lakehouse,
    run_id: str,
    attempt: str,
    rounds: list[GreedyRound],
    owner_checked: bool = False,
) -> None:
    """Commit completed rounds: their links in one append, then their rows in another (the commit
    point). Each Delta commit costs about a second here, so rounds are committed in groups.
    `owner_checked`: the caller has just checked that the run is still this attempt's."""
    if not owner_checked:
        ledger.check_owner(lakehouse, run_id, attempt)
    rows = [(u, v, r.first_order + i, r.round, gain) for r in rounds for i, (u, v, gain) in enumerate(r.edges)]
    if rows:
        frame = local_frame(spark, rows, S.frame_schema(S.OVERLAY_EDGES, S.EDGE_COLUMNS))
        lakehouse.append_run_rows(S.OVERLAY_EDGES, run_id, frame)
    columns = [c for c in S.OVERLAY_ROUNDS.columns if c != S.RUN_ID]
    records = []
    for r in rounds:
        record = {
            S.ROUND: r.round,
            S.PHASE: r.phase,
            S.EDGES_ADDED: len(r.edges),
            S.CANDIDATES: r.candidates,
            S.REEVALUATIONS: r.reevaluations,
            S.EDGES: r.edges_total,
            S.TCC: r.tcc,
            S.TCO_SUPPORT: r.tco_support,
            S.SECONDS: r.seconds,
            S.NEXT_PHASE: r.next_phase,
            S.FINISHED: r.finished,
            S.COMPUTED_AT: _now(),
            S.SPARK_SECONDS: r.spark_seconds,
            S.CANDIDATE_ROWS: r.candidate_rows,
            S.OPEN_NODES: r.open_nodes,
            S.ROWS_READ: r.rows_read,
            S.REGIME: r.regime,
        }
        records.append(tuple(record[c] for c in columns))
    frame = local_frame(spark, records, S.frame_schema(S.OVERLAY_ROUNDS, tuple(columns)))
    lakehouse.append_run_rows(S.OVERLAY_ROUNDS, run_id, frame)


def _run_greedy(
    spark,
    lakehouse,
    run_id,
    attempt,
    subscriptions,
    budget: Budget,
    request,
    batch_size,
    progress,
    resuming: bool,
    commit_seconds: float,
    timings: dict[str, float],
    per_node: int | None = None,
    engine: EngineChoice = EngineChoice(),
    subscription_rows: int | None = None,
    carry: Carry | None = None,
    prefer: np.ndarray | None = None,
) -> GreedyOutcome:
    """Run (or resume) the greedy rounds. `timings` receives the seconds spent on setup, rounds
    and commits. `carry`: an incremental design's previous links, kept as far as they may be
    (`overlay.design.incremental.keep_links`) and stored as round 0 before its first round.
    `prefer`: a rebuild's previous links, which go first among equal gains.

    Completed rounds are committed together once `commit_seconds` have passed since the last
    commit (0: every round); the last group is left to the caller (`GreedyOutcome.unstored`),
    which stores it beside the metrics: a crash loses at most that much work."""
    clock = time.monotonic()
    start, last = _resume_point(lakehouse, run_id) if resuming else (GreedyStart(), None)
    kept = None
    kept_seconds = 0.0
    # Rounds finished by an earlier attempt: the regime is the one their rounds record.
    ran = last.asDict().get(S.REGIME) if last is not None else None
    if last is not None and last[S.FINISHED] and carry is None:
        return GreedyOutcome(last[S.TCC], None, None, ran, [])
    reading = time.monotonic()  # the engine's driver copy (bounded: `Subscriptions.collect`)
    collected = Subscriptions.collect(subscriptions, rows=subscription_rows)
    timings[S.SECONDS_READ] = time.monotonic() - reading
    if carry is not None:  # deterministic: a resumed run keeps the same links again
        rule = {
            "max_degree": budget.max_degree if request.algorithm == "gpm" else None,
            "max_edges": budget.max_edges if request.algorithm == "gpa" else None,
        }
        kept = keep_links(collected, carry.links, carry.departed, **rule)
        if carry.max_changes is None:  # under --max-changes every change is spent on new links
            kept = release_redundant(collected, kept, **rule)
    if last is not None and last[S.FINISHED]:
        return GreedyOutcome(last[S.TCC], None, None, ran, [], kept)
    edge_cap = budget.max_edges if request.algorithm == "gpa" else None
    if carry is not None:
        if carry.max_changes is not None:
            allowance = max(0, carry.max_changes - kept.unshared - kept.over_budget)
            edge_cap = min(len(kept.links) + allowance, edge_cap if edge_cap is not None else math.inf)
        if last is None:  # nothing of the greedy stored yet: (re)store the kept links as round 0
            store = time.monotonic()
            ledger.check_owner(lakehouse, run_id, attempt)
            lakehouse.delete_run_rows(S.OVERLAY_EDGES, run_id)
            rows = [(int(u), int(v), i + 1, 0, None) for i, (u, v) in enumerate(kept.links.tolist())]
            if rows:
                frame = local_frame(spark, rows, S.frame_schema(S.OVERLAY_EDGES, S.EDGE_COLUMNS))
                lakehouse.append_run_rows(S.OVERLAY_EDGES, run_id, frame)
            start = GreedyStart(links=kept.links)
            kept_seconds = time.monotonic() - store  # commits, not the engine's work
        log.info(
            "%s: kept %d of the previous run's links (%d with an end gone, %d sharing no topic now, %d over the "
            "budget, %d redundant where the budget binds)%s",
            run_id,
            len(kept.links),
            kept.departed,
            kept.unshared,
            kept.over_budget,
            kept.released,
            "" if carry.max_changes is None else f"; at most {edge_cap - len(kept.links)} links added (--max-changes)",
        )
    engine_subscriptions, size, offset = collected, None, 0
    if carry is not None and request.algorithm != "gm2":  # GM2's open topics are those not 2-connected
        if last is not None:  # resumed: its stored links, collected once for both uses
            start = dataclasses.replace(start, links=_stored_links(start.edges))
        at_start = start.links
        components = kept.components if last is None else None  # a resumed run has more links than kept
        engine_subscriptions, offset, start_classes = open_topics(collected, at_start, components)
        start = dataclasses.replace(start, classes=start_classes)
        size = InstanceSize.of(collected)
        log.info(
            "%s: %d of %d topics are open after the start's links: the greedy runs on their %d subscriptions",
            run_id,
            len(engine_subscriptions.topic_sizes),
            len(collected.topic_sizes),
            engine_subscriptions.rows,
        )
    regime = "rounds" if request.mode == "relaxed" and engine.regime == "auto" else engine.regime
    params = GreedyParams(
        request.algorithm,
        max_edges=edge_cap,
        max_degree=budget.max_degree if request.algorithm == "gpm" else None,
        batch_size=batch_size,
        per_node=per_node,
        mode=request.mode,
        epsilon=request.epsilon or DEFAULT_EPSILON,
        parallelism=task_slots(spark),
        regime=regime,
        memory_budget=engine.memory_budget,
        keep_rows=engine.keep_round_rows,
        lineage=lakehouse.lineage,
    )
    bar = Progress(run_id, params.max_edges, unit="edge", enabled=progress, logger=log)
    tcc = last[S.TCC] if last is not None else None
    pending: list[GreedyRound] = []
    committed = time.monotonic()
    rounds_seconds, commits_seconds = 0.0, kept_seconds
    if prefer is not None:
        start = dataclasses.replace(start, prefer=prefer)
    design = GreedyDesign(
        subscriptions,
        params,
        start=start,
        subscription_rows=subscription_rows,
        driver_subscriptions=engine_subscriptions,
        size=size,
        tcc_offset=offset,
    )
    greedy = design.engine()
    links = [np.asarray(design.initial_links, dtype=np.int64).reshape(-1, 2)]
    try:
        for r in greedy.rounds():
            links.append(np.asarray([(u, v) for u, v, _ in r.edges], dtype=np.int64).reshape(-1, 2))
            pending.append(r)
            _report_round(bar, r)
            rounds_seconds += r.seconds
            if not r.finished and time.monotonic() - committed >= commit_seconds:
                store = time.monotonic()
                _store_rounds(spark, lakehouse, run_id, attempt, pending)
                pending, committed = [], time.monotonic()
                commits_seconds += committed - store
            tcc = r.tcc
    finally:
        bar.close()
    timings.update(
        {
            S.SECONDS_SETUP: time.monotonic() - clock - rounds_seconds - commits_seconds,
            S.SECONDS_ROUNDS: rounds_seconds,
            S.SECONDS_COMMITS: commits_seconds,
        }
    )
    if tcc is None:
        tcc = greedy.tcc  # nothing left to add: the start is the overlay
    whole = collected if collected is not None else design.driver_subscriptions  # what the check reads
    return GreedyOutcome(tcc, whole, np.concatenate(links), greedy.regime, pending, kept)


def _stored_links(edges: DataFrame) -> np.ndarray:
    """A resumed run's links (|E| rows: a bounded driver step, as the engine's own copy)."""
    stored = edges.select(S.U, S.V).toArrow()
    return np.column_stack([stored.column(S.U).to_numpy(), stored.column(S.V).to_numpy()]).reshape(-1, 2)


@dataclass
class GreedyOutcome:
    """What a greedy run leaves for the check: the engine's TCC count, its driver copy of the
    subscriptions and every link of the run in order (None when nothing ran), the regime that ran,
    the rounds not stored yet (the last group), and what an incremental design kept."""

    tcc: int | None
    driver_subscriptions: Subscriptions | None
    links: np.ndarray | None
    regime: str | None
    unstored: list[GreedyRound]
    kept: KeptLinks | None = None


@dataclass(frozen=True)
class Carry:
    """An incremental design's start: the previous run's links in today's ids (both ends still
    there), how many had an end that left, and the cap on link changes."""

    links: np.ndarray
    departed: int
    max_changes: int | None = None


def _run_small_world(
    spark,
    lakehouse,
    run_id,
    attempt,
    subscriptions,
    nodes: int,
    request,
    batch_size,
    per_node=None,
    progress=True,
    engine: EngineChoice = EngineChoice(),
) -> None:
    """A small-world overlay (BeaConvey Table 2): ring, fingers and their links; recomputed from
    scratch on resume (deterministic). Property 1 is checked before anything is stored. Progress:
    the library's greedy rounds and phases, then the check and each table stored."""
    with Progress(run_id, enabled=progress, logger=log) as bar:
        overlay = small_world_overlay(
            subscriptions,
            nodes,
            request.short,
            request.long,
            seed=request.seed,
            batch_size=batch_size,
            on_step=bar.on_step,
            per_node=per_node,
            parallelism=task_slots(spark),
            regime=engine.regime,
            memory_budget=engine.memory_budget,
            lineage=lakehouse.lineage,
        )
        violation = property_1_violation(overlay.ring, overlay.fingers, nodes)
        if violation is not None:
            raise DesignError(f"run '{run_id}': the overlay breaks Property 1: {violation}")
        bar.step("Property 1 holds", check="Property 1")
        ledger.check_owner(lakehouse, run_id, attempt)
        lakehouse.write_run_tables(
            run_id,
            [(S.RING, overlay.ring), (S.FINGERS, overlay.fingers), (S.OVERLAY_EDGES, overlay.links)],
            on_stored=lambda table: bar.step(f"stored {table.name}", stored=table.name),
        )


def _run_baseline(spark, lakehouse, run_id, attempt, subscriptions, budget: Budget, request, backend) -> None:
    """Baselines are cheap and seeded: a resumed run recomputes them from scratch."""
    nodes = subscriptions.select(S.NODE_ID).distinct()
    if request.algorithm == "random-a":
        edges = random_a(nodes, budget.max_edges, request.seed, lineage=lakehouse.lineage)
    elif request.algorithm == "random-m":
        edges = random_m(nodes, budget.max_degree, request.seed, lineage=lakehouse.lineage)
    else:
        edges = spidercast_m(
            subscriptions,
            SpiderCastParams(
                max_degree=budget.max_degree,
                seed=request.seed,
                parallelism=task_slots(spark),
            ),
        )
    ledger.check_owner(lakehouse, run_id, attempt)
    lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, edges)


def _run_per_topic(spark, lakehouse, run_id, attempt, subscriptions, request) -> None:
    """HararyPT or CyclePT: one pass over the topics, seeded; recomputed from scratch on resume."""
    partitions = task_slots(spark)
    if request.algorithm == "harary-pt":
        edges = harary_pt(subscriptions, request.k, request.node_order, request.seed, partitions)
    else:
        edges = cycle_pt(subscriptions, request.seed, partitions)
    ledger.check_owner(lakehouse, run_id, attempt)
    lakehouse.write_run_rows(S.OVERLAY_EDGES, run_id, edges)


def run_design(
    spark: SparkSession,
    lakehouse: Lakehouse,
    request: DesignRequest,
    run_id: str | None = None,
    batch_size: int | None = None,
    backend: Backend = "auto",
    progress: bool = True,
    per_node: int | None = None,
    diameters: bool = True,
    commit_seconds: float = COMMIT_SECONDS,
    wait: bool = False,
    replace: bool = False,
    engine: EngineChoice = EngineChoice(),
    incremental: day_two.IncrementalChoice | None = None,
    changes_from: str | None = None,
    rebuild: str | None = None,
) -> Row:
    """Design (or finish designing) one overlay; returns the complete run row.

    `replace`: delete the run of this id first, whatever it is (`ledger.delete_run`: with the
    routing runs on it), and design it anew on the current instance version.

    `wait`: when another process is designing this run, wait for it instead of taking it over
    (the shared MinMaxODA reference; see `_await_owner`).

    `incremental`: start from an earlier run's links (`pipelines.incremental`; the default run
    id then ends in the instance version); `changes_from`: a fresh design's `overlay_changes`
    row against that earlier run. `rebuild` (internal): why an incremental design runs fresh."""
    request.check()
    check_greedy_options(
        request.algorithm,
        batch_size=batch_size,
        per_node=per_node,
        cross_check=engine.cross_check,
        incremental_from=incremental and incremental.from_run,
    )
    day_two.check_start(incremental, changes_from)
    instance = lakehouse.instance_row(request.instance)
    ingest_id = instance[S.INGEST_ID]
    run_id = run_id or design_run_id(request, ingest_id, incremental)
    check_run_id(run_id)
    if not instance[S.SUBSCRIPTIONS]:
        raise InputError(f"instance '{request.instance}' has no subscriptions: nothing to connect")
    request_params = json.loads(_params_json(request))
    previous, start, comparison = None, None, None
    if incremental is not None:
        previous = day_two.previous_run(
            lakehouse, incremental, request.instance, ingest_id, request.algorithm, request_params
        )
        if previous is None:
            log.info("design %s: no earlier run of this design to start from: a fresh design", run_id)
        else:
            start = _day_two_start(previous, incremental)
            if rebuild is None and incremental.rebuild_every is not None:
                rebuild = "scheduled" if start["days_since_fresh"] >= incremental.rebuild_every else None
    if changes_from is not None:
        comparison = complete_run(lakehouse, changes_from)
        day_two.check_previous(comparison, request.instance, ingest_id, flag="--changes-from")
    budget = resolve_budget(spark, lakehouse, request, ingest_id, instance[S.NODES], progress)
    if replace:
        with contextlib.suppress(UnknownRunError):  # nothing stored under the id: nothing to delete
            ledger.delete_run(lakehouse, run_id, ledger.OVERLAY.name)
            log.info("design %s: --replace: deleted the stored run first", run_id)
    described = {"request": request_params, "budget": asdict(budget)}
    if start is not None:
        described["start"] = start
    if rebuild is not None and start is not None:
        described["rebuilt"] = rebuild
    params = json.dumps(described, sort_keys=True)
    jobs, commits = jobs_started(spark), lakehouse.commits  # this attempt's, from its claim on
    claimed = claim_run(lakehouse, run_id, request, ingest_id, params, wait)
    if claimed.found is not None:  # a resumed (or complete) run goes on as it started
        rebuild = json.loads(claimed.found[S.PARAMS]).get("rebuilt")
    kind = S.REBUILT if rebuild else S.INCREMENTAL
    if claimed.done:
        log.info("run %s is complete already", run_id)
        if (previous or comparison) is not None and not _has_changes(lakehouse, run_id):
            _record_changes(spark, lakehouse, claimed.found, previous or comparison, kind if previous else S.FRESH)
        return claimed.found
    attempt = claimed.attempt
    clock = time.monotonic()
    timings: dict[str, float] = {}
    with ledger.failing(lakehouse, claimed, "design"):
        subscriptions = lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, request.instance, ingest_id).select(
            S.NODE_ID, S.TOPIC_ID
        )
        engine_links = regime = kept = None
        unstored: list[GreedyRound] = []
        carry = prefer = None
        if previous is not None and rebuild is None:
            links, departed = day_two.carried_links(lakehouse, previous, ingest_id)
            carry = Carry(links, departed, incremental.max_changes)
        elif previous is not None:  # a rebuild: a fresh greedy that keeps yesterday's links among equal gains
            prefer = day_two.carried_links(lakehouse, previous, ingest_id)[0]
        if request.algorithm in GREEDY_ALGORITHMS:
            outcome = _run_greedy(
                spark,
                lakehouse,
                run_id,
                attempt,
                subscriptions,
                budget,
                request,
                batch_size,
                progress,
                resuming=claimed.resumed,
                commit_seconds=commit_seconds,
                timings=timings,
                per_node=per_node,
                engine=engine,
                subscription_rows=instance[S.SUBSCRIPTIONS],
                carry=carry,
                prefer=prefer,
            )
            engine_tcc, driver_subscriptions = outcome.tcc, outcome.driver_subscriptions
            engine_links, regime, unstored, kept = outcome.links, outcome.regime, outcome.unstored, outcome.kept
        elif request.algorithm in registry.algorithms(registry.PER_TOPIC):
            engine_tcc = driver_subscriptions = None
            _run_per_topic(spark, lakehouse, run_id, attempt, subscriptions, request)
        elif request.algorithm == "swico":
            engine_tcc = driver_subscriptions = None
            _run_small_world(
                spark,
                lakehouse,
                run_id,
                attempt,
                subscriptions,
                instance[S.NODES],
                request,
                batch_size,
                per_node,
                progress,
                engine,
            )
        else:
            engine_tcc = driver_subscriptions = None
            _run_baseline(spark, lakehouse, run_id, attempt, subscriptions, budget, request, backend)
        run = ledger.check_owner(lakehouse, run_id, attempt)
        evaluating = time.monotonic()
        # The last rounds are stored while the metrics are computed and stored (each write is mostly
        # commit latency); what reads the stored links (diameters, a cross-check) waits for them.
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"rounds-{run_id[:24]}") as pool:
            last_rounds = (
                pool.submit(_store_rounds, spark, lakehouse, run_id, attempt, unstored, owner_checked=True)
                if unstored
                else None
            )
            if last_rounds is not None and (diameters or engine.cross_check or engine_links is None):
                last_rounds.result()
            metrics = evaluate_run(
                spark,
                lakehouse,
                run,
                backend,
                diameters=diameters,
                certified=not engine.cross_check,
                driver_subscriptions=driver_subscriptions,
                progress=progress,
                engine_links=None if engine.cross_check else engine_links,
                instance=instance,
            )
            if engine_tcc is not None and engine_tcc != metrics[S.TCC]:
                raise DesignError(
                    f"run '{run_id}': the greedy engine counted {engine_tcc} TCCs but the checked topic "
                    f"components count {metrics[S.TCC]}; the overlay is not trustworthy"
                )
            if last_rounds is not None:
                last_rounds.result()
        if request.k is not None:  # a kTCO design proves its k by the evaluator's check
            ktco = store_ktco(spark, lakehouse, run, request.k, progress=progress)
            if not ktco.is_ktco:
                raise DesignError(
                    f"run '{run_id}': {ktco.topics - ktco.k_connected_topics:,} of {ktco.topics:,} topics are not "
                    f"{request.k}-connected (topic_connectivity holds them); the overlay is not a {request.k}TCO"
                )
        timings[S.SECONDS_EVALUATE] = time.monotonic() - evaluating
        completed = {
            S.FINISHED_AT: _now(),
            S.SECONDS: time.monotonic() - clock,
            S.EDGES: metrics[S.EDGES],
            S.TCO_SUPPORT: metrics[S.TCO_SUPPORT],
            **timings,
            S.REGIME: regime,
            S.SPARK_JOBS: jobs_started(spark) - jobs,
            S.DELTA_COMMITS: lakehouse.commits + 1 - commits,
        }
        if (previous or comparison) is not None:  # before the commit point: a rerun writes it again
            _record_changes(
                spark,
                lakehouse,
                Row(**{**run.asDict(), **completed}),
                previous or comparison,
                kind if previous else S.FRESH,
                kept,
            )
        ledger.complete(lakehouse, claimed, **completed)
    # The row as the completing MERGE left it (that write checked it was still this attempt's).
    done = Row(**{**run.asDict(), S.STATUS: S.COMPLETE, S.MESSAGE: None, **completed})
    if carry is not None and incremental.rebuild_below is not None:
        anchor = _anchor_tco(lakehouse, start["anchor_run"])
        if anchor is not None and done[S.TCO_SUPPORT] < anchor - incremental.rebuild_below:
            log.warning(
                "design %s: TcoSuppR %.4f is more than %g below the last fresh design's (%s, %.4f): designing it "
                "fresh instead (--rebuild-below)",
                run_id,
                done[S.TCO_SUPPORT],
                incremental.rebuild_below,
                start["anchor_run"],
                anchor,
            )
            return run_design(
                spark,
                lakehouse,
                request,
                run_id,
                batch_size,
                backend,
                progress,
                per_node,
                diameters,
                commit_seconds,
                wait,
                replace=True,
                engine=engine,
                incremental=incremental,
                rebuild="below",
            )
    return done


def _day_two_start(previous: Row, choice: day_two.IncrementalChoice) -> dict:
    """What an incremental design records of its start (part of its identity, as its request)."""
    chain = day_two.chain_of(previous)
    return {
        "from_run": previous[S.RUN_ID],
        "anchor_run": chain["anchor_run"],
        "days_since_fresh": chain["days_since_fresh"] + 1,
        "max_changes": choice.max_changes,
        "rebuild_below": choice.rebuild_below,
        "rebuild_every": choice.rebuild_every,
    }


def _anchor_tco(lakehouse: Lakehouse, anchor_run: str) -> float | None:
    """The TcoSuppR of the chain's last fresh design (None when it is gone)."""
    try:
        return lakehouse.run_row(anchor_run)[S.TCO_SUPPORT]
    except UnknownRunError:
        log.warning("the last fresh design of this chain, %s, is gone: no --rebuild-below check", anchor_run)
        return None


def _has_changes(lakehouse: Lakehouse, run_id: str) -> bool:
    return lakehouse.exists(S.OVERLAY_CHANGES) and (
        lakehouse.read(S.OVERLAY_CHANGES).filter(F.col(S.RUN_ID) == run_id).limit(1).count() > 0
    )


def _record_changes(spark, lakehouse: Lakehouse, run: Row, previous: Row, kind: str, kept: KeptLinks | None = None):
    """The run's `overlay_changes` row (its max degree from its stored metrics)."""
    metrics = lakehouse.read(S.OVERLAY_METRICS).filter(F.col(S.RUN_ID) == run[S.RUN_ID]).first()
    max_degree = None if metrics is None else metrics[S.MAX_DEGREE]
    return day_two.store_changes(spark, lakehouse, run, previous, kind, max_degree, kept)
