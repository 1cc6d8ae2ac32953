"""The report's markdown summary, and the same tables for the terminal."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from overlay import schema as S
from overlay.summaries import BUDGET, RUN_LABEL
from pipelines import compare
from pipelines.report import beaconvey, day_two, gossip, icdcs16, ktco, meshes, rappel

if TYPE_CHECKING:
    from pipelines.report import ReportData

DESIGN_COLUMNS = (
    S.INSTANCE,
    S.RUN_ID,
    S.ALGORITHM,
    BUDGET,
    S.EDGES,
    S.AVG_DEGREE,
    S.MAX_DEGREE,
    S.TCO_SUPPORT,
    S.DIAMETER_AVG,
    S.DIAMETER_METHOD,
)
CONSOLE_DESIGN_COLUMNS = tuple(c for c in DESIGN_COLUMNS if c != S.DIAMETER_METHOD)
ROUTING_COLUMNS = (
    S.INSTANCE,
    RUN_LABEL,
    S.PUBLICATIONS,
    S.ROUTING_OVERHEAD,
    S.AVG_PATH_LENGTH,
    S.MAX_PATH_LENGTH,
    S.DELIVERY_RATIO,
    S.OVERHEAD_RATIO,
    S.PATH_RATIO,
)
INSTANCE_COLUMNS = (S.INSTANCE, S.SOURCE, S.NODES, S.TOPICS, S.SUBSCRIPTIONS)


def _plain(value: object) -> object:
    """numpy scalars and NaN as plain Python values (None for missing)."""
    if value is None:
        return None
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def records(frame, columns: Sequence[str]) -> list[dict]:
    return [{c: _plain(row[c]) for c in columns} for _, row in frame.iterrows()]


def diameter_kind(method: str | None) -> str | None:
    """The stored method text, shortened for a table cell."""
    if method is None:
        return None
    if "lower bound" in method:
        return "exact, sampled for large topics"
    return "exact" if method.startswith("exact") else method


def design_rows(data: ReportData) -> list[dict]:
    quality = data.quality.sort_values([S.INSTANCE, S.ALGORITHM, S.RUN_ID])
    rows = records(quality, DESIGN_COLUMNS)
    for row in rows:
        row[S.DIAMETER_METHOD] = diameter_kind(row[S.DIAMETER_METHOD])
    return rows


def routing_rows(data: ReportData) -> list[dict]:
    return records(data.routing.sort_values([S.INSTANCE, RUN_LABEL]), ROUTING_COLUMNS)


def _cell(value: object) -> str:
    if value is None:
        return "—"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e5 else f"{value:,.0f}"
    if isinstance(value, int):
        return f"{value:,}"
    return str(value).replace("|", "\\|")


def table(rows: list[dict], columns: Sequence[str]) -> str:
    if not rows:
        return "_none_"
    numeric = [all(isinstance(r[c], (int, float)) or r[c] is None for r in rows) for c in columns]
    lines = [
        "| " + " | ".join(columns) + " |",
        "|" + "|".join("---:" if n else "---" for n in numeric) + "|",
    ]
    lines += ["| " + " | ".join(_cell(r[c]) for c in columns) + " |" for r in rows]
    return "\n".join(lines)


def render(data: ReportData, lakehouse: str) -> str:
    now = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [
        "# Overlay lab report",
        (
            f"Generated {now} from the lakehouse `{lakehouse}`. Only current runs are shown: complete, "
            "and built on the instance version stored now."
        ),
        "## Instances",
        table(records(data.instances, INSTANCE_COLUMNS), INSTANCE_COLUMNS),
        "## Overlay designs",
        (
            "TcoSuppR is 1 for a topic-connected overlay. `diameter_method`: the average topic diameter "
            "is exact, or exact for small topics and a sampled lower bound for large ones (the full "
            "text is in `overlay_metrics`); `skipped`: not computed (`evaluate` adds it)."
        ),
        table(design_rows(data), DESIGN_COLUMNS),
        "## Routing",
        (
            "Routing overhead counts messages received by nodes not subscribed to the topic. Ratios are "
            "against Scribe(-) (Scribe on a random ring with data-oblivious fingers) on the same "
            "instance and workload; `—` when there is no such run."
        ),
        table(routing_rows(data), ROUTING_COLUMNS),
    ]
    if not data.icdcs16.empty:
        parts += icdcs16_section(data.icdcs16)
    if not data.sweeps.empty:
        parts += [
            "## Fault-tolerant overlays (kTCO)",
            (
                "Per synthetic sweep and |V|: average degree of GM (a TCO), GM2, CyclePT and HararyPT k = 2 "
                "(2TCOs), the ratios, the largest stored k at which HararyPT has no more links than "
                "CyclePT, and the topic diameters of GM and GM2 (blank when not computed). " + ktco.PAPER
            ),
            table(records(data.sweeps, ktco.SWEEP_COLUMNS), ktco.SWEEP_COLUMNS),
            "\n".join(f"- {line}" for line in ktco.sweep_checks(data.sweeps)),
        ]
    if not data.resilience.empty:
        parts += [
            "## Failures",
            (
                "`resilience` rows per run, failure model and share removed: means over trials and the worst "
                "trial. TcoSuppR is on the instance restricted to the surviving nodes; the connected share "
                "counts topics with at least two surviving subscribers."
            ),
            table(records(data.resilience, ktco.RESILIENCE_COLUMNS), ktco.RESILIENCE_COLUMNS),
        ]
    if not data.gossip.empty:
        parts += gossip_section(data.gossip)
    if not data.rappel.empty:
        parts += rappel_section(data.rappel)
    if not data.beaconvey.empty:
        parts += beaconvey_section(data.beaconvey)
    if not data.day_two.empty:
        parts += [
            "## Day two: incremental against fresh designs",
            (
                "Per chain of daily designs (instance and algorithm), from `overlay_changes`: the links changed a "
                "day (added plus removed, against the same previous overlay), the mean TcoSuppR, the worst day's "
                "gap (fresh minus incremental), and the engine seconds, incremental against fresh."
            ),
            table(records(day_two.summary(data.day_two), day_two.COLUMNS), day_two.COLUMNS),
        ]
    if not data.meshes.empty:
        parts += [
            "## gossipsub beside the papers' overlays",
            (
                "Per instance and system, means over the seeds of `compare-meshes` (`mesh_comparison`): links per "
                "node and max degree, TcoSuppR, duplicates and irrelevant copies per delivery and path length with "
                "every node up, and the delivery ratio with 0%, 5% and 20% of the nodes down (Pie's routing "
                "simulates no failures)."
            ),
            table(records(meshes.summary(data.meshes), meshes.COLUMNS), meshes.COLUMNS),
        ]
    for comparison_id, rows in data.comparisons.groupby(S.COMPARISON_ID):
        parts += [f"## BeaConvey comparison `{comparison_id}`", compare.markdown(records(rows, rows.columns))]
    if data.files:
        parts.append("## Figures")
        for name, caption in data.files.items():
            parts += [f"### {caption}", f"![{caption}]({name})"]
    else:
        parts.append("_No figures: the lakehouse has no complete design or routing runs yet._")
    return "\n\n".join(parts) + "\n"


def icdcs16_section(data: icdcs16.Icdcs16Data) -> list[str]:
    """ICDCS'16's checks, Table I beside the paper's, and each sweep's points over seeds."""
    parts = [
        "## Partial TCOs under budgets (ICDCS'16)",
        (
            "TcoSuppR per workload, algorithm and budget: the mean over seeds (BFS seeds of a sample, instance "
            "seeds of a synthetic workload, the same number seeding the random baselines), the lowest and highest "
            "seed, the standard deviation and the seeds. The paper's numbers are from its text and Table I."
        ),
        "\n".join(f"- {line}" for line in data.checks()),
    ]
    if not data.table.empty:
        columns, rows = icdcs16.table1_rows(data.table)
        parts += [
            "### Table I (budget ratio 0.2)",
            "Each cell: mean [lowest-highest] (seeds) / the paper's value for the column the sample reproduces.",
            table(rows, columns),
        ]
    for spec in icdcs16.SWEEPS:
        points = data.sweeps[spec.figure]
        if not points.empty:
            parts += [
                f"### {spec.figure}: {spec.title}",
                table(records(points, icdcs16.POINT_COLUMNS), icdcs16.POINT_COLUMNS),
            ]
    return parts


def beaconvey_section(data: beaconvey.BeaConveyData) -> list[str]:
    """BeaConvey's checks, Tables 3-5 per workload over seeds, and the points of Figs. 4-7."""
    parts = [
        "## Small-world overlays and routing over seeds (BeaConvey)",
        (
            "Ratios against Scribe(-) on the same workload: the mean over the seeds' comparisons, with the lowest "
            "and highest seed in brackets; the paper's ratio beside (Tables 3-5 have FB1K, FB10K, TW1K, TW10K)."
        ),
        "\n".join(f"- {line}" for line in beaconvey.checks(data)),
    ]
    for workload, rows in beaconvey.table_rows(data.tables).items():
        parts += [f"### Tables 3-5: {workload}", table(rows, list(rows[0]))]
    if not data.sweeps.empty:
        parts += [
            "### Figs. 4-7: points",
            table(records(data.sweeps, beaconvey.SWEEP_COLUMNS), beaconvey.SWEEP_COLUMNS),
        ]
    return parts


