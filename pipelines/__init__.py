"""Thin jobs over the overlay library: parse arguments, read Delta, call the library, write Delta.

`python -m pipelines --help` (or the `overlay-lab` console script) lists the commands.
"""
