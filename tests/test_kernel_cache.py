"""The setup step that compiles the numba kernels once (pipelines/kernel_cache.py): the list it
reads, how it is recorded from numba's cache indexes, and that a stale line is skipped, not fatal."""

from __future__ import annotations

import inspect
import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from numba.core import types
from pyspark import cloudpickle

from overlay import resilience
from overlay.design import per_topic
from overlay.kernel_pickling import kernel_named
from pipelines import kernel_cache

ARRAY = types.Array(types.int64, 1, "C")


@pytest.mark.parametrize(
    "signature",
    [
        (ARRAY, types.int64),
        (types.Array(types.int32, 1, "C", readonly=True), types.boolean, types.float64),
        (types.ListType(ARRAY), types.Array(types.int64, 2, "C")),
        (types.UniTuple(ARRAY, 10), types.uint64),
        (types.Tuple((ARRAY, types.int64)),),
    ],
)
def test_a_signature_is_spelled_so_that_it_reads_back(signature):
    text = f"({', '.join(kernel_cache.spell(arg) for arg in signature)},)"
    assert kernel_cache.parse(text) == signature


def test_every_listed_kernel_exists_and_takes_as_many_arguments_as_its_line_gives():
    entries = kernel_cache.read()
    assert len(entries) > 50  # the design, routing and evaluation kernels
    for module, qualified, text in entries:
        dispatcher = kernel_named(module, qualified)
        arity = len(inspect.signature(dispatcher.py_func).parameters)
        assert len(kernel_cache.parse(text)) == arity, f"{module}.{qualified}: {text}"


KERNELS = """
import numba as nb


@nb.njit(cache=True)
def _step(values, i, by):
    return values[i] + by


@nb.njit(cache=True)
def total(values, scale):
    s = 0
    for i in range(len(values)):
        s += _step(values, i, 1) * scale  # a literal argument: compiled with its caller
    return s
"""


@pytest.fixture
def kernel_package(tmp_path, monkeypatch):
    """A package `toykernels` under tmp_path with cached kernels in two modules, importable."""
    package = tmp_path / "toykernels"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "sums.py").write_text(textwrap.dedent(KERNELS))
    (package / "counts.py").write_text(
        "import numba as nb\n\n\n@nb.njit(cache=True)\ndef count(values):\n    return len(values)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [m for m in sys.modules if m.startswith("toykernels")]:
        del sys.modules[name]


def test_recording_lists_the_called_signatures_and_compiling_them_fills_a_fresh_cache(kernel_package):
    from toykernels import counts, sums

    assert sums.total(np.arange(4, dtype=np.int64), 3) == (0 + 1 + 2 + 3 + 4) * 3
    assert counts.count(np.zeros(5)) == 5
    entries = kernel_cache.record(kernel_package, ("toykernels",))
    # the caller's signature only: the callee's was made with a literal argument
    assert entries == [
        ("toykernels.counts", "count", "(Array(float64, 1, 'C', False, aligned=True),)"),
        ("toykernels.sums", "total", "(Array(int64, 1, 'C', False, aligned=True), int64,)"),
    ]

    cache = kernel_package / "toykernels" / "__pycache__"
    for path in cache.glob("*.nb[ic]"):
        path.unlink()
    for name in [m for m in sys.modules if m.startswith("toykernels")]:
        del sys.modules[name]  # as in a fresh process: the kernels are not in memory
    assert kernel_cache.compile_all(entries, workers=2) == []  # one module in each of two processes
    assert {p.name.split("-")[0] for p in cache.glob("*.nbi")} == {"counts.count", "sums.total", "sums._step"}
    assert kernel_cache.record(kernel_package, ("toykernels",)) == entries


def test_an_index_of_an_older_source_gives_nothing(kernel_package):
    from toykernels import sums

    sums.total(np.arange(3, dtype=np.int64), 1)
    source = kernel_package / "toykernels" / "sums.py"
    os.utime(source, (source.stat().st_atime, source.stat().st_mtime + 10))
    assert kernel_cache.record(kernel_package, ("toykernels",)) == []


def test_a_line_that_no_longer_fits_its_kernel_is_reported_and_skipped(kernel_package):
    stale = [
        ("toykernels.sums", "total", "(Array(int64, 1, 'C', False, aligned=True),)"),  # an argument short
        ("toykernels.sums", "renamed", "(int64,)"),
        ("toykernels.sums", "total", "(Array(int64, 1, 'C', False, aligned=True), int64,)"),
    ]
    problems = kernel_cache.compile_entries(stale)
    assert len(problems) == 2
    assert problems[0].startswith("toykernels.sums.total(Array") and problems[1].startswith("toykernels.sums.renamed")
    assert all("\n" not in p for p in problems)


def test_every_listed_kernel_pickles_as_its_module_and_name():
    for module, qualified, _ in kernel_cache.read():
        kernel = kernel_named(module, qualified)
        blob = cloudpickle.dumps(kernel)
        assert kernel.py_func.__code__.co_name.encode() in blob and len(blob) < 300, f"{module}.{qualified}"
        assert pickle.loads(blob) is kernel


UNPICKLED_CACHES = """
import pickle, sys
from numba.core.dispatcher import Dispatcher
for function in pickle.load(open(sys.argv[1], "rb")):
    for name in function.__code__.co_names:
        kernel = function.__globals__.get(name)
        if isinstance(kernel, Dispatcher):
            print(name, type(kernel._cache).__name__)
"""


def test_functions_shipped_to_executors_find_their_kernels_cached_there(tmp_path):
    """As Spark ships them: cloudpickled here, unpickled in a fresh Python process (a worker),
    where each kernel they call must be the module's, with its cache (numba rebuilds a kernel
    pickled by value with none, and compiles it again in every worker)."""
    shipped = [
        per_topic._partition_links(2, "ids", 1),
        resilience._partition_outcomes(resilience.FailurePlan("random-nodes", (0.1,), 1, 1), []),
    ]
    (tmp_path / "shipped.pkl").write_bytes(cloudpickle.dumps(shipped))
    done = subprocess.run(
        [sys.executable, "-c", UNPICKLED_CACHES, str(tmp_path / "shipped.pkl")],
        capture_output=True, text=True, check=False, cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert sorted(done.stdout.split("\n")[:-1]) == [
        "harary_links FunctionCache",
        "surviving_components FunctionCache",
    ]
