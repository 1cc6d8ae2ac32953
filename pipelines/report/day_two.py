"""Day two in the report: link changes and TcoSuppR over days, incremental against fresh
(docs/concepts/day-two.md), from `overlay_changes`. A series is one chain of daily designs: the
runs of one instance and algorithm; its days are the instance versions' `day` (churned versions)
or their order."""

from __future__ import annotations

import json

import pandas as pd
from matplotlib.figure import Figure

from overlay import schema as S
from pipelines.lakehouse import Lakehouse
from pipelines.report.figures import MARKERS, _grid

SERIES, DAY, CHANGED = "series", "day", "links_changed"
MAX_SERIES = 8
COLUMNS = (
    SERIES,
    "days",
    "changed_incremental",
    "changed_fresh",
    "changed_ratio",
    "tco_incremental",
    "tco_fresh",
    "worst_tco_gap",
    "engine_s_incremental",
    "engine_s_fresh",
    "engine_ratio",
    "rebuilt_days",
)


def gather(lakehouse: Lakehouse) -> pd.DataFrame:
    """One row per stored `overlay_changes` row of a complete run, with its series and day (the
    rows are one per daily design: bounded by the days run)."""
    if not lakehouse.exists(S.OVERLAY_CHANGES):
        return pd.DataFrame(columns=[SERIES, DAY, S.CHANGE_KIND, CHANGED, S.TCO_SUPPORT, S.SECONDS_ENGINE])
    changes = lakehouse.read(S.OVERLAY_CHANGES)
    runs = lakehouse.read(S.OVERLAY_RUNS).filter(f"{S.STATUS} = '{S.COMPLETE}'").select(S.RUN_ID, S.ALGORITHM)
    versions = lakehouse.read(S.INSTANCE_VERSIONS).select(S.INSTANCE, S.INGEST_ID, S.PARAMS)
    rows = changes.join(runs, S.RUN_ID).join(versions, [S.INSTANCE, S.INGEST_ID], "left").toPandas()
    if rows.empty:
        return rows.assign(**{SERIES: [], DAY: [], CHANGED: []})
    rows[SERIES] = rows[S.INSTANCE] + " " + rows[S.ALGORITHM]
    rows[DAY] = [json.loads(p).get("day") if isinstance(p, str) else None for p in rows[S.PARAMS]]
    order = rows.groupby(SERIES)[S.INGEST_ID].rank(method="dense").astype(int)
    rows[DAY] = rows[DAY].fillna(order).astype(int)
    rows[CHANGED] = rows[S.LINKS_ADDED] + rows[S.LINKS_REMOVED]
    return rows.sort_values([SERIES, DAY, S.CHANGE_KIND]).reset_index(drop=True)


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """Per series: mean links changed a day and TcoSuppR, both ways, the worst day's TcoSuppR gap
    (fresh minus incremental), engine seconds, and the days an incremental design was rebuilt."""
    out = []
    for series, mine in rows.groupby(SERIES):
        inc = mine[mine[S.CHANGE_KIND] != S.FRESH].set_index(DAY)
        fresh = mine[mine[S.CHANGE_KIND] == S.FRESH].set_index(DAY)
        both = inc.index.intersection(fresh.index)
        gap = (fresh.loc[both, S.TCO_SUPPORT] - inc.loc[both, S.TCO_SUPPORT]).max() if len(both) else None
        changed_inc, changed_fresh = inc[CHANGED].mean(), fresh[CHANGED].mean() if len(fresh) else None
        engine_inc = inc[S.SECONDS_ENGINE].mean()
        engine_fresh = fresh[S.SECONDS_ENGINE].mean() if len(fresh) else None
        out.append(
            {
                SERIES: series,
                "days": len(inc),
                "changed_incremental": round(changed_inc, 1),
                "changed_fresh": None if changed_fresh is None else round(changed_fresh, 1),
                "changed_ratio": round(changed_inc / changed_fresh, 3) if changed_fresh else None,
                "tco_incremental": round(inc[S.TCO_SUPPORT].mean(), 4),
                "tco_fresh": None if not len(fresh) else round(fresh[S.TCO_SUPPORT].mean(), 4),
                "worst_tco_gap": None if gap is None else round(gap, 4),
                "engine_s_incremental": round(engine_inc, 3) if pd.notna(engine_inc) else None,
                "engine_s_fresh": None if engine_fresh is None or pd.isna(engine_fresh) else round(engine_fresh, 3),
                "engine_ratio": round(engine_inc / engine_fresh, 3) if engine_fresh else None,
                "rebuilt_days": int((inc[S.CHANGE_KIND] == S.REBUILT).sum()),
            }
        )
    return pd.DataFrame(out, columns=list(COLUMNS))


def figure(rows: pd.DataFrame) -> Figure | None:
    """Per series: links changed a day (left) and TcoSuppR (right), incremental against fresh."""
    if rows.empty:
        return None
    series = sorted(rows[SERIES].unique())[:MAX_SERIES]
    fig, axes = _grid(2 * len(series), width=5.0)
    for i, name in enumerate(series):
        mine = rows[rows[SERIES] == name]
        changed, quality = axes[2 * i], axes[2 * i + 1]
        for j, (label, kinds) in enumerate((("incremental", (S.INCREMENTAL, S.REBUILT)), ("fresh", (S.FRESH,)))):
            line = mine[mine[S.CHANGE_KIND].isin(kinds)].sort_values(DAY)
            if len(line):
                style = {"marker": MARKERS[j], "markersize": 3, "label": label}
                changed.plot(line[DAY], line[CHANGED], **style)
                quality.plot(line[DAY], line[S.TCO_SUPPORT], **style)
        changed.set_title(f"{name}: links changed", fontsize="small")
        changed.set_ylabel("links added + removed")
        quality.set_title(f"{name}: TcoSuppR", fontsize="small")
        for ax in (changed, quality):
            ax.set_xlabel("day")
            ax.grid(alpha=0.3)
            ax.legend(fontsize="x-small")
    fig.suptitle("Day two: link changes and TcoSuppR over days, incremental against fresh")
    return fig
