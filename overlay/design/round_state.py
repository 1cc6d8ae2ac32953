"""Each round partition's candidate rows kept on its executor between rounds.

The rounds regime's table lives in Spark (a local checkpoint). Streaming it through Arrow to
Python every round costs more than the round's work, so the first round's task writes its rows
(u, v and their bounds, in (u, v) order) as numpy files on its machine's local disk, and each
later round's task for that partition maps them back (the page cache: no copy, no Arrow) and
writes the refreshed bounds in place. A task that finds no files (it runs on another machine,
or the files were removed) reports a miss, and the driver runs that round from the table again,
which writes them anew: the table's bounds are older but still bounds (gains never grow), so a
miss costs time, never exactness.

The files sit under `<root>/overlay-lab-rounds/<run token>/<partition>/`, `root` being the
executor's temporary directory unless the caller names one; the engine removes them when its
rounds end (one small job), and a new table removes trees a day old that a killed run left.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
import uuid
from dataclasses import dataclass, field

import numpy as np

FOLDER = "overlay-lab-rounds"
STALE_SECONDS = 86_400
NAMES = ("u", "v", "bound")


@dataclass(frozen=True)
class RoundState:
    """Where one table's partitions keep their rows (picklable: it travels to the tasks)."""

    root: str | None = None  # None: the executor's temporary directory
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def base(self) -> str:
        return os.path.join(self.root or tempfile.gettempdir(), FOLDER)

    def folder(self, partition: int) -> str:
        return os.path.join(self.base(), self.token, str(partition))

    def save(self, partition: int, us: np.ndarray, vs: np.ndarray, bounds: np.ndarray) -> None:
        """Write a partition's rows whole (a new folder renamed into place: a reader sees the old
        rows or the new ones, never a mix)."""
        target = self.folder(partition)
        staging = f"{target}.{os.getpid()}.{uuid.uuid4().hex[:8]}"
        os.makedirs(staging)
        for name, array in zip(NAMES, (us, vs, bounds)):
            np.save(os.path.join(staging, name + ".npy"), np.ascontiguousarray(array, dtype=np.int64))
        if os.path.isdir(target):
            shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)

    def load(self, partition: int) -> tuple[np.ndarray, np.ndarray, np.memmap] | None:
        """The partition's rows, mapped (bounds writable in place), or None when not here."""
        folder = self.folder(partition)
        try:
            us, vs = (np.load(os.path.join(folder, name + ".npy"), mmap_mode="r") for name in NAMES[:2])
            bounds = np.load(os.path.join(folder, "bound.npy"), mmap_mode="r+")
        except (FileNotFoundError, NotADirectoryError, ValueError):
            return None
        return us, vs, bounds

    def drop(self, partition: int | None = None) -> None:
        """Remove one partition's files here, or (None) the whole table's."""
        path = os.path.join(self.base(), self.token) if partition is None else self.folder(partition)
        shutil.rmtree(path, ignore_errors=True)

    def drop_stale(self, now: float | None = None) -> None:
        """Remove the trees of other tables older than a day (a run killed before its clean-up)."""
        now = time.time() if now is None else now
        try:
            entries = list(os.scandir(self.base()))
        except FileNotFoundError:
            return
        for entry in entries:
            try:
                stale = entry.name != self.token and now - entry.stat().st_mtime > STALE_SECONDS
            except FileNotFoundError:
                continue
            if stale:
                shutil.rmtree(entry.path, ignore_errors=True)
