"""A Spark standalone cluster on this machine: `./lab cluster start | stop | status | kill-worker N`.

A master and workers (two by default) from the project's own PySpark (`bin/spark-class`, no
separate Spark install), every one of them bound to and advertising 127.0.0.1 only, with their
logs and work folders under `.cluster/` in the project. The processes started are recorded in
`.cluster/cluster.json` (pid, class, port) and `stop` ends exactly those: a pid is signalled only
while its command line is still the JVM this module started (a pid reused since is left alone).

Then every lab command runs there with `--master spark://127.0.0.1:PORT` (`status` prints it): the
driver binds to 127.0.0.1 too (`pipelines.spark`), the jars go to the executors with
`spark.jars`, and the lakehouse is a local path, which every worker of this machine sees. How the
same runs on a cluster of several machines and on Databricks: docs/operations/settings.md.

`kill-worker N` ends worker N and its executors with SIGKILL: what the fault tests do to a
running job (a lost spot instance).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

import pyspark

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
EXECUTOR_CLASS = "org.apache.spark.executor.CoarseGrainedExecutorBackend"
START_SECONDS = 90.0


@dataclass(frozen=True)
class Process:
    """One JVM the cluster started."""

    role: str  # master, worker-1, worker-2, ...
    pid: int
    java_class: str
    port: int
    webui_port: int

    def alive(self) -> bool:
        """Running, and still the JVM started (not a pid reused since). While `spark-class`
        execs into the JVM, the command line reads empty for a moment: alive."""
        if _state(self.pid) in ("", "Z", "X"):
            return False
        command = _cmdline(self.pid)
        return not command or self.java_class in command


@dataclass(frozen=True)
class Cluster:
    """What `start` recorded: the folder and the processes."""

    folder: str
    processes: list[Process]

    @property
    def master(self) -> Process:
        return next(p for p in self.processes if p.role == "master")

    @property
    def url(self) -> str:
        return f"spark://{HOST}:{self.master.port}"

    def workers(self) -> list[Process]:
        return [p for p in self.processes if p.role.startswith("worker-")]

    def state(self) -> dict:
        """The master's own view (its JSON page): alive workers, cores, running apps."""
        with urllib.request.urlopen(f"http://{HOST}:{self.master.webui_port}/json/", timeout=5) as response:
            return json.load(response)


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _state(pid: int) -> str:
    """The process state letter (R, S, Z, ...), "" when there is no such process."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2 :].split(" ", 1)[0]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return probe.getsockname()[1]


def _record(folder: Path) -> Path:
    return folder / "cluster.json"


def load(folder: Path) -> Cluster | None:
    """The cluster recorded in `folder`, or None."""
    path = _record(folder)
    if not path.exists():
        return None
    data = json.loads(path.read_text())
    return Cluster(data["folder"], [Process(**p) for p in data["processes"]])


def _save(cluster: Cluster) -> None:
    path = _record(Path(cluster.folder))
    path.write_text(
        json.dumps({"folder": cluster.folder, "processes": [asdict(p) for p in cluster.processes]}, indent=2)
    )


def environment(folder: Path) -> dict[str, str]:
    """What every JVM of the cluster runs with: loopback only, its logs and work here, the
    project's Python for the executors' Python workers."""
    spark_home = str(Path(pyspark.__file__).parent)
    env = dict(os.environ)
    env.update(
        SPARK_HOME=spark_home,
        SPARK_LOCAL_IP=HOST,
        SPARK_LOCAL_HOSTNAME=HOST,
        SPARK_LOG_DIR=str(folder / "logs"),
        SPARK_WORKER_DIR=str(folder / "work"),
        SPARK_LOCAL_DIRS=str(folder / "tmp"),
        PYSPARK_PYTHON=sys.executable,
        # The master and workers need little heap; the executors get theirs from the driver's settings.
        SPARK_DAEMON_MEMORY="512m",
        # No REST submission server: it would listen on a fixed port (6066) beside the master's.
        SPARK_MASTER_OPTS="-Dspark.master.rest.enabled=false",
    )
    env.pop("SPARK_CONF_DIR", None)
    return env


def _launch(folder: Path, role: str, java_class: str, args: list[str], env: dict[str, str]) -> Process:
    port, webui = _free_port(), _free_port()
    log = (folder / "logs" / f"{role}.out").open("ab")
    command = [str(Path(env["SPARK_HOME"]) / "bin" / "spark-class"), java_class, "--host", HOST]
    command += ["--port", str(port), "--webui-port", str(webui), *args]
    # spark-class ends in `exec java ...`: the pid is the JVM's. Its own session, so that a
    # terminal's Ctrl-C to the caller does not reach it.
    process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return Process(role, process.pid, java_class, port, webui)


def _wait(what: str, ready, processes: list[Process], folder: Path, seconds: float = START_SECONDS) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        dead = [p for p in processes if not p.alive()]
        if dead:
            raise RuntimeError(f"{dead[0].role} exited while starting; see {folder / 'logs' / (dead[0].role + '.out')}")
        with contextlib.suppress(OSError):  # the master's page is not up yet: ask again
            if ready():
                return
        time.sleep(0.5)
    raise RuntimeError(f"{what} not ready after {seconds:.0f} s; see {folder / 'logs'}")


def start(folder: Path, workers: int = 2, cores: int = 1, memory: str = "2g") -> Cluster:
    """Start a master and `workers` workers of `cores` cores and `memory` each; returns the
    cluster once the master sees every worker alive. A cluster already running is returned as it is."""
    running = load(folder)
    if running is not None and all(p.alive() for p in running.processes):
        return running
    if running is not None:
        stop(folder)  # a partial one: clear it first
    for sub in ("logs", "work", "tmp"):
        (folder / sub).mkdir(parents=True, exist_ok=True)
    env = environment(folder)
    master = _launch(folder, "master", MASTER_CLASS, [], env)
    cluster = Cluster(str(folder), [master])
    _save(cluster)  # recorded at once: a failed start is still stopped by `stop`
    try:
        _wait("the master", lambda: cluster.state() is not None, cluster.processes, folder)
        for n in range(1, workers + 1):
            args = ["--cores", str(cores), "--memory", memory, "--work-dir", str(folder / "work" / f"worker-{n}")]
            worker = _launch(folder, f"worker-{n}", WORKER_CLASS, [*args, cluster.url], env)
            cluster = Cluster(str(folder), [*cluster.processes, worker])
            _save(cluster)
        _wait(
            f"{workers} workers",
            lambda: sum(w["state"] == "ALIVE" for w in cluster.state()["workers"]) >= workers,
            cluster.processes,
            folder,
        )
    except BaseException:
        stop(folder)
        raise
    return cluster


def _executors_of(worker: Process) -> list[int]:
    """The executor JVMs a worker started: its children running the executor class (started from
    any of its threads, so found by parent pid, not by the main thread's child list)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            text = stat.read_text()
        except OSError:
            continue
        parent = int(text[text.rindex(")") + 2 :].split()[1])
        pid = int(stat.parent.name)
        if parent == worker.pid and EXECUTOR_CLASS in _cmdline(pid):
            found.append(pid)
    return found


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):  # gone already: nothing to stop
        os.kill(pid, sig)


