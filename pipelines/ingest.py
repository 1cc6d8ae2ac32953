"""The ingest job: build an instance from one of three sources and store it in the lakehouse."""

from __future__ import annotations

import argparse
import logging
import os
import re
import time
from dataclasses import dataclass
from importlib.resources import files as package_files
from pathlib import Path

from pyspark.sql import Row, SparkSession

from overlay import schema as S
from overlay.errors import InputError
from overlay.instance import InstanceFrames
from overlay.instance.churn import ChurnSpec
from overlay.instance.keyed import SubscriptionsFileSpec, subscriptions_file_instance
from overlay.instance.social import SocialSpec, social_instance
from overlay.instance.synthetic import SyntheticSpec, synthetic_instance
from overlay.lineage import LOCAL, Lineage
from overlay.progress import OnStep
from pipelines.config import LabSettings
from pipelines.instance_churn import ChurnRequest, run_churn
from pipelines.lakehouse import Lakehouse, Retention
from pipelines.progress import Progress

log = logging.getLogger(__name__)
SOURCES = ("synthetic", "social", "subscriptions", "churn")
INSTANCE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")

# Graphs shipped inside the package (so a wheel task on a cluster has them too), with their
# orientation: Facebook friendships are undirected; in the Twitter file `a b` means b follows a.
DATASETS = {
    "facebook": ("facebook_combined.txt.gz", False, False),
    "twitter": ("twitter_bofa_careers.edges.gz", True, True),
}


def dataset_path(name: str) -> str:
    return str(package_files("pipelines") / "datasets" / DATASETS[name][0])


SUMMARY_COLUMNS = (
    S.INSTANCE,
    S.SOURCE,
    S.NODES,
    S.TOPICS,
    S.SUBSCRIPTIONS,
    S.ROWS_READ,
    S.ROWS_ACCEPTED,
    S.REJECTED,
    S.DUPLICATES,
    S.UNSAMPLED,
    S.SINGLE_SUBSCRIBER_TOPICS,
)


def _require(args: argparse.Namespace, source: str, *names: str) -> None:
    missing = ["--" + n.replace("_", "-") for n in names if getattr(args, n) is None]
    if missing:
        raise InputError(f"--source {source} needs {', '.join(missing)}")


SPELLED = {"from_instance": "--from"}  # flags whose destination is not their spelling


def _reject_unused(args: argparse.Namespace, source: str, *names: str) -> None:
    used = [SPELLED.get(n, "--" + n.replace("_", "-")) for n in names if getattr(args, n) not in (None, False)]
    if used:
        verb = "does" if len(used) == 1 else "do"
        raise InputError(f"{', '.join(used)} {verb} not apply to --source {source}")


SourceSpec = SyntheticSpec | SocialSpec | SubscriptionsFileSpec
CHURN_FLAGS = ("from_instance", "days", "rate", "node_rate", "attachment")


def check_input_path(path: str, flag: str = "--path") -> None:
    """A local input that is not there is refused before Spark starts (Spark would log a Hadoop
    stack trace first); URIs (s3://, dbfs:/, abfss://...) are left for Spark to read."""
    if re.match(r"^[A-Za-z][A-Za-z0-9+.-]*:/", path) and not path.startswith("file:"):
        return
    local = Path(path.removeprefix("file://").removeprefix("file:")).expanduser()
    if not local.exists():
        raise InputError(f"{flag} {path}: no such file or folder")


def check_instance_name(name: str) -> None:
    if not INSTANCE_NAME.match(name):
        raise InputError(
            f"instance name '{name}' is not allowed: use letters, digits, '_', '.', '-' "
            "(at most 128, starting with a letter or digit)"
        )


def source_spec(args: argparse.Namespace, settings: LabSettings) -> SourceSpec | ChurnRequest:
    """Check the arguments of one source and turn them into its validated spec (no Spark yet)."""
    check_instance_name(args.instance)
    if args.source == "churn":
        return churn_request(args)
    _reject_unused(args, args.source, *CHURN_FLAGS)
    if args.source == "synthetic":
        _require(args, "synthetic", "dist", "nodes", "topics", "min_subs", "max_subs", "seed")
        _reject_unused(
            args, "synthetic", "path", "dataset", "directed", "reverse", "sample_bfs", "feed_seeds", "feed_publishers"
        )
        if args.dist != "zipf" and args.alpha != 2.0:
            raise InputError("--alpha only applies to --dist zipf")
        if args.dist != "expo" and args.expo_rate != 10.0:
            raise InputError("--expo-rate only applies to --dist expo")
        spec: SourceSpec = SyntheticSpec(
            dist=args.dist,
            nodes=args.nodes,
            topics=args.topics,
            min_subs=args.min_subs,
            max_subs=args.max_subs,
            seed=args.seed,
            alpha=args.alpha,
            expo_rate=args.expo_rate,
        )
    elif args.source == "social":
        _reject_unused(args, "social", "dist", "nodes", "topics", "min_subs", "max_subs")
        path, directed, reverse = args.path, args.directed, args.reverse
        if args.dataset is not None:
            if path is not None or directed or reverse:
                raise InputError(
                    "--dataset names a shipped graph with its orientation: give no --path, --directed or --reverse"
                )
            path, (_, directed, reverse) = dataset_path(args.dataset), DATASETS[args.dataset]
        if path is None:
            raise InputError("--source social needs --path or --dataset")
        if args.sample_bfs is not None and args.seed is None:
            raise InputError("--sample-bfs needs --seed (the sample depends on it)")
        if args.feed_seeds is not None and args.seed is None:
            raise InputError("--feed-seeds needs --seed (the sample depends on it)")
        spec = SocialSpec(
            path=path,
            directed=directed,
            reverse=reverse,
            sample_bfs=args.sample_bfs,
            seed=args.seed or 0,
            bfs_seed_count=settings.ingest.bfs_seed_count,
            feed_seeds=args.feed_seeds,
            feed_publishers=args.feed_publishers,
        )
    else:
        _require(args, "subscriptions", "path")
        _reject_unused(
            args,
            "subscriptions",
            "dist",
            "nodes",
            "topics",
            "min_subs",
            "max_subs",
            "dataset",
            "directed",
            "reverse",
            "sample_bfs",
            "seed",
            "feed_seeds",
            "feed_publishers",
        )
        spec = SubscriptionsFileSpec(path=args.path)
    spec.validate()
    if not isinstance(spec, SyntheticSpec):
        check_input_path(spec.path)  # after the flags: a wrong combination is the first thing to fix
    return spec


