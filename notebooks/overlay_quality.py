# Databricks notebook source
# MAGIC %md
# MAGIC # Overlay quality dashboard
# MAGIC The current overlay runs of a lakehouse: how topic-connected each overlay is (TcoSuppR), at
# MAGIC what degree, and how quality grows with the degree budget (ICDCS'16 Fig. 4 / Fig. 9 shape).
# MAGIC Thin by design: parameters, then library calls (`pipelines.report` computes what the
# MAGIC report job shows).

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", instance="", degree_ratio="0.2", view_run="")
spark, lakehouse = notebook.open_lakehouse(params["lakehouse"])

# COMMAND ----------

from overlay import schema as S
from overlay.summaries import RUN_LABEL
from pipelines.report import figures, gather

data = gather(spark, lakehouse, degree_ratio=float(params["degree_ratio"]))
if params["instance"]:
    data.quality = data.quality[data.quality[S.INSTANCE] == params["instance"]]
    data.degrees = data.degrees[data.degrees[S.INSTANCE] == params["instance"]]

# COMMAND ----------

# MAGIC %md
# MAGIC ## Runs and their quality

# COMMAND ----------

notebook.show(
    globals(),
    data.quality[[S.INSTANCE, RUN_LABEL, S.EDGES, S.AVG_DEGREE, S.MAX_DEGREE, S.TCO_SUPPORT, S.DIAMETER_AVG]]
    .sort_values([S.INSTANCE, RUN_LABEL]),
    "Current overlay runs",
)

# COMMAND ----------

notebook.show(globals(), figures.quality_vs_budget(data.quality), "TcoSuppR against budget ratio")

# COMMAND ----------

nodes = dict(zip(data.quality[S.RUN_ID], data.quality[S.NODES]))
notebook.show(globals(), figures.degree_distribution(data.degrees, nodes), "Degree distributions")

# COMMAND ----------

# MAGIC %md
# MAGIC ## See an overlay
# MAGIC One run as an interactive graph (`view`): nodes sized by degree, coloured by component; a
# MAGIC large overlay is a breadth-first sample, as the title says. `view_run` names the run (by
# MAGIC default the first run above).

# COMMAND ----------

import os
import tempfile

from pipelines.view import ViewRequest, run_view

shown_run = params["view_run"] or (data.quality[S.RUN_ID].iloc[0] if len(data.quality) else "")
if shown_run:
    folder = os.environ.get("OVERLAY_LAB_FIGURES") or tempfile.mkdtemp(prefix="overlay-view-")
    page = os.path.join(folder, "overlay_view.html")
    shown = run_view(spark, lakehouse, ViewRequest(shown_run, page))
    notebook.show_page(globals(), page, f"Overlay {shown_run}: {len(shown.nodes)} nodes, {len(shown.links)} links")
else:
    notebook.show(globals(), None, "Overlay view")
