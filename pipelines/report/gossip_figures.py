"""The gossip figures (Feverfew Figs. 5, 8 and 9), drawn like the rest of the report
(`pipelines.report.figures`): a small pandas frame in, a `Figure` out, None when empty."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure
from matplotlib.ticker import PercentFormatter

from overlay import schema as S
from pipelines.report.figures import LINESTYLES, MARKERS, _grid
from pipelines.report.gossip import BUCKET, FAMILY, MODE, NAMES, PAPER_DEGREE, PROTOCOLS, SHARE, bucket_names

MAX_PANELS = 12


def _per_cycle(ax, title: str, ylabel: str) -> None:
    """A panel of shares against the cycle."""
    ax.set_title(title, fontsize="small")
    ax.set_xlabel("cycle")
    ax.set_ylabel(ylabel)
    ax.yaxis.set_major_formatter(PercentFormatter(1.0))
    ax.set_ylim(0, 1.05)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="x-small")


def coverage(rows: pd.DataFrame, labels: dict[str, str]) -> Figure | None:
    """Fig. 5: the ln-covered share of each topic-size bucket against the cycle, one panel per run."""
    if rows.empty:
        return None
    runs = sorted(rows[S.RUN_ID].unique())[:MAX_PANELS]
    figure, axes = _grid(len(runs), width=5.5)
    for ax, run_id in zip(axes, runs):
        mine = rows[rows[S.RUN_ID] == run_id]
        for i, bucket in enumerate(bucket_names()):
            line = mine[mine[BUCKET] == bucket].sort_values(S.CYCLE)
            if len(line):
                ax.plot(
                    line[S.CYCLE],
                    line[SHARE],
                    marker=MARKERS[i % len(MARKERS)],
                    markersize=3,
                    linestyle=LINESTYLES[i % len(LINESTYLES)],
                    label=f"n_t {bucket}",
                )
        _per_cycle(ax, labels.get(run_id, run_id), "subscriptions ln-covered")
    figure.suptitle("ln-covered subscriptions by topic size over cycles (Feverfew Fig. 5)")
    return figure


def degrees(rows: pd.DataFrame) -> Figure | None:
    """Fig. 8: the paper's average node degree (the neighbours a node keeps: |LV(p)| for Feverfew,
    every neighbour for SpiderCast) against |V| per protocol, one panel per graph."""
    if rows.empty:
        return None
    families = sorted(rows[FAMILY].unique())[:MAX_PANELS]
    figure, axes = _grid(len(families), width=6.0)
    for ax, family in zip(axes, families):
        mine = rows[rows[FAMILY] == family]
        for i, protocol in enumerate(PROTOCOLS):
            line = mine[mine[S.ALGORITHM] == protocol].sort_values(S.NODES)
            if len(line):
                ax.plot(
                    line[S.NODES],
                    line[PAPER_DEGREE],
                    marker=MARKERS[i],
                    linestyle=LINESTYLES[i % len(LINESTYLES)],
                    label=NAMES[protocol],
                )
        ax.set_title(family, fontsize="small")
        ax.set_xlabel("|V| (nodes)")
        ax.set_ylabel("neighbours kept per node")
        ax.grid(alpha=0.3)
        ax.legend(fontsize="small")
    figure.suptitle("Average degree of gossip-built overlays against |V| (Feverfew Fig. 8)")
    return figure


def completion(rows: pd.DataFrame, mode: str) -> Figure | None:
    """Fig. 9: push-pull completion against the cycle, one line per publication (its topic size),
    one panel per dissemination of `mode` (`gossip.MODES`)."""
    rows = rows[rows[MODE] == mode]
    if rows.empty:
        return None
    runs = sorted(rows[S.ROUTING_RUN_ID].unique())[:MAX_PANELS]
    figure, axes = _grid(len(runs), width=5.5)
    for ax, routing_run in zip(axes, runs):
        mine = rows[rows[S.ROUTING_RUN_ID] == routing_run]
        for i, (_pub, line) in enumerate(mine.groupby(S.PUB_ID)):
            line = line.sort_values(S.CYCLE)
            ax.plot(
                line[S.CYCLE],
                line[S.COMPLETION],
                marker=MARKERS[i % len(MARKERS)],
                markersize=3,
                linestyle=LINESTYLES[i % len(LINESTYLES)],
                label=f"n_t = {int(line[S.SUBSCRIBERS].iloc[0])}",
            )
        _per_cycle(ax, f"{mine[S.RUN_ID].iloc[0]}: {mine['failures'].iloc[0]}", "completion (informed / alive)")
    figure.suptitle(f"Push-pull completion under failures, {mode} (Feverfew Fig. 9)")
    return figure
