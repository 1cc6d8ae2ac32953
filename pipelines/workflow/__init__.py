"""Workflows: one DAG of CLI commands, run here (`workflow FILE`) or as a Databricks job (`bundle`)."""