def kill_worker(folder: Path, n: int) -> list[int]:
    """SIGKILL worker n and its executors; the pids killed. The record keeps the worker (dead)."""
    cluster = load(folder)
    if cluster is None:
        raise RuntimeError(f"no cluster is recorded in {folder}")
    worker = next((w for w in cluster.workers() if w.role == f"worker-{n}"), None)
    if worker is None or not worker.alive():
        raise RuntimeError(f"worker-{n} is not running")
    pids = [worker.pid, *_executors_of(worker)]
    for pid in pids:
        _signal(pid, signal.SIGKILL)
    return pids


def stop(folder: Path, seconds: float = 20.0) -> list[str]:
    """Stop what `start` started (workers first, their executors with them), SIGKILL after
    `seconds`; the roles stopped. Nothing else is signalled."""
    cluster = load(folder)
    if cluster is None:
        return []
    ordered = sorted(cluster.processes, key=lambda p: p.role == "master")
    alive = [p for p in ordered if p.alive()]
    executors = [pid for w in alive if w.role != "master" for pid in _executors_of(w)]
    for p in alive:
        _signal(p.pid, signal.SIGTERM)
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(p.alive() for p in alive):
        time.sleep(0.2)
    for p in alive:
        if p.alive():
            _signal(p.pid, signal.SIGKILL)
    for pid in executors:
        if EXECUTOR_CLASS in _cmdline(pid):
            _signal(pid, signal.SIGKILL)
    _record(folder).unlink(missing_ok=True)
    return [p.role for p in alive]


def status(folder: Path) -> str:
    cluster = load(folder)
    if cluster is None:
        return "no cluster recorded (./lab cluster start)"
    lines = [f"master {cluster.url} (web UI http://{HOST}:{cluster.master.webui_port})"]
    for p in cluster.processes:
        lines.append(f"  {p.role:9} pid {p.pid:7}  {'running' if p.alive() else 'not running'}")
    if cluster.master.alive():
        state = cluster.state()
        alive = [w for w in state["workers"] if w["state"] == "ALIVE"]
        lines.append(
            f"  the master sees {len(alive)} alive workers, {sum(w['cores'] for w in alive)} cores, "
            f"{len(state.get('activeapps', []))} running applications"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="./lab cluster", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--folder", type=Path, default=ROOT / ".cluster", help="logs, work and the record (default .cluster/)"
    )
    commands = parser.add_subparsers(dest="command", required=True)
    begin = commands.add_parser("start", help="start a master and workers on 127.0.0.1")
    begin.add_argument("--workers", type=int, default=2)
    begin.add_argument("--cores", type=int, default=1, help="cores per worker")
    begin.add_argument("--memory", default="2g", help="memory per worker")
    commands.add_parser("stop", help="stop exactly the processes `start` started")
    commands.add_parser("status", help="what runs, and the master URL for --master")
    commands.add_parser("url", help="print the master URL alone")
    kill = commands.add_parser("kill-worker", help="SIGKILL worker N and its executors")
    kill.add_argument("n", type=int)
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    try:
        if args.command == "start":
            if args.workers < 1 or args.cores < 1:
                parser.error("--workers and --cores must be at least 1")
            cluster = start(folder, args.workers, args.cores, args.memory)
            print(f"cluster up: --master {cluster.url}")
        elif args.command == "stop":
            stopped = stop(folder)
            print(f"stopped {', '.join(stopped)}" if stopped else "nothing was running")
        elif args.command == "status":
            print(status(folder))
        elif args.command == "url":
            cluster = load(folder)
            if cluster is None or not cluster.master.alive():
                print("no cluster is running (./lab cluster start)", file=sys.stderr)
                return 1
            print(cluster.url)
        else:
            print(f"killed pids {kill_worker(folder, args.n)}")
    except RuntimeError as error:
        print(f"./lab cluster: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
