"""Benchmark (not a test): SpiderCastM in Spark against the tests' plain-Python oracle, one run.

For each case it draws an ICDCS'16 synthetic workload (the generator `ingest --source synthetic`
uses), runs `overlay.design.spidercast.spidercast_m` on it in a local session with the lab's
default settings (timed from the call to the collected links; Spark already up), then the oracle
(`tests/spidercast_m_oracle.py`) on the same subscriptions, and checks that both give the same
links in the same rounds and order. Ratios are oracle seconds over Spark seconds. The
subscriptions are collected once to the driver for the oracle: a benchmark's deliberate step.

Usage:
  .venv/bin/python benchmarks/spidercast.py [--cases expo-300,expo-1k] [--max-degree 4]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from spidercast_m_oracle import spidercast_m_oracle  # noqa: E402

from overlay import schema as S  # noqa: E402
from overlay.design.spidercast import SpiderCastParams, spidercast_m  # noqa: E402
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance  # noqa: E402
from pipelines.config import LabSettings, apply_overrides  # noqa: E402
from pipelines.spark import build_local_session, task_slots  # noqa: E402

# ICDCS'16 Figs. 6-9 draw 20-600 topics per node; expo-300 is a smaller workload of the same kind.
CASES = {
    "expo-300": SyntheticSpec(dist="expo", nodes=300, topics=300, min_subs=20, max_subs=200, seed=1),
    "expo-1k": SyntheticSpec(dist="expo", nodes=1000, topics=1000, min_subs=20, max_subs=600, seed=1),
    "unif-1k": SyntheticSpec(dist="unif", nodes=1000, topics=1000, min_subs=20, max_subs=600, seed=1),
    "expo-3k": SyntheticSpec(dist="expo", nodes=3000, topics=1000, min_subs=20, max_subs=600, seed=1),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="expo-300,expo-1k", help=f"comma-separated, of {', '.join(CASES)}")
    parser.add_argument("--max-degree", type=int, default=4, help="d (ICDCS'16 Figs. 6 and 8: 4)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    names = args.cases.split(",")
    unknown = [n for n in names if n not in CASES]
    if unknown:
        parser.error(f"unknown cases {unknown}; known: {', '.join(CASES)}")

    with tempfile.TemporaryDirectory() as root:
        spark = build_local_session(apply_overrides(LabSettings(), {"lakehouse": root + "/lakehouse"}))
        params = SpiderCastParams(max_degree=args.max_degree, seed=args.seed, parallelism=task_slots(spark))
        print("case      nodes  subscriptions  rounds  links  spark_s  oracle_s  oracle/spark  same")
        for name in names:
            subscriptions = synthetic_instance(spark, CASES[name]).subscriptions
            subs: dict[int, set[int]] = {}
            for row in subscriptions.toPandas().itertuples(index=False):
                subs.setdefault(int(getattr(row, S.NODE_ID)), set()).add(int(getattr(row, S.TOPIC_ID)))
            clock = time.monotonic()
            rows = spidercast_m(subscriptions, params).orderBy(S.ADDED_ORDER).collect()
            spark_seconds = time.monotonic() - clock
            links = [(r[S.U], r[S.V], r[S.ROUND]) for r in rows]
            clock = time.monotonic()
            expected = spidercast_m_oracle(subs, args.max_degree, args.seed)
            oracle_seconds = time.monotonic() - clock
            print(
                f"{name:<9} {len(subs):>5}  {sum(map(len, subs.values())):>13,}  {max(r for *_, r in links):>6}  "
                f"{len(links):>5}  {spark_seconds:>7.1f}  {oracle_seconds:>8.1f}  {oracle_seconds / spark_seconds:>12.2f}  "
                f"{links == expected}",
                flush=True,
            )
        spark.stop()


if __name__ == "__main__":
    main()
