"""What the notebooks in `notebooks/` share: parameters and display, on Databricks or locally.

On Databricks a notebook's parameters are widgets and `display` renders tables and figures; run
as a plain script (CI runs every notebook that way) the parameters come from environment
variables `OVERLAY_LAB_<NAME>` and tables print to the terminal. Notebooks pass their `globals()`
so this module can find `dbutils` and `display` when they exist.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from matplotlib.figure import Figure
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.config import apply_overrides, load_settings
from pipelines.lakehouse import Lakehouse
from pipelines.spark import cycle_regime_for, get_spark, lineage_for


def parameters(scope: dict, **defaults: str) -> dict[str, str]:
    """The notebook's parameters: widgets on Databricks, else `OVERLAY_LAB_<NAME>` or the default."""
    dbutils = scope.get("dbutils")
    values = {}
    for name, default in defaults.items():
        if dbutils is not None:
            dbutils.widgets.text(name, default)
            values[name] = dbutils.widgets.get(name)
        else:
            values[name] = os.environ.get(f"OVERLAY_LAB_{name.upper()}", default)
    return values


def open_lakehouse(location: str) -> tuple[SparkSession, Lakehouse]:
    """The session (the cluster's on Databricks) and the lakehouse at `location`."""
    settings = apply_overrides(load_settings(), {"lakehouse": location})
    spark = get_spark(settings)
    return spark, Lakehouse(
        spark, settings.lakehouse_location(), lineage_for(spark, settings), cycle_regime_for(spark, settings)
    )


def run_or_latest(lakehouse: Lakehouse, run_id: str, table: S.TableSpec) -> str:
    """`run_id`, or when it is empty the run that last wrote rows to `table` (by `computed_at`)."""
    if run_id:
        return run_id
    latest = (
        lakehouse.read(table)
        .groupBy(S.RUN_ID)
        .agg(F.max(S.COMPUTED_AT).alias("_at"))
        .orderBy(F.col("_at").desc())
        .first()
    )
    if latest is None:
        raise ValueError(f"no run has rows in {table.name} yet: pass a run_id")
    return latest[S.RUN_ID]


def show(scope: dict, item: DataFrame | Figure | object | None, title: str = "", rows: int = 50) -> None:
    """Display a DataFrame, a pandas frame or a figure: `display` on Databricks, else print (and
    save figures to `OVERLAY_LAB_FIGURES` when that folder is set)."""
    display = scope.get("display")
    if title:
        print(f"\n## {title}")
    if item is None:
        print("(nothing to show yet)")
        return
    if display is not None:
        display(item)
        return
    if isinstance(item, DataFrame):
        item.show(rows, truncate=False)
    elif isinstance(item, Figure):
        folder = os.environ.get("OVERLAY_LAB_FIGURES")
        if folder:
            name = re.sub(r"[^A-Za-z0-9]+", "_", title or "figure").strip("_").lower() + ".png"
            Path(folder).mkdir(parents=True, exist_ok=True)
            item.savefig(Path(folder) / name, dpi=100)
            print(f"(figure saved to {Path(folder) / name})")
        else:
            print(f"(figure: {len(item.axes)} panels)")
    else:
        print(item.to_string(max_rows=rows) if hasattr(item, "to_string") else item)


def show_page(scope: dict, page: str | Path, title: str = "") -> None:
    """Show an HTML page the lab wrote (`view`): inline on Databricks (`displayHTML`), else say
    where it is (open it in a browser)."""
    if title:
        print(f"\n## {title}")
    display_html = scope.get("displayHTML")
    if display_html is not None:
        display_html(Path(page).read_text(encoding="utf-8"))
        return
    print(f"(page written to {page}: open it in a browser)")
