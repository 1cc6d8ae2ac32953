"""Compiled kernels travel to Spark's Python workers by reference, so the workers use the cache.

Spark ships a `mapInArrow` function to its Python workers with cloudpickle, and a numba kernel
the function refers to went with it by value: numba rebuilt it there without its on-disk cache,
so every worker process compiled it again. A kernel that is a module global compiled with
`cache=True` (every kernel of the lab) is pickled instead as its module and name: the worker
imports it and loads the compiled code from the cache. Any other numba dispatcher keeps numba's
own pickling. Registered once, when the `overlay` package is imported.
"""

from __future__ import annotations

import copyreg
import importlib

from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher


def kernel_named(module: str, qualified: str):
    """The object `qualified` of `module` (what a kernel pickled by reference is rebuilt from)."""
    target = importlib.import_module(module)
    for part in qualified.split("."):
        target = getattr(target, part)
    return target


def _reduce(dispatcher: CPUDispatcher):
    func = dispatcher.py_func
    if not isinstance(getattr(dispatcher, "_cache", None), NullCache):
        try:
            importable = kernel_named(func.__module__, func.__qualname__) is dispatcher
        except (ImportError, AttributeError):
            importable = False
        if importable:
            return kernel_named, (func.__module__, func.__qualname__)
    return dispatcher.__reduce__()


copyreg.pickle(CPUDispatcher, _reduce)
