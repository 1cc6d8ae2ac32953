# Databricks notebook source
# MAGIC %md
# MAGIC # The history of a table (Delta time travel)
# MAGIC Every commit of one lakehouse table, and the table as it was at each of the latest
# MAGIC versions: for `overlay_edges` and one design run, this replays how the greedy rounds added
# MAGIC links, commit by commit. Any version can be read back as it was.

# COMMAND ----------

from pipelines import notebook

params = notebook.parameters(globals(), lakehouse="lakehouse", table="overlay_edges", run_id="", versions="10")
spark, lakehouse = notebook.open_lakehouse(params["lakehouse"])

# COMMAND ----------

from overlay import schema as S

table = S.table_named(params["table"])
history = lakehouse.history(table).select("version", "timestamp", "operation", "operationMetrics")
notebook.show(globals(), history, f"Commits of {table.name}, newest first")

# COMMAND ----------

# MAGIC %md
# MAGIC ## The table at its latest versions
# MAGIC Rows at each version (only the run's rows when `run_id` is set), read by time travel.

# COMMAND ----------

growth = lakehouse.rows_by_version(table, int(params["versions"]), run_id=params["run_id"] or None)
notebook.show(globals(), growth, "Rows by version")

# COMMAND ----------

oldest = int(growth["version"].min())
notebook.show(globals(), lakehouse.read_version(table, oldest).limit(10), f"{table.name} as it was at version {oldest}")
