# Databricks notebook source
# MAGIC %md
# MAGIC # Routing comparison
# MAGIC Every complete routing run on a current small-world overlay: routing overhead and path
# MAGIC lengths, as ratios against Scribe(-) on the same workload, the BeaConvey comparisons
# MAGIC (Tables 3-5) next to the paper, and how the load spreads over the nodes.

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", instance="")
spark, lakehouse = notebook.open_lakehouse(params["lakehouse"])

# COMMAND ----------

from overlay import schema as S
from overlay.summaries import RUN_LABEL
from pipelines.report import figures, gather

data = gather(spark, lakehouse)
if params["instance"]:
    data.routing = data.routing[data.routing[S.INSTANCE] == params["instance"]]
    data.comparisons = data.comparisons[data.comparisons[S.INSTANCE] == params["instance"]]
    data.load = data.load[data.load[RUN_LABEL].isin(data.routing[RUN_LABEL])]

# COMMAND ----------

notebook.show(
    globals(),
    data.routing[[
        S.INSTANCE, RUN_LABEL, S.PUBLICATIONS, S.ROUTING_OVERHEAD, S.AVG_PATH_LENGTH, S.MAX_PATH_LENGTH,
        S.OVERHEAD_RATIO, S.PATH_RATIO, S.SUPERSTEPS, S.MESSAGES,
    ]].sort_values([S.INSTANCE, RUN_LABEL]),
    "Routing runs",
)

# COMMAND ----------

notebook.show(globals(), figures.routing_ratios(data.routing), "Overhead and path length against Scribe(-)")

# COMMAND ----------

# MAGIC %md
# MAGIC ## BeaConvey comparisons (Tables 3-5)

# COMMAND ----------

for comparison_id, rows in data.comparisons.groupby(S.COMPARISON_ID):
    notebook.show(globals(), figures.comparison(rows.reset_index(drop=True)), f"Comparison {comparison_id}")

# COMMAND ----------

notebook.show(globals(), figures.load_profile(data.load), "Per-node load")
