"""Benchmark (not a test): thirty simulated days of the daily workflow on one lakehouse.

Day 0 runs `overlay_refresh` (the README's main job: ingest fb-1k, MinMaxODA, GPM, RandomM, two
small-world overlays, evaluate, route, register, report). Each later day first churns the
instance in place (`ingest --source churn --days 1`, standing for the day's new subscription
files: the workflow's ingest step takes a churned day of its source as today's version), then
runs `overlay_refresh` with the day as its tag (new run ids; GPM designed from yesterday's
overlay, fresh every `rebuild_every` days), then `maintain` (Delta OPTIMIZE and VACUUM).

Each day is one process, as a scheduled job is. In it, after the workflow, it times `runs` and
`report` in the warm session (what a reader of the lakehouse waits for; the best of three runs
each), then reads back every day's run still kept (status complete, stored links = the run's
`edges`), then maintains. It appends one JSON line per day to `<lakehouse>.days.jsonl` and
prints the table at the end: the lakehouse's size and files, and the seconds of each part,
against day 1.

The retention settings are the lab's own (`conf/lab.yaml`) with three changes, written to
`<lakehouse>.settings.yaml` and passed as `--config`: `history.keep_versions` (default 3: today's
version, and the two the day-two design and the report may still read), and the two windows,
given in simulated time because simulated days pass in minutes. VACUUM keeps what the last
`--retain-hours` (default 0) need, instead of the 168 hours of real days (with nothing else
reading the lakehouse meanwhile, which is what makes 0 safe here); the Delta log keeps
`--log-retain-hours` (default 24). Delta expires log files by their modification time, and
never those of the current calendar day, so after each day the benchmark moves every file's
modification time 24 hours back: what Delta sees of the lakehouse is what 30 real days leave.
Maintenance deletes the runs built on the versions the ingest dropped (`maintain`).

Usage:
  .venv/bin/python benchmarks/thirty_days.py [--lakehouse DIR] [--days 30] [--rate 0.01] [--seed 1]
      [--keep-versions 3] [--retain-hours 0] [--log-retain-hours 24] [--no-maintain]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

INSTANCE = "fb-1k"
DAY_NS = 24 * 3600 * 10**9


def folder_size(path: Path) -> tuple[int, int, int]:
    """(bytes, data files, Delta log files) under the lakehouse."""
    files = [p for p in path.rglob("*") if p.is_file()]
    logs = sum(1 for p in files if "_delta_log" in p.parts)
    data = sum(1 for p in files if p.suffix == ".parquet" and "_delta_log" not in p.parts)
    return sum(p.stat().st_size for p in files), data, logs


def write_settings(args: argparse.Namespace) -> Path:
    """The lab's settings with the benchmark's retention (see the module doc)."""
    import yaml

    settings = yaml.safe_load((ROOT / "conf" / "lab.yaml").read_text())
    settings["history"]["keep_versions"] = args.keep_versions
    settings["maintenance"] |= {"retain_hours": args.retain_hours, "log_retain_hours": args.log_retain_hours}
    path = Path(args.lakehouse).with_suffix(".settings.yaml")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(settings))
    return path


def age_by_a_day(path: Path) -> None:
    """Every file's modification time 24 hours back: a night passes for Delta's log expiry."""
    for item in path.rglob("*"):
        if item.is_file():
            stat = item.stat()
            os.utime(item, ns=(stat.st_atime_ns - DAY_NS, stat.st_mtime_ns - DAY_NS))


def _current_day(lakehouse_dir: str) -> int:
    """The churn day of the instance's current version (0: the ingest itself)."""
    from deltalake import DeltaTable

    instances = DeltaTable(f"{lakehouse_dir}/instances").to_pandas()
    params = json.loads(instances.loc[instances.instance == INSTANCE, "params"].iloc[0])
    return int(params.get("day", 0))