def gossip_section(data: gossip.GossipData) -> list[str]:
    """Feverfew's figures and tables with the paper's numbers, and whether each claim holds."""
    parts = [
        "## Gossip-built overlays (Feverfew)",
        "\n".join(f"- {line}" for line in gossip.checks(data)),
        "### Average degree (Fig. 8)",
        (
            "`paper_degree` is the paper's average node degree, the neighbours a node keeps: |LV(p)| for "
            "Feverfew (`view_avg`, the mean number it chose), every neighbour for SpiderCast (whose links are "
            "connections both ends keep: `avg_degree`). `choices_per_subscription` divides the choices by the "
            "subscriptions; `avg_degree` is 2|E| / |V| of the undirected overlay the choices make. "
            + gossip.PAPER_FIG8[0].upper()
            + gossip.PAPER_FIG8[1:]
            + " (paper)."
        ),
        table(records(data.degrees, gossip.DEGREE_COLUMNS), gossip.DEGREE_COLUMNS),
        "### First matching times (Table 1)",
        (
            "The paper's N = 10^4 row beside Thm 2 with m = n_t - 1 (`formula`); then, per run and topic-size "
            "bucket, the BubbleSample diffusions started, the share that matched, and the mean cycles from "
            "start to first match, beside Thm 2 at the bucket's median size and the run's N."
        ),
        table(gossip.table1_rows(), ("n_t", "paper_theory", "formula", "paper_practical")),
        table(records(data.matching, gossip.MATCH_COLUMNS), gossip.MATCH_COLUMNS),
        "### Sampled topics (Table 3)",
        "The topic nearest each size the paper samples, on each run measured, with the paper's figures beside.",
        table(records(data.structure, gossip.STRUCTURE_COLUMNS), gossip.STRUCTURE_COLUMNS),
        "### Push-pull under failures (Fig. 9)",
        table(records(data.summary, gossip.COMPLETION_COLUMNS), gossip.COMPLETION_COLUMNS),
    ]
    return parts


