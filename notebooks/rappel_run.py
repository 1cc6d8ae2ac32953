# Databricks notebook source
# MAGIC %md
# MAGIC # A Rappel run, round by round
# MAGIC One `simulate rappel` run: its rounds (nodes up, friend coverage, update latency,
# MAGIC messages), the latency over time (ComNet'09 Fig. 7), its trees at the last snapshot, and one
# MAGIC node's friendship state snapshot by snapshot from `rappel_states`. Thin by design: parameters,
# MAGIC then Delta reads and library calls.

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", run_id="", node="0")
spark, lakehouse = notebook.open_lakehouse(params["lakehouse"])

# COMMAND ----------

from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.report import rappel_figures

run_id = notebook.run_or_latest(lakehouse, params["run_id"], S.RAPPEL_ROUNDS)
rounds = lakehouse.read(S.RAPPEL_ROUNDS).filter(F.col(S.RUN_ID) == run_id).orderBy(S.ROUND)
notebook.show(globals(), rounds.drop(S.RUN_ID, S.COMPUTED_AT), f"Rounds of {run_id}")

# COMMAND ----------

run_params = lakehouse.read(S.OVERLAY_RUNS).filter(F.col(S.RUN_ID) == run_id).select(S.RUN_ID, S.PARAMS)
timeline = rounds.join(run_params, S.RUN_ID).toPandas()  # one row per round
notebook.show(globals(), rappel_figures.latency(timeline), "Update latency over time")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The trees at the last stored round

# COMMAND ----------

trees = lakehouse.read(S.FEED_TREES).filter(F.col(S.RUN_ID) == run_id)
last = trees.agg(F.max(S.ROUND)).first()[0]
by_feed = (
    trees.filter(F.col(S.ROUND) == last).groupBy(S.TOPIC_ID)
    .agg(F.count(F.lit(1)).alias("members"), F.sum(F.col(S.DEPTH).isNull().cast("int")).alias("detached"),
         F.max(S.DEPTH).alias("height"), F.avg(S.DEPTH).alias("mean_depth"))
    .orderBy(F.col("members").desc())
)
notebook.show(globals(), by_feed, f"Feeds after round {last}: members, off the publisher's tree, height")

# COMMAND ----------

# MAGIC %md
# MAGIC ## One node's friendship state, snapshot by snapshot

# COMMAND ----------

node = (
    lakehouse.read(S.RAPPEL_STATES)
    .filter((F.col(S.RUN_ID) == run_id) & (F.col(S.NODE_ID) == int(params["node"])))
    .select(S.ROUND, "friends", F.size("fans").alias("fans"), F.size("cand").alias("candidates"),
            F.size("met").alias("met_on_joins"), S.COVERED, S.FEEDS)
    .orderBy(S.ROUND)
)
notebook.show(globals(), node, f"Node {params['node']} in {run_id}")
