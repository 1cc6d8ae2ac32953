# Databricks notebook source
# MAGIC %md
# MAGIC # Instances overview
# MAGIC The pub/sub instances in a lakehouse: their sizes, how their input rows reconcile, and the
# MAGIC topic popularity of one of them. Thin by design: parameters, then library calls.

# COMMAND ----------

# Parameters (widgets on Databricks, defaults elsewhere).
try:
    dbutils.widgets.text("lakehouse", "lakehouse")  # noqa: F821 - defined on Databricks
    dbutils.widgets.text("instance", "fb-1k")  # noqa: F821
    LAKEHOUSE = dbutils.widgets.get("lakehouse")  # noqa: F821
    INSTANCE = dbutils.widgets.get("instance")  # noqa: F821
except NameError:
    import os

    LAKEHOUSE = os.environ.get("OVERLAY_LAB_LAKEHOUSE", "lakehouse")
    INSTANCE = os.environ.get("OVERLAY_LAB_INSTANCE", "fb-1k")

# COMMAND ----------

from pyspark.sql import functions as F

from overlay import schema as S
from pipelines.config import apply_overrides, load_settings
from pipelines.lakehouse import Lakehouse
from pipelines.spark import get_spark

spark = get_spark(apply_overrides(load_settings(), {"lakehouse": LAKEHOUSE}))
lakehouse = Lakehouse(spark, LAKEHOUSE)

# COMMAND ----------

instances = lakehouse.read(S.INSTANCES).select(
    S.INSTANCE, S.SOURCE, S.NODES, S.TOPICS, S.SUBSCRIPTIONS,
    S.ROWS_READ, S.ROWS_ACCEPTED, S.REJECTED, S.DUPLICATES, S.UNSAMPLED,
)
instances.orderBy(S.INSTANCE).show(truncate=False)

# COMMAND ----------

# Topic popularity of one instance: how many topics have k subscribers.
popularity = (
    lakehouse.instance_rows(S.SUBSCRIPTIONS_TABLE, INSTANCE)
    .groupBy(S.TOPIC_ID).agg(F.count(F.lit(1)).alias("subscribers"))
    .groupBy("subscribers").agg(F.count(F.lit(1)).alias("topics"))
    .orderBy("subscribers")
)
popularity.show(20)

# COMMAND ----------

# Why rows were rejected, most frequent first.
(
    lakehouse.instance_rows(S.REJECTED_SUBSCRIPTIONS, INSTANCE)
    .groupBy(S.REASON).count()
    .orderBy(F.desc("count"))
    .show(truncate=False)
)
