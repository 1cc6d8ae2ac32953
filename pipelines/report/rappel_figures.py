"""The Rappel figures (ComNet'09 Figs. 1, 7, 9a, 10b, 11a), drawn like the rest of the report
(`pipelines.report.figures`): a small pandas frame in, a `Figure` out, None when empty."""

from __future__ import annotations

import json

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from overlay import schema as S
from pipelines.rappel import ROUNDS_PER_HOUR
from pipelines.report.figures import LINESTYLES, MARKERS, _grid
from pipelines.report.rappel import BOUND_COLUMNS, MANY_FEEDS, PAPER_COVERAGE

MAX_PANELS = 9


def _coverage_lines(lines, x: str, paper: float, paper_label: str, xlabel: str, ylabel: str, title: str):
    """One panel of full-coverage shares: `lines` (label, frame with `x` and full_coverage_share),
    the paper's level as a dotted line. Returns the figure and its axes (for the ticks)."""
    figure, (ax,) = _grid(1, width=6.0)
    for i, (label, line) in enumerate(lines):
        line = line.sort_values(x)
        ax.plot(
            line[x],
            line["full_coverage_share"],
            marker=MARKERS[i % len(MARKERS)],
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            label=label,
        )
    ax.axhline(paper, color="grey", linewidth=0.8, linestyle=":", label=paper_label)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")
    figure.suptitle(title)
    return figure, ax


def friend_bound(rows: pd.DataFrame) -> Figure | None:
    """Fig. 1: the share of sampled nodes whose j greedy best friends cover all their feeds."""
    if rows.empty:
        return None
    lines = [
        (f"{key[0]} (>= {key[2]} feeds, seed {key[4]})", line) for key, line in rows.groupby(list(BOUND_COLUMNS[:5]))
    ]
    figure, _ = _coverage_lines(
        lines,
        "friends",
        0.95,
        "paper: over 95% at k = 6",
        "greedy best friends k",
        "nodes with every feed covered",
        "Coverage by the greedy best friends (ComNet'09 Fig. 1)",
    )
    return figure


def coverage(rows: pd.DataFrame) -> Figure | None:
    """Fig. 9a in summary: per run, the share of nodes whose every feed a friend shares, by the
    number of feeds they subscribe to (the last point: that many or more)."""
    if rows.empty:
        return None
    figure, ax = _coverage_lines(
        list(rows.groupby(S.RUN_ID)),
        S.FEEDS,
        PAPER_COVERAGE,
        f"paper: {PAPER_COVERAGE:.0%} of all nodes",
        "feeds subscribed",
        "nodes with every feed covered by a friend",
        "Friend coverage by subscriptions (ComNet'09 Fig. 9a)",
    )
    ticks = sorted(rows[S.FEEDS].unique())
    ax.set_xticks(ticks, [f"{t}+" if t == MANY_FEEDS else str(t) for t in ticks])
    return figure


def latency(rounds: pd.DataFrame) -> Figure | None:
    """Fig. 7: the median and 95th-percentile latency of each round against time, one panel per
    run (those with a failure first), the failure and return marked."""
    if rounds.empty:
        return None
    failing = [
        r for r, p in rounds.groupby(S.RUN_ID)[S.PARAMS].first().items() if json.loads(p)["request"].get("failure")
    ]
    runs = (failing + sorted(set(rounds[S.RUN_ID]) - set(failing)))[:MAX_PANELS]
    figure, axes = _grid(len(runs), width=5.5)
    for ax, run_id in zip(axes, runs):
        mine = rounds[rounds[S.RUN_ID] == run_id].sort_values(S.ROUND)
        hours = mine[S.ROUND] / ROUNDS_PER_HOUR
        ax.plot(hours, mine[S.LATENCY_MEDIAN], label="median")
        ax.plot(hours, mine[S.LATENCY_P95], linestyle="--", label="95th percentile")
        failure = json.loads(mine[S.PARAMS].iloc[0])["request"].get("failure")
        if failure:
            ax.axvline(failure[1], color="red", linewidth=0.8, label=f"{failure[0]:.0%} fail")
            if failure[2] is not None:
                ax.axvline(failure[2], color="green", linewidth=0.8, label="they return")
        ax.set_title(run_id, fontsize="small")
        ax.set_yscale("log")  # the spikes of pulled updates after a failure are seconds, the rest ~100 ms
        ax.set_xlabel("simulated hours")
        ax.set_ylabel("update latency (ms)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="x-small")
    figure.suptitle("Update latency over time (ComNet'09 Fig. 7)")
    return figure


def traffic(rows: pd.DataFrame) -> Figure | None:
    """Fig. 10b: mean data messages a node sends against its subscriptions, Rappel and Scribe."""
    if rows.empty:
        return None
    systems = sorted(rows["system"].unique())
    figure, axes = _grid(len(systems), width=5.5)
    for ax, system in zip(axes, systems):
        for i, (run, line) in enumerate(rows[rows["system"] == system].groupby("run")):
            line = line.sort_values(S.FEEDS)
            ax.plot(
                line[S.FEEDS],
                line["data_sent_mean"],
                marker=MARKERS[i % len(MARKERS)],
                markersize=3,
                linestyle=LINESTYLES[i % len(LINESTYLES)],
                label=run,
            )
        ax.set_title(system, fontsize="small")
        ax.set_xlabel("subscriptions of the node")
        ax.set_ylabel("data messages sent (mean)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="xx-small")
    figure.suptitle("Data traffic against subscriptions (ComNet'09 Fig. 10b)")
    return figure


def rejoins(rows: pd.DataFrame) -> Figure | None:
    """Fig. 11a: rejoin requests a node receives per hour against its depth in the tree."""
    rows = rows[rows[S.DEPTH] >= 1] if not rows.empty else rows
    if rows.empty:
        return None
    figure, (ax,) = _grid(1, width=6.0)
    for i, (run, line) in enumerate(rows.groupby(S.RUN_ID)):
        ax.plot(
            line[S.DEPTH],
            line["rejoins_per_hour"],
            marker=MARKERS[i % len(MARKERS)],
            linestyle=LINESTYLES[i % len(LINESTYLES)],
            label=run,
        )
    ax.set_yscale("symlog", linthresh=0.1)  # zero stays drawable
    ax.set_xlabel("depth in the feed's tree (publisher 0)")
    ax.set_ylabel("rejoin requests received per hour")
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")
    figure.suptitle("Rejoin load by depth (ComNet'09 Fig. 11a)")
    return figure
