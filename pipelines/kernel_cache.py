"""Compile the lab's numba kernels into their on-disk caches once, at setup.

Every kernel is `@njit(cache=True)`: the first process that calls it compiles it (seconds per
kernel, a minute or more for a design's set) and saves the machine code under the module's
`__pycache__/`; later processes load it in milliseconds. On a fresh clone the first callers are
the test workers and CLI commands, and two pytest-xdist workers that meet the same kernel each
compile it. Setup does it instead, once, split over two processes.

What to compile is a list checked in next to this module (`kernel_signatures.txt`: one line per
kernel and argument types, as the tests and jobs call them). `record` writes it from a tree whose
caches are warm (after a test run); `compile` (what `./lab setup` runs) asks each kernel's
dispatcher for each signature: numba loads it from the cache when it is there and compiles and
saves it when not. A line that no longer fits its kernel (renamed, new arguments) is reported and
skipped: the kernel then compiles on first use, as it would without this step.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import multiprocessing
import pickle
import sys
import time
from importlib.metadata import version
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIGNATURES = Path(__file__).with_name("kernel_signatures.txt")
PACKAGES = ("overlay", "routing", "benchmarks")  # where the lab's kernels live (benchmarks: the compiled oracle)
WORKERS = 2
STAMP = Path(sys.prefix) / ".overlay-lab-kernels"  # what the caches were last made for, in this environment


def _types():
    from numba.core import types

    return types


def spell(kind) -> str:
    """A numba type as text that `parse` reads back (numba's own repr does not, for typed lists)."""
    types = _types()
    if isinstance(kind, types.ListType):
        return f"ListType({spell(kind.item_type)})"
    if isinstance(kind, types.UniTuple):
        return f"UniTuple({spell(kind.dtype)}, {kind.count})"
    if isinstance(kind, types.Tuple):
        return f"Tuple(({', '.join(spell(k) for k in kind.types)},))"
    return repr(kind)


def parse(text: str) -> tuple:
    """The argument types spelled by `spell`, as a tuple of numba types."""
    types = _types()
    names = {name: getattr(types, name) for name in dir(types) if not name.startswith("_")}
    names["bool"] = types.boolean
    parsed = eval(text, {"__builtins__": {}}, names)  # our own file: numba type names only
    return tuple(parsed)


def _entries_of(index: Path, root: Path) -> list[tuple[str, str, str]]:
    """(module, qualified name, signature) for each overload in one numba cache index file.

    Signatures with literal or omitted arguments are left out: only kernel-to-kernel calls make
    them, and compiling the calling kernel compiles them. An index written for another version of
    the source gives nothing."""
    types = _types()
    stem = index.name.split(".py", 1)[0]  # "kernels.next_shared-34"
    module_file, qualified = stem.split(".", 1)
    qualified = qualified.rsplit("-", 1)[0]
    package = index.parent.parent.relative_to(root)
    module = ".".join((*package.parts, module_file))
    with index.open("rb") as handle:
        pickle.load(handle)  # numba's version
        stamp, overloads = pickle.loads(handle.read())
    source = index.parent.parent / f"{module_file}.py"
    if not source.is_file() or stamp != (source.stat().st_mtime, source.stat().st_size):
        return []  # an index of an older version of the source: numba would not use it either
    found = []
    for key in overloads:
        if isinstance(key[0], str):
            continue  # a kernel typed at its decoration compiles (or loads) when its module is imported
        signature = tuple(key[0])
        if any(isinstance(arg, (types.Literal, types.Omitted)) for arg in signature):
            continue
        text = f"({', '.join(spell(arg) for arg in signature)},)"
        if parse(text) != signature:
            raise ValueError(f"{module}.{qualified}: cannot spell {signature} so that it reads back")
        found.append((module, qualified, text))
    return found


def record(root: Path = ROOT, packages: tuple[str, ...] = PACKAGES) -> list[tuple[str, str, str]]:
    """Every kernel signature in the warm caches under `root`'s packages, sorted."""
    found = set()
    for package in packages:
        for index in (root / package).rglob("__pycache__/*.nbi"):
            found.update(_entries_of(index, root))
    return sorted(found)


def read(path: Path = SIGNATURES) -> list[tuple[str, str, str]]:
    lines = [line for line in path.read_text().splitlines() if line and not line.startswith("#")]
    return [tuple(line.split("\t")) for line in lines]  # type: ignore[misc]


def write(entries: list[tuple[str, str, str]], path: Path = SIGNATURES) -> None:
    header = "# module\tkernel\targument types: written by `python -m pipelines.kernel_cache record`\n"
    path.write_text(header + "".join("\t".join(entry) + "\n" for entry in entries))


def compile_entries(entries: list[tuple[str, str, str]]) -> list[str]:
    """Compile (or load) each entry in this process; the problems, one line each."""
    from overlay.kernel_pickling import kernel_named  # imports numba: not for the stamp check

    problems = []
    for module, qualified, text in entries:
        try:
            kernel_named(module, qualified).compile(parse(text))
        except Exception as error:  # a stale line is a cache miss, never a failed setup
            first = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
            problems.append(f"{module}.{qualified}{text}: {first[:200]}")
    return problems


def compile_all(entries: list[tuple[str, str, str]], workers: int = WORKERS) -> list[str]:
    """`compile_entries` over `workers` processes, each taking whole modules (a kernel's callees
    are mostly in its own module, and compile with it)."""
    modules = sorted({entry[0] for entry in entries}, key=lambda m: -sum(e[0] == m for e in entries))
    shares: list[list[tuple[str, str, str]]] = [[] for _ in range(max(1, workers))]
    for module in modules:  # the largest modules first, each to the lightest share
        min(shares, key=len).extend(entry for entry in entries if entry[0] == module)
    shares = [share for share in shares if share]
    if len(shares) == 1:
        return compile_entries(shares[0])
    with multiprocessing.get_context("spawn").Pool(len(shares)) as pool:
        return [problem for problems in pool.map(compile_entries, shares) for problem in problems]


def stamp_of(entries: list[tuple[str, str, str]]) -> str:
    """What the caches depend on: numba, Python, the list, and each kernel module's source stamp
    (numba's own key: modification time and size)."""
    parts = [version("numba"), sys.version, SIGNATURES.read_text()]
    for module in sorted({entry[0] for entry in entries}):
        spec = importlib.util.find_spec(module)
        source = Path(spec.origin) if spec and spec.origin else None
        parts.append(f"{module}:{source.stat().st_mtime}:{source.stat().st_size}" if source else module)
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def main(argv: list[str]) -> int:
    command = argv[0] if argv else "compile"
    if command == "record":
        entries = record()
        write(entries)
        print(f"kernel cache: {len(entries)} kernel signatures written to {SIGNATURES.relative_to(ROOT)}")
        return 0
    if command != "compile":
        print("usage: python -m pipelines.kernel_cache [compile|record]", file=sys.stderr)
        return 2
    started = time.monotonic()
    entries = read()
    absent = sorted({e[0].split(".")[0] for e in entries if importlib.util.find_spec(e[0].split(".")[0]) is None})
    if absent:  # an installed wheel has no benchmarks/
        entries = [e for e in entries if e[0].split(".")[0] not in absent]
        print(f"kernel cache: {', '.join(absent)} not importable here: its kernels left out", file=sys.stderr)
    stamp = stamp_of(entries)
    if STAMP.is_file() and STAMP.read_text() == stamp:
        return 0  # compiled for these sources already
    print(f"kernel cache: compiling {len(entries)} kernel signatures on {WORKERS} processes", file=sys.stderr)
    problems = compile_all(entries)
    STAMP.write_text(stamp)
    for problem in problems:
        print(f"kernel cache: skipped {problem}", file=sys.stderr)
    print(
        f"kernel cache: {len(entries) - len(problems)} of {len(entries)} kernel signatures ready "
        f"in {time.monotonic() - started:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
