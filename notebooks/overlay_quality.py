# Databricks notebook source
# MAGIC %md
# MAGIC # Overlay quality dashboard
# MAGIC The current overlay runs of a lakehouse: how topic-connected each overlay is (TcoSuppR), at
# MAGIC what degree, and how quality grows with the degree budget (ICDCS'16 Fig. 4 / Fig. 9 shape).
# MAGIC Thin by design: parameters, then library calls (`pipelines.report` computes what the
# MAGIC report job shows).

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", instance="", degree_ratio="0.2")
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