def one_day(args: argparse.Namespace) -> dict:
    """Run day `args.day` in this process and return its figures."""
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from overlay import schema as S
    from pipelines.cli import main
    from pipelines.lakehouse import Lakehouse

    lakehouse_dir, day, tag = args.lakehouse, args.day, f"day{args.day:02d}"
    base = ["--lakehouse", lakehouse_dir, "--config", str(write_settings(args)), "-q"]
    figures: dict = {"day": day}

    def timed(name: str, *argv: str, repeat: int = 1) -> None:
        """The command's seconds (the best of `repeat` runs: a reader's wait of a second or two
        is otherwise at the mercy of one GC pause)."""
        best = None
        for _ in range(repeat):
            clock = time.monotonic()
            code = main([*base, *argv])
            best = min(best or float("inf"), time.monotonic() - clock)
            if code:
                raise SystemExit(f"day {day}: {' '.join(argv)} exited {code}")
        figures[name] = round(best, 2)

    if day > 0 and _current_day(lakehouse_dir) < day:  # a rerun of a day churns it once
        timed("churn_s", "ingest", "--instance", INSTANCE, "--source", "churn", "--days", "1",
              "--rate", str(args.rate), "--seed", str(args.seed))  # fmt: skip
    report_dir = str(Path(lakehouse_dir).with_suffix(".reports") / tag)
    timed("refresh_s", "workflow", "overlay_refresh", "--param", f"tag={tag}", "--param", f"report_dir={report_dir}")
    timed("runs_s", "runs", repeat=3)
    timed("report_s", "report", "--out", report_dir, repeat=3)

    lakehouse = Lakehouse(SparkSession.getActiveSession(), lakehouse_dir)
    day_runs = F.col(S.RUN_ID).rlike(r"\.day\d+$")
    runs = lakehouse.read(S.OVERLAY_RUNS).filter(day_runs)
    stored = lakehouse.read(S.OVERLAY_EDGES).groupBy(S.RUN_ID).count()
    checked = runs.join(stored, S.RUN_ID, "left").select(S.RUN_ID, S.STATUS, S.EDGES, "count").collect()  # 7 a day
    bad = [r[S.RUN_ID] for r in checked if r[S.STATUS] != S.COMPLETE or (r["count"] or 0) != r[S.EDGES]]
    routing = lakehouse.read(S.ROUTING_RUNS).filter(F.col(S.RUN_ID).rlike(r"\.day\d+$"))
    bad += [r[S.ROUTING_RUN_ID] for r in routing.filter(F.col(S.STATUS) != S.COMPLETE).collect()]
    figures["runs_read_back"] = len(checked) + routing.count()
    if bad:
        raise SystemExit(f"day {day}: runs not complete or not read back: {bad}")
    if args.maintain:
        timed("maintain_s", "maintain")
    figures["runs_kept"] = lakehouse.read(S.OVERLAY_RUNS).filter(day_runs).count()
    age_by_a_day(Path(lakehouse_dir))
    size, data, logs = folder_size(Path(lakehouse_dir))
    figures |= {"lakehouse_mb": round(size / 2**20, 1), "data_files": data, "log_files": logs}
    return figures


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lakehouse", default="/tmp/overlay-bench/thirty-days")
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--rate", type=float, default=0.01)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--keep-versions", type=int, default=3)
    parser.add_argument("--retain-hours", type=float, default=0.0)
    parser.add_argument("--log-retain-hours", type=int, default=24)
    parser.add_argument("--no-maintain", dest="maintain", action="store_false")
    parser.add_argument("--day", type=int, help=argparse.SUPPRESS)  # one day, in this process
    args = parser.parse_args()
    ledger = Path(args.lakehouse).with_suffix(".days.jsonl")
    if args.day is not None:
        figures = one_day(args)
        with ledger.open("a") as out:
            out.write(json.dumps(figures) + "\n")
        return
    done = {json.loads(line)["day"] for line in ledger.read_text().splitlines()} if ledger.exists() else set()
    for day in range(args.days + 1):
        if day in done:  # a rerun continues after the last finished day
            continue
        argv = [sys.executable, __file__, "--day", str(day), "--lakehouse", args.lakehouse, "--rate", str(args.rate)]
        argv += ["--seed", str(args.seed), "--keep-versions", str(args.keep_versions)]
        argv += ["--retain-hours", str(args.retain_hours), "--log-retain-hours", str(args.log_retain_hours)]
        argv += [] if args.maintain else ["--no-maintain"]
        subprocess.run(argv, check=True, cwd=ROOT)
    rows = [json.loads(line) for line in ledger.read_text().splitlines()]
    first = next(r for r in rows if r["day"] == 1)
    from benchmarks.design_greedy import print_markdown

    print_markdown(rows)
    print()
    print_markdown(
        [
            {
                "measure": f"{name}, largest day / day 1",
                "value": f"{max(r[name] for r in rows if r['day'] >= 1) / first[name]:.2f}",
            }
            for name in ("lakehouse_mb", "data_files", "runs_s", "report_s", "refresh_s")
        ]
    )


if __name__ == "__main__":
    main()
