"""Overlay library: pure functions over Spark DataFrames for pub/sub instances and overlays.

Nothing here reads or writes tables or parses arguments; `pipelines` does that.
"""
