"""Routing library: publication routing over overlays as Pregel-style message passing.

Filled by the routing issue; like `overlay`, it holds pure functions over DataFrames and never
imports `pipelines`.
"""