def rappel_section(data: rappel.RappelData) -> list[str]:
    """Rappel's checks with the paper's numbers, its runs, Fig. 1's bound and the Scribe runs."""
    parts = [
        "## Friendship overlays and per-feed trees (Rappel)",
        "\n".join(f"- {line}" for line in rappel.checks(data)),
        "### Runs",
        (
            "Per run: the share of subscribers whose every feed a friend shares and the share of nodes whose "
            "neighbour overlap is above 1 (at the end); the medians over rounds of each round's median and 95th "
            "percentile latency (ms) and median stretch; updates that reached a non-subscriber; each node's "
            "control messages per second online, median and 95th percentile over nodes."
        ),
        table(records(data.runs, rappel.RUN_COLUMNS), rappel.RUN_COLUMNS),
    ]
    if not data.coverage.empty:
        parts += [
            "### Friend coverage by subscriptions (Fig. 9a)",
            f"Per run and number of feeds subscribed ({rappel.MANY_FEEDS}: that many or more): the nodes, the share "
            "whose every feed a friend shares, and the mean number of feeds covered.",
            table(records(data.coverage, rappel.COVERAGE_COLUMNS), rappel.COVERAGE_COLUMNS),
        ]
    if not data.bound.empty:
        parts += [
            "### Greedy best friends (Fig. 1)",
            table(records(data.bound, rappel.BOUND_COLUMNS), rappel.BOUND_COLUMNS),
        ]
    if not data.scribe.empty:
        parts += [
            "### Scribe on Rappel's feeds (Fig. 10)",
            "Routing runs made with `route --feeds`: trees rooted at the publishers, latencies from the same coordinates.",
            table(records(data.scribe, rappel.SCRIBE_COLUMNS), rappel.SCRIBE_COLUMNS),
        ]
    return parts
