"""gossipsub beside the papers' overlays in the report (`compare-meshes`, docs/readings/gossipsub.md):
per instance and system, the mean over seeds of links per node, max degree, TcoSuppR, duplicates
and irrelevant copies per delivery, path length and delivery with 0%, 5% and 20% of the nodes
down, from `mesh_comparison` rows whose runs are current."""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from overlay import schema as S
from pipelines.lakehouse import Lakehouse
from pipelines.mesh_compare import COLUMNS as COMPARED
from pipelines.mesh_compare import SYSTEMS
from pipelines.report.figures import _grid

MEASURES = COMPARED[1:]  # every measure `compare-meshes` prints, past the system
COLUMNS = (S.INSTANCE, S.SYSTEM, "seeds", *MEASURES)


def gather(lakehouse: Lakehouse, current: set[str]) -> pd.DataFrame:
    """The stored comparison rows whose runs are among `current` (a few rows per comparison)."""
    if not lakehouse.exists(S.MESH_COMPARISON):
        return pd.DataFrame(columns=[S.COMPARISON_ID, S.INSTANCE, S.SEED, S.SYSTEM, S.RUN_ID, *MEASURES])
    rows = lakehouse.read(S.MESH_COMPARISON).toPandas()
    return rows[rows[S.RUN_ID].isin(current)].reset_index(drop=True)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per instance and system (in the comparison's order): the mean of every measure over seeds."""
    if rows.empty:
        return pd.DataFrame(columns=list(COLUMNS))
    grouped = rows.groupby([S.INSTANCE, S.SYSTEM])
    out = grouped[list(MEASURES)].mean(numeric_only=True).round(4).reset_index()
    out.insert(2, "seeds", grouped[S.SEED].nunique().values)
    order = {name: i for i, name in enumerate(SYSTEMS)}
    return out.sort_values([S.INSTANCE, S.SYSTEM], key=lambda c: c.map(order) if c.name == S.SYSTEM else c)[
        list(COLUMNS)
    ].reset_index(drop=True)


def figure(rows: pd.DataFrame) -> Figure | None:
    """Per instance: links per node and duplicates per delivery (left), delivery under failures (right)."""
    table = summary(rows)
    if table.empty:
        return None
    instances = sorted(table[S.INSTANCE].unique())
    fig, axes = _grid(2 * len(instances), width=5.5)
    for i, instance in enumerate(instances):
        mine = table[table[S.INSTANCE] == instance].reset_index(drop=True)
        cost, delivery = axes[2 * i], axes[2 * i + 1]
        at = range(len(mine))
        cost.bar([x - 0.2 for x in at], mine[S.AVG_DEGREE], width=0.4, label="links per node")
        cost.bar(
            [x + 0.2 for x in at], mine[S.DUPLICATES_PER_DELIVERY].fillna(0), width=0.4, label="duplicates / delivery"
        )
        for j, (column, label) in enumerate(
            ((S.DELIVERY_RATIO, "0% down"), (S.DELIVERY_RATIO_5, "5% down"), (S.DELIVERY_RATIO_20, "20% down"))
        ):
            delivery.bar([x - 0.27 + 0.27 * j for x in at], mine[column].fillna(0), width=0.27, label=label)
        for ax, title in ((cost, "cost"), (delivery, "delivery ratio")):
            ax.set_xticks(list(at), [s.split(" (")[0] for s in mine[S.SYSTEM]], rotation=30, fontsize="x-small")
            ax.set_title(f"{instance}: {title}", fontsize="small")
            ax.legend(fontsize="x-small")
            ax.grid(alpha=0.3, axis="y")
    fig.suptitle("gossipsub beside the papers' overlays (means over seeds)")
    return fig
