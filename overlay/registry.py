"""What the lab can build, simulate and route, each named once.

The CLI's choices, the jobs' checks, the report's labels and the workflows all read these
tables: adding an algorithm, a protocol or an engine is one entry here plus its implementation.
"""

from __future__ import annotations

from dataclasses import dataclass

# Algorithm families: how a design is made and what it takes.
GREEDY = "greedy"  # the batched exact greedy (overlay.design): GM, GPA, MinMaxODA, GPM, GM2
BASELINE = "baseline"  # random and SpiderCastM baselines under a budget
PER_TOPIC = "per-topic"  # kTCO per-topic constructions (HararyPT, CyclePT)
SMALL_WORLD = "small-world"  # BeaConvey's ring and fingers

# Budgets an algorithm takes.
DEGREE = "degree"  # --max-degree d (or a ratio of MinMaxODA's)
EDGES = "edges"  # --max-edges m (or a ratio of MinMaxODA's)


@dataclass(frozen=True)
class Algorithm:
    """An overlay design algorithm of `design --algorithm`."""

    name: str
    label: str  # how reports and figures name it
    family: str
    paper: str
    budget: str | None = None  # DEGREE, EDGES, or None: builds a complete (k)TCO
    builds_k: int | None = None  # the connectivity a kTCO design builds; 0: any k >= 2 (--k)


ALGORITHMS: dict[str, Algorithm] = {
    a.name: a
    for a in (
        Algorithm("gm", "GM", GREEDY, "ICDCS'16"),
        Algorithm("gpa", "GPA", GREEDY, "ICDCS'16", budget=EDGES),
        Algorithm("minmaxoda", "MinMaxODA", GREEDY, "ICDCS'16"),
        Algorithm("gpm", "GPM", GREEDY, "ICDCS'16", budget=DEGREE),
        Algorithm("gm2", "GM2", GREEDY, "PODC'13", builds_k=2),
        Algorithm("random-a", "RandomA", BASELINE, "ICDCS'16", budget=EDGES),
        Algorithm("random-m", "RandomM", BASELINE, "ICDCS'16", budget=DEGREE),
        Algorithm("spidercast-m", "SpiderCastM", BASELINE, "ICDCS'16", budget=DEGREE),
        Algorithm("swico", "small world", SMALL_WORLD, "DEBS'18"),
        Algorithm("cycle-pt", "CyclePT", PER_TOPIC, "PODC'13", builds_k=2),
        Algorithm("harary-pt", "HararyPT", PER_TOPIC, "PODC'13", builds_k=0),
    )
}
IMPORTED = "imported"  # the algorithm of a run stored by `import-overlay`


def algorithms(family: str | None = None, budget: str | None = None) -> tuple[str, ...]:
    """The algorithms' names in registry order, optionally of one family or one budget kind."""
    return tuple(
        a.name
        for a in ALGORITHMS.values()
        if (family is None or a.family == family) and (budget is None or a.budget == budget)
    )


def algorithm_label(name: str) -> str:
    """A run's algorithm as reports print it (an unknown name, e.g. a protocol's, as itself)."""
    if name in ALGORITHMS:
        return ALGORITHMS[name].label
    return PROTOCOLS[name].label if name in PROTOCOLS else name


# The simulators of overlay gossip: Feverfew's cycle engine (its rule chooses the links),
# Rappel's rounds and gossipsub's heartbeats (on the cycle engine).
FEVERFEW_CYCLES = "feverfew-cycles"
RAPPEL_ROUNDS = "rappel-rounds"
GOSSIPSUB_HEARTBEATS = "gossipsub-heartbeats"

# Protocol kinds: what a protocol's run is.
OVERLAY_GOSSIP = "overlay-gossip"  # `simulate`: builds an overlay run by gossip (or full knowledge)
ROUTING = "routing"  # `route`: delivers publications on a small-world overlay
DISSEMINATION = "dissemination"  # `disseminate`: gossips publications on any overlay


@dataclass(frozen=True)
class Protocol:
    """A protocol: a `simulate` subcommand, a `route --protocol` or a dissemination."""

    name: str
    label: str
    kind: str
    paper: str
    summary: str
    cycles: bool = False  # simulated in gossip cycles (takes --cycles and the cycle settings)
    simulator: str | None = None  # overlay gossip: the job that simulates it (FEVERFEW_CYCLES, ...)


