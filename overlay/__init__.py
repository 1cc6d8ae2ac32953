"""Overlay library: pure functions over Spark DataFrames for pub/sub instances and overlays.

Nothing here reads or writes tables or parses arguments; `pipelines` does that.
"""

from overlay import kernel_pickling  # noqa: F401 (compiled kernels pickle by reference: kernel_pickling.py)
