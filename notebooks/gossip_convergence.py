# Databricks notebook source
# MAGIC %md
# MAGIC # Gossip convergence replay
# MAGIC One gossip simulation (`simulate`) cycle by cycle: the ln-covered share by topic size (Feverfew
# MAGIC Fig. 5), the messages of each cycle, and, from the state snapshots (`gossip_states`), how the
# MAGIC views of one node grew. Thin by design: parameters, then Delta reads and library calls.

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", run_id="", node="0")
spark, lakehouse = notebook.open_lakehouse(params["lakehouse"])

# COMMAND ----------

from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.report import gossip, gossip_figures

run_id = notebook.run_or_latest(lakehouse, params["run_id"], S.GOSSIP_CYCLES)
cycles = lakehouse.read(S.GOSSIP_CYCLES).filter(F.col(S.RUN_ID) == run_id).orderBy(S.CYCLE)
notebook.show(globals(), cycles.drop(S.RUN_ID, S.COMPUTED_AT), f"Cycles of {run_id}")

# COMMAND ----------

coverage = (
    lakehouse.read(S.GOSSIP_COVERAGE).filter(F.col(S.RUN_ID) == run_id)
    .withColumn(gossip.BUCKET, gossip.bucket_of(F.col(S.SUBSCRIBERS)))
    .groupBy(S.RUN_ID, S.CYCLE, gossip.BUCKET)
    .agg(F.sum(S.SUBSCRIBERS).alias(S.SUBSCRIPTIONS), F.sum(S.COVERED).alias(S.COVERED))
    .toPandas()  # cycles x topic-size buckets
)
coverage[gossip.SHARE] = coverage[S.COVERED] / coverage[S.SUBSCRIPTIONS]
notebook.show(globals(), gossip_figures.coverage(coverage, {run_id: run_id}), "ln-covered share by topic size")

# COMMAND ----------

# MAGIC %md
# MAGIC ## One node's views, snapshot by snapshot

# COMMAND ----------

views = (
    lakehouse.read(S.GOSSIP_STATES)
    .filter((F.col(S.RUN_ID) == run_id) & (F.col(S.NODE_ID) == int(params["node"])))
    .select(S.CYCLE, F.size("rv").alias("random_view"), F.size("sv").alias("similar_view"),
            F.size("lv").alias("ln_covered_view"), "lv", F.size("av_origin").alias("agent_view"),
            F.size("own_topic").alias("diffusions"))
    .orderBy(S.CYCLE)
)
notebook.show(globals(), views, f"Node {params['node']} in {run_id}")
