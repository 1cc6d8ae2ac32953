"""Peak resident memory of a benchmark's child process tree, by role, sampled from /proc.

A CLI process of the lab is a Python driver, its driver JVM and, on `local-cluster`, executor
JVMs; their peaks are what a user must provision. Sampling every 0.2 s can miss a spike shorter
than that; the figures are lower bounds of the true peaks.
"""

from __future__ import annotations

import subprocess
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ROLES = ("python driver", "driver JVM", "executor JVMs")


def _rss_bytes(pid: int) -> int:
    """Resident bytes of a process; 0 once it has exited (or for a kernel thread)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return 0
    return next((int(line.split()[1]) * 1024 for line in status.splitlines() if line.startswith("VmRSS:")), 0)


def _children(pid: int) -> list[int]:
    try:
        tasks = Path(f"/proc/{pid}/task").iterdir()
        return [int(c) for t in tasks for c in (t / "children").read_text().split()]
    except (FileNotFoundError, ProcessLookupError):
        return []


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _role(pid: int, root: int) -> str | None:
    if pid == root:
        return "python driver"
    command = _cmdline(pid)
    if "CoarseGrainedExecutorBackend" in command:
        return "executor JVMs"
    if ("SparkSubmit" in command or "java" in command.split(" ")[0]) and "Worker" not in command:
        return "driver JVM"
    return None


class PeakMemory:
    """Peak RSS of a process tree by role (the processes of a role summed at each sample), and
    the peak of the whole tree's sum."""

    def __init__(self, root: int, every: float = 0.2) -> None:
        self.root, self.every = root, every
        self.peaks = {**dict.fromkeys(ROLES, 0), "total": 0}
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while not self._done.is_set():
            now = dict.fromkeys(self.peaks, 0)
            stack, seen = [self.root], set()
            while stack:
                pid = stack.pop()
                if pid in seen:
                    continue
                seen.add(pid)
                stack.extend(_children(pid))
                role = _role(pid, self.root)
                if role is not None:
                    rss = _rss_bytes(pid)
                    now[role] += rss
                    now["total"] += rss
            for role, value in now.items():
                self.peaks[role] = max(self.peaks[role], value)
            self._done.wait(self.every)

    def stop(self) -> dict[str, int]:
        self._done.set()
        self._thread.join()
        return self.peaks


def measured(argv: list[str], env: dict | None = None, stdout=subprocess.DEVNULL) -> tuple[float, dict]:
    """Run `argv` from the repository root: (wall seconds, peak RSS by role). Stops the
    benchmark with the command's exit code if it fails."""
    clock = time.monotonic()
    process = subprocess.Popen(argv, cwd=ROOT, stdout=stdout, env=env)
    peaks = PeakMemory(process.pid)
    code = process.wait()
    memory_peaks = peaks.stop()
    if code != 0:
        raise SystemExit(f"{' '.join(argv)} exited {code}")
    return time.monotonic() - clock, memory_peaks