def churn_request(args: argparse.Namespace) -> ChurnRequest:
    """`--source churn`: days of churn on the current version of --from (default: --instance)."""
    _require(args, "churn", "days", "rate", "seed")
    _reject_unused(
        args,
        "churn",
        "dist",
        "nodes",
        "topics",
        "min_subs",
        "max_subs",
        "path",
        "dataset",
        "directed",
        "reverse",
        "sample_bfs",
        "feed_seeds",
        "feed_publishers",
    )
    if args.alpha != 2.0 or args.expo_rate != 10.0:
        raise InputError("--alpha and --expo-rate do not apply to --source churn")
    origin = args.from_instance or args.instance
    check_instance_name(origin)
    spec = ChurnSpec(rate=args.rate, seed=args.seed, node_rate=args.node_rate or 0.0, attachment=args.attachment)
    request = ChurnRequest(args.instance, origin, args.days, spec)
    request.check()
    return request


def build_instance(
    spark: SparkSession, spec: SourceSpec, on_step: OnStep | None = None, lineage: Lineage = LOCAL
) -> InstanceFrames:
    """The instance frames of a source; `on_step` hears of the BFS sample's levels (social);
    `lineage`: how its intermediate frames are kept (the lakehouse's: reliable on a cluster)."""
    if isinstance(spec, SyntheticSpec):
        return synthetic_instance(spark, spec, lineage)
    if isinstance(spec, SocialSpec):
        return social_instance(spark, spec, on_step, lineage)
    return subscriptions_file_instance(spark, spec, lineage)


def _file_size(spec: SourceSpec) -> str:
    """` (12.3 MB)` for a source read from one local file (a stat: free), else nothing."""
    path = getattr(spec, "path", None)
    try:
        size = os.path.getsize(path) if path and os.path.isfile(path) else None
    except OSError:
        size = None
    if size is None:
        return ""
    for unit in ("bytes", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f" ({size:,} {unit})" if unit == "bytes" else f" ({size:.1f} {unit})"
        size /= 1024
    return ""


@dataclass(frozen=True)
class IngestRequest:
    """A checked ingest: its source and the versions it keeps (`history` in the settings)."""

    spec: SourceSpec | ChurnRequest
    kept: Retention


def ingest_request(args: argparse.Namespace, settings: LabSettings) -> IngestRequest:
    kept = Retention(versions=settings.history.keep_versions, days=settings.history.keep_days)
    return IngestRequest(source_spec(args, settings), kept)


def run(
    spark: SparkSession,
    lakehouse: Lakehouse,
    instance: str,
    spec: SourceSpec,
    kept: Retention | None = None,
    progress: bool = True,
) -> Row:
    """Build and store one instance. `progress`: the source's size when it is one local file,
    then a step per BFS level (a sampled social graph), for the rows read, and per table stored.
    A churn request stores its days (`pipelines.instance_churn`); the last day's row returns."""
    if isinstance(spec, ChurnRequest):
        return run_churn(spark, lakehouse, spec, kept, progress)[-1]
    started = time.monotonic()
    log.info("ingest %s: building from %s%s", instance, spec, _file_size(spec))
    with Progress(f"ingest {instance}", enabled=progress, logger=log) as bar:
        frames = build_instance(spark, spec, bar.on_step, lakehouse.lineage)
        t = frames.tally
        bar.step(
            f"read: {t.read} rows = {t.accepted} accepted + {t.rejected} rejected + {t.duplicates} duplicates "
            f"+ {t.unsampled} unsampled",
            read=t.read,
        )
        row = lakehouse.replace_instance(instance, frames, kept, on_step=bar.on_step)
    log.info("ingest %s: stored in %.1fs", instance, time.monotonic() - started)
    return row