PROTOCOLS: dict[str, Protocol] = {
    p.name: p
    for p in (
        Protocol(
            "feverfew",
            "Feverfew",
            OVERLAY_GOSSIP,
            "SCIS'14",
            "Feverfew's gossip: one synchronous cycle per Spark job",
            cycles=True,
            simulator=FEVERFEW_CYCLES,
        ),
        Protocol(
            "spidercast-gossip",
            "SpiderCast (gossip)",
            OVERLAY_GOSSIP,
            "SCIS'14",
            "SpiderCast's coverage rule on Feverfew's gossip cycles",
            cycles=True,
            simulator=FEVERFEW_CYCLES,
        ),
        Protocol(
            "global-feverfew",
            "Global Feverfew",
            OVERLAY_GOSSIP,
            "SCIS'14",
            "Feverfew's choice of links with full knowledge (no gossip cycles)",
            simulator=FEVERFEW_CYCLES,
        ),
        Protocol(
            "spidercast-global",
            "SpiderCast (global)",
            OVERLAY_GOSSIP,
            "SCIS'14",
            "SpiderCast's choice of links with full knowledge (no gossip cycles)",
            simulator=FEVERFEW_CYCLES,
        ),
        Protocol(
            "rappel",
            "Rappel",
            OVERLAY_GOSSIP,
            "ComNet'09",
            "Rappel's friendship overlay and per-feed trees in 30 s rounds",
            simulator=RAPPEL_ROUNDS,
        ),
        Protocol(
            "gossipsub",
            "gossipsub",
            OVERLAY_GOSSIP,
            "libp2p v1.1",
            "libp2p's gossipsub v1.1: per-topic meshes kept by heartbeats (GRAFT, PRUNE, backoff)",
            simulator=GOSSIPSUB_HEARTBEATS,
        ),
        Protocol("po", "Po", ROUTING, "DEBS'18", "Protocol 5: the nearest subscriber and subscribed fingers"),
        Protocol("pa1", "Pa1", ROUTING, "DEBS'18", "Po plus a pivot in the distant range (a finger, else its start)"),
        Protocol("pie", "Pie", ROUTING, "DEBS'18", "Po plus a pivot finger in the distant range"),
        Protocol(
            "scribe",
            "Scribe",
            ROUTING,
            "DEBS'18",
            "a tree per topic of the routes from each subscriber to its rendezvous node",
        ),
        Protocol(
            "iscribe",
            "iScribe",
            ROUTING,
            "DEBS'18",
            "a tree per topic of the routes from its rendezvous node to each subscriber",
        ),
        Protocol("push-pull", "push-pull", DISSEMINATION, "SCIS'14", "push-pull gossip on a run's topic subgraphs"),
        Protocol(
            "flood",
            "flood",
            DISSEMINATION,
            "-",
            "each subscriber forwards its first copy to its topic-subgraph neighbours, in latency-model time",
        ),
        Protocol(
            "gossipsub-spread",
            "gossipsub (push + gossip)",
            DISSEMINATION,
            "libp2p v1.1",
            "gossipsub's eager push along its meshes and lazy IHAVE/IWANT gossip at the heartbeats",
        ),
        Protocol(
            "push-pull-live",
            "push-pull (live)",
            DISSEMINATION,
            "SCIS'14",
            "push-pull while Feverfew's gossip goes on and heals the overlay",
        ),
    )
}


def protocols(kind: str, cycles: bool | None = None, simulator: str | None = None) -> tuple[str, ...]:
    """The protocols of one kind in registry order, optionally only those with (or without)
    gossip cycles, or of one simulator."""
    return tuple(
        p.name
        for p in PROTOCOLS.values()
        if p.kind == kind and (cycles is None or p.cycles == cycles) and (simulator is None or p.simulator == simulator)
    )


@dataclass(frozen=True)
class Engine:
    """One way of running a kind of computation; every engine of a kind gives the same result."""

    name: str
    computation: str
    summary: str
    default: bool = False


ROUTING_ENGINE = "routing"
GREEDY_REGIME = "greedy regime"
COMPONENTS = "connected components"

ENGINES: tuple[Engine, ...] = (
    Engine(
        "memory",
        ROUTING_ENGINE,
        "the routing tables, publications and arrivals in this process: compiled routing, outcome with numpy",
        default=True,
    ),
    Engine(
        "compiled",
        ROUTING_ENGINE,
        "each Spark task routes its publications to the end, the routing tables broadcast from the driver",
    ),
    Engine(
        "supersteps",
        ROUTING_ENGINE,
        "Pregel-style: one DataFrame superstep a hop for all publications (the same hop rules as Arrow UDFs), "
        "nothing on the driver",
    ),
    Engine(
        "auto",
        GREEDY_REGIME,
        "compiled in memory when the candidate state fits design.memory_budget, else batched Spark rounds",
        default=True,
    ),
    Engine("memory", GREEDY_REGIME, "the compiled lazy greedy in one task, its state in memory"),
    Engine("rounds", GREEDY_REGIME, "batched Spark rounds that pick maximal-matching edge batches"),
    Engine("auto", COMPONENTS, "GraphFrames when its jar is loaded, else the DataFrame form", default=True),
    Engine("graphframes", COMPONENTS, "GraphFrames' connected components"),
    Engine("dataframe", COMPONENTS, "the lab's DataFrame connected components (no jar)"),
)


def engines(computation: str) -> tuple[str, ...]:
    """The engines of one computation, the default first."""
    chosen = [e for e in ENGINES if e.computation == computation]
    return tuple(e.name for e in sorted(chosen, key=lambda e: not e.default))


def default_engine(computation: str) -> str:
    return engines(computation)[0]
