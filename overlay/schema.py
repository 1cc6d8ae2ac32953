"""Table names, column names and schemas: the one place they are declared.

Names given in the issues are a contract: columns may be added, none renamed. Every library
function and every job refers to these constants instead of spelling names out.

Each ingest stamps its rows with an `ingest_id`; the `instances` row names the current one (see
`pipelines.lakehouse`). Instance tables are partitioned by (`instance`, `ingest_id`): one live
partition per instance, so replacing one instance never conflicts with a write to another, and
dropping an old version is a metadata-only delete.
"""

from __future__ import annotations

from dataclasses import dataclass

from pyspark.sql.types import (
    ArrayType,
    BooleanType,
    DoubleType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

# Columns shared by several tables.
INSTANCE = "instance"
INGEST_ID = "ingest_id"
NODE_ID = "node_id"
TOPIC_ID = "topic_id"
KEY = "key"
ID = "id"
RECORD = "record"
REASON = "reason"
SOURCE_FILE = "source_file"
LINE = "line"

# `instances` columns.
SOURCE = "source"
PARAMS = "params"
NODES = "nodes"
TOPICS = "topics"
SUBSCRIPTIONS = "subscriptions"
ROWS_READ = "rows_read"
ROWS_ACCEPTED = "rows_accepted"
REJECTED = "rejected"
DUPLICATES = "duplicates"
UNSAMPLED = "unsampled"
SUBSCRIBED_NODES = "subscribed_nodes"
SUBSCRIBED_TOPICS = "subscribed_topics"
SINGLE_SUBSCRIBER_TOPICS = "single_subscriber_topics"
CREATED_AT = "created_at"

# Working columns of the social-graph loader (not stored).
SRC_KEY = "src_key"
DST_KEY = "dst_key"
LEVEL = "level"


@dataclass(frozen=True)
class TableSpec:
    """A Delta table of the lakehouse: its name (also its folder), schema and partitioning."""

    name: str
    schema: StructType
    partition_by: tuple[str, ...]
    description: str

    @property
    def columns(self) -> list[str]:
        return [field.name for field in self.schema.fields]


def _fields(*spec: tuple[str, object, bool]) -> StructType:
    return StructType([StructField(name, dtype, nullable) for name, dtype, nullable in spec])


INSTANCES = TableSpec(
    name="instances",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (INGEST_ID, StringType(), False),
        (SOURCE, StringType(), False),
        (PARAMS, StringType(), False),
        (NODES, LongType(), False),
        (TOPICS, LongType(), False),
        (SUBSCRIPTIONS, LongType(), False),
        (ROWS_READ, LongType(), False),
        (ROWS_ACCEPTED, LongType(), False),
        (REJECTED, LongType(), False),
        (DUPLICATES, LongType(), False),
        (UNSAMPLED, LongType(), False),
        (SUBSCRIBED_NODES, LongType(), False),
        (SUBSCRIBED_TOPICS, LongType(), False),
        (SINGLE_SUBSCRIBER_TOPICS, LongType(), False),
        (CREATED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per instance: where it came from (source, params as JSON), its size, and how "
        "the input rows reconcile: rows_read = rows_accepted + rejected + duplicates + unsampled."
    ),
)

SUPERSEDED_AT = "superseded_at"

INSTANCE_VERSIONS = TableSpec(
    name="instance_versions",
    schema=StructType([*INSTANCES.schema.fields, StructField(SUPERSEDED_AT, TimestampType(), True)]),
    partition_by=(),
    description=(
        "Every stored version of every instance (its `instances` row as it was), kept after a "
        "re-ingest so the runs built on it stay readable; `superseded_at`: when a newer version "
        "became current (null for the current one). Ingest drops versions beyond the retention "
        "setting (`history` in conf/lab.yaml) with their rows."
    ),
)

SUBSCRIPTIONS_TABLE = TableSpec(
    name="subscriptions",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (NODE_ID, LongType(), False),
        (TOPIC_ID, LongType(), False),
        (INGEST_ID, StringType(), False),
    ),
    partition_by=(INSTANCE, INGEST_ID),
    description="Interest I(v, t): one row per (node, topic) subscription, dense 0-based ids.",
)

NODE_KEYS = TableSpec(
    name="node_keys",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (KEY, StringType(), False),
        (ID, LongType(), False),
        (INGEST_ID, StringType(), False),
    ),
    partition_by=(INSTANCE, INGEST_ID),
    description="The user's node identifier for every dense node id.",
)

TOPIC_KEYS = TableSpec(
    name="topic_keys",
    schema=NODE_KEYS.schema,
    partition_by=(INSTANCE, INGEST_ID),
    description="The user's topic identifier for every dense topic id.",
)

REJECTED_SUBSCRIPTIONS = TableSpec(
    name="rejected_subscriptions",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (RECORD, StringType(), True),
        (REASON, StringType(), False),
        (SOURCE_FILE, StringType(), True),
        (LINE, LongType(), True),
        (INGEST_ID, StringType(), False),
    ),
    partition_by=(INSTANCE, INGEST_ID),
    description="Input rows that were not used, with the raw record, why, and where it was.",
)

INSTANCE_TABLES = (SUBSCRIPTIONS_TABLE, NODE_KEYS, TOPIC_KEYS, REJECTED_SUBSCRIPTIONS)

# Overlays ---------------------------------------------------------------------------------

RUN_ID = "run_id"
ALGORITHM = "algorithm"
STATUS = "status"
STARTED_AT = "started_at"
FINISHED_AT = "finished_at"
SECONDS = "seconds"
SECONDS_SETUP, SECONDS_ROUNDS = "seconds_setup", "seconds_rounds"
SECONDS_READ = "seconds_read"
SECONDS_COMMITS, SECONDS_EVALUATE = "seconds_commits", "seconds_evaluate"
REGIME, SPARK_JOBS, DELTA_COMMITS = "regime", "spark_jobs", "delta_commits"
SPARK_SECONDS, CANDIDATE_ROWS, OPEN_NODES = "spark_seconds", "candidate_rows", "open_nodes"
MESSAGE = "message"
U = "u"
V = "v"
ADDED_ORDER = "added_order"
ROUND = "round"
COMPONENT = "component"
EDGES = "edges"
AVG_DEGREE = "avg_degree"
MIN_DEGREE = "min_degree"
MAX_DEGREE = "max_degree"
TCC_EMPTY = "tcc_empty"
TCC = "tcc"
TCC_COMPLETE = "tcc_complete"
TCO_SUPPORT = "tco_support"
TOPICS_CONNECTED = "topics_connected"
DIAMETER_MAX = "diameter_max"
DIAMETER_AVG = "diameter_avg"
DIAMETER_METHOD = "diameter_method"
COMPUTED_AT = "computed_at"
GAIN = "gain"
ATTEMPT = "attempt"
PHASE = "phase"
EDGES_ADDED = "edges_added"
CANDIDATES = "candidates"
REEVALUATIONS = "reevaluations"
NEXT_PHASE = "next_phase"
FINISHED = "finished"
POSITION = "position"
FINGER = "finger"
CHOSEN_BY = "chosen_by"

RUNNING, COMPLETE, FAILED = "running", "complete", "failed"
# A run being deleted (`runs delete`): readers no longer see it; its rows are going.
DELETED = "deleted"

OVERLAY_RUNS = TableSpec(
    name="overlay_runs",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (INGEST_ID, StringType(), False),
        (ALGORITHM, StringType(), False),
        (PARAMS, StringType(), False),
        (STATUS, StringType(), False),
        (STARTED_AT, TimestampType(), False),
        (FINISHED_AT, TimestampType(), True),
        (SECONDS, DoubleType(), True),
        (EDGES, LongType(), True),
        (ROWS_READ, LongType(), True),
        (REJECTED, LongType(), True),
        (DUPLICATES, LongType(), True),
        (TCO_SUPPORT, DoubleType(), True),
        (MESSAGE, StringType(), True),
        (ATTEMPT, StringType(), True),
        (SECONDS_SETUP, DoubleType(), True),
        (SECONDS_ROUNDS, DoubleType(), True),
        (SECONDS_COMMITS, DoubleType(), True),
        (SECONDS_EVALUATE, DoubleType(), True),
        (REGIME, StringType(), True),
        (SPARK_JOBS, LongType(), True),
        (DELTA_COMMITS, LongType(), True),
        (SECONDS_READ, DoubleType(), True),
    ),
    partition_by=(),
    description=(
        "One row per overlay run (designed, imported or simulated): its instance version, "
        "algorithm, parameters, status (running / complete / failed / deleted), timing and summary "
        "figures. `attempt` names the process that owns the run (`pipelines.ledger`). `seconds` is "
        "the last attempt's time from claiming the run to completing it; of it, a greedy run spent "
        "`seconds_setup` before its first round (driver copy, shared-topic counts; of it "
        "`seconds_read` reading the instance into the driver copy), "
        "`seconds_rounds` in rounds, `seconds_commits` storing them and `seconds_evaluate` on "
        "the check and the quality metrics. `regime`: where a greedy ran (memory: compiled in "
        "the driver process; rounds: batched Spark iterations), or a gossip simulation's cycles "
        "(memory: in the driver process; spark: a Spark job a cycle). `spark_jobs` and `delta_commits`: "
        "what the last attempt cost in Spark jobs and Delta commits, its completing commit included "
        "(its jobs not)."
    ),
)

OVERLAY_EDGES = TableSpec(
    name="overlay_edges",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (U, LongType(), False),
        (V, LongType(), False),
        (ADDED_ORDER, LongType(), False),
        (ROUND, IntegerType(), False),
        (GAIN, LongType(), True),
    ),
    partition_by=(),
    description=(
        "Undirected overlay links (u < v, dense node ids) in the order they were added; `gain` is "
        "the number of TCCs the link merged when a greedy design added it (null otherwise)."
    ),
)

OVERLAY_ROUNDS = TableSpec(
    name="overlay_rounds",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (PHASE, IntegerType(), False),
        (EDGES_ADDED, LongType(), False),
        (CANDIDATES, LongType(), False),
        (REEVALUATIONS, LongType(), False),
        (EDGES, LongType(), False),
        (TCC, LongType(), False),
        (TCO_SUPPORT, DoubleType(), False),
        (SECONDS, DoubleType(), False),
        (NEXT_PHASE, IntegerType(), False),
        (FINISHED, BooleanType(), False),
        (COMPUTED_AT, TimestampType(), False),
        (SPARK_SECONDS, DoubleType(), True),
        (CANDIDATE_ROWS, LongType(), True),
        (OPEN_NODES, LongType(), True),
        (ROWS_READ, LongType(), True),
        (REGIME, StringType(), True),
    ),
    partition_by=(),
    description=(
        "One row per completed round of a design run: the phase (degree limit D; 0 when the "
        "algorithm has none), edges added, candidates sampled and gains recomputed, the running "
        "totals (edges, TCC, TcoSuppR) and seconds (of which `spark_seconds` in the round's Spark job), "
        "the rows of the candidate table (`candidate_rows`, at its last full pass) and, when the round "
        "read only the rows between the nodes still open in its phase, how many (`open_nodes`), and "
        "the rows its pass read (`rows_read`), and the regime that ran it (memory or rounds). "
        "A round exists once its edges are stored."
    ),
)

REJECTED_OVERLAY_EDGES = TableSpec(
    name="rejected_overlay_edges",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (RECORD, StringType(), True),
        (REASON, StringType(), False),
        (SOURCE_FILE, StringType(), True),
        (LINE, LongType(), True),
    ),
    partition_by=(),
    description="Imported overlay rows not used (unknown key, self-loop, duplicate edge), and why.",
)

TOPIC_COMPONENTS = TableSpec(
    name="topic_components",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (TOPIC_ID, LongType(), False),
        (NODE_ID, LongType(), False),
        (COMPONENT, LongType(), False),
    ),
    partition_by=(),
    description=(
        "The topic-connected components: for every subscription (topic, node) of the run's "
        "instance, the smallest node id of its component in the subgraph G(t) of the overlay."
    ),
)

OVERLAY_METRICS = TableSpec(
    name="overlay_metrics",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (NODES, LongType(), False),
        (EDGES, LongType(), False),
        (AVG_DEGREE, DoubleType(), False),
        (MIN_DEGREE, LongType(), False),
        (MAX_DEGREE, LongType(), False),
        (TCC_EMPTY, LongType(), False),
        (TCC, LongType(), False),
        (TCC_COMPLETE, LongType(), False),
        (TCO_SUPPORT, DoubleType(), False),
        (SUBSCRIBED_TOPICS, LongType(), False),
        (TOPICS_CONNECTED, LongType(), False),
        (DIAMETER_MAX, LongType(), True),
        (DIAMETER_AVG, DoubleType(), True),
        (DIAMETER_METHOD, StringType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "Quality of one run's overlay: degrees, TCC counts, TcoSuppR (ICDCS'16 eq. 35), and topic "
        "diameters (largest and average over topics with two or more subscribers; how computed; "
        "null when not computed, method 'skipped')."
    ),
)

# kTCO validity (PODC'13 Def. 1; `overlay.connectivity`) -------------------------------------
K = "k"
SUBSCRIBERS = "subscribers"
CONNECTIVITY = "connectivity"
K_CONNECTED = "k_connected"
K_CONNECTED_TOPICS = "k_connected_topics"
SHARE = "share"
IS_KTCO = "is_ktco"

TOPIC_CONNECTIVITY = TableSpec(
    name="topic_connectivity",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (K, IntegerType(), False),
        (TOPIC_ID, LongType(), False),
        (SUBSCRIBERS, LongType(), False),
        (EDGES, LongType(), False),
        (CONNECTIVITY, IntegerType(), False),
        (K_CONNECTED, BooleanType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "Per run, k and subscribed topic: the topic's subscribers, the links inside G(t), its "
        "vertex connectivity up to k (min(kappa, k); a clique on n counts n - 1), and whether it "
        "is fine for a kTCO (one subscriber, a clique of at most k, or kappa >= k)."
    ),
)

OVERLAY_KTCO = TableSpec(
    name="overlay_ktco",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (K, IntegerType(), False),
        (TOPICS, LongType(), False),
        (K_CONNECTED_TOPICS, LongType(), False),
        (SHARE, DoubleType(), False),
        (IS_KTCO, BooleanType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "Per run and k: how many subscribed topics are fine for a kTCO, their share, and whether "
        "the overlay is a kTCO (every topic fine). Evaluating another k adds a row."
    ),
)

RING = TableSpec(
    name="ring",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (NODE_ID, LongType(), False),
        (POSITION, LongType(), False),
    ),
    partition_by=(),
    description=(
        "The ring of a small-world run: every node's position 0..n-1, its small-world id (BeaConvey section 3.1)."
    ),
)

FINGERS = TableSpec(
    name="fingers",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (NODE_ID, LongType(), False),
        (PHASE, IntegerType(), False),
        (FINGER, LongType(), False),
        (CHOSEN_BY, StringType(), True),
    ),
    partition_by=(),
    description=(
        "The directed fingers of a small-world run: node_id's finger in phase i (clockwise distance "
        "in [2^i, 2^(i+1))), k = ceil(log2 n) per node; phase 0 is the ring successor. `chosen_by` "
        "says which rule picked it (ring, gswico, chord, random, fill)."
    ),
)

# Routing ----------------------------------------------------------------------------------

ROUTING_RUN_ID = "routing_run_id"
PROTOCOL = "protocol"
PUBLICATIONS = "publications"
SEED = "seed"
PUB_ID = "pub_id"
PUBLISHER = "publisher"
RENDEZVOUS = "rendezvous"
HOPS = "hops"
RECEIVED = "received"
SENT = "sent"
PURE_FORWARDS = "pure_forwards"
DELIVERED = "delivered"
DELIVERIES = "deliveries"
EXPECTED_DELIVERIES = "expected_deliveries"
MISSING_DELIVERIES = "missing_deliveries"
DUPLICATE_DELIVERIES = "duplicate_deliveries"
ROUTING_OVERHEAD = "routing_overhead"
AVG_PATH_LENGTH = "avg_path_length"
MAX_PATH_LENGTH = "max_path_length"
DELIVERY_RATIO = "delivery_ratio"
MESSAGES = "messages"
SUPERSTEPS = "supersteps"
COUNTER_EXAMPLE = "counter_example"
OVERLAY_TYPE = "overlay_type"
LATENCY_MS, DIRECT_MS = "latency_ms", "direct_ms"
IHAVE, IWANT, IDONTWANT = "ihave", "iwant", "idontwant"
BYTES_SENT = "bytes_sent"
LATENCY_MEDIAN, LATENCY_P95, STRETCH_MEDIAN = "latency_median", "latency_p95", "stretch_median"

ROUTING_RUNS = TableSpec(
    name="routing_runs",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (RUN_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (PROTOCOL, StringType(), False),
        (PUBLICATIONS, LongType(), False),
        (SEED, LongType(), False),
        (PARAMS, StringType(), False),
        (STATUS, StringType(), False),
        (STARTED_AT, TimestampType(), False),
        (FINISHED_AT, TimestampType(), True),
        (SECONDS, DoubleType(), True),
        (SUPERSTEPS, LongType(), True),
        (MESSAGES, LongType(), True),
        (MESSAGE, StringType(), True),
        (COUNTER_EXAMPLE, StringType(), True),
        (SPARK_JOBS, LongType(), True),
        (DELTA_COMMITS, LongType(), True),
        (ATTEMPT, StringType(), True),
    ),
    partition_by=(),
    description=(
        "One row per routing simulation: the overlay run it routes on, the protocol, the workload "
        "(publications, seed), status (running / complete / failed), supersteps and messages; a "
        "run whose deliveries are not exactly once is failed with its first counter-example. "
        "`attempt` names the process that owns the run (`pipelines.ledger`): its completion is "
        "conditional on it, so a process whose run another one took over cannot complete it; "
        "null in rows stored before the column existed."
    ),
)

ROUTING_PUBLICATIONS = TableSpec(
    name="routing_publications",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (PUB_ID, LongType(), False),
        (TOPIC_ID, LongType(), False),
        (PUBLISHER, LongType(), False),
        (RECEIVED, LongType(), False),
        (PURE_FORWARDS, LongType(), False),
        (DELIVERIES, LongType(), False),
        (EXPECTED_DELIVERIES, LongType(), True),
        (DUPLICATE_DELIVERIES, LongType(), True),
        (IHAVE, LongType(), True),
        (IWANT, LongType(), True),
        (IDONTWANT, LongType(), True),
        (BYTES_SENT, LongType(), True),
    ),
    partition_by=(),
    description=(
        "The workload of a routing run, one row per publication: its topic and publisher (a "
        "subscriber of it), and the messages it caused: received, pure forwards, deliveries. A spread "
        "(`disseminate --protocol flood | gossipsub-spread`) adds the deliveries expected (subscribers up "
        "but the publisher), the duplicate copies, gossipsub's IHAVE, IWANT and IDONTWANT messages, and the "
        "bytes of all of them (the copies' message size, 46 bytes per message id; null otherwise)."
    ),
)

ROUTING_DELIVERIES = TableSpec(
    name="routing_deliveries",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (PUB_ID, LongType(), False),
        (NODE_ID, LongType(), False),
        (HOPS, IntegerType(), False),
        (LATENCY_MS, DoubleType(), True),
        (DIRECT_MS, DoubleType(), True),
    ),
    partition_by=(),
    description=(
        "Every delivery of a publication to a subscriber (not its publisher): its path length in hops, the sum "
        "of the link latencies along the path and the publisher's direct latency to the subscriber (ms, from "
        "`node_coordinates`; null for a run routed without them)."
    ),
)

ROUTING_LOAD = TableSpec(
    name="routing_load",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (NODE_ID, LongType(), False),
        (RECEIVED, LongType(), False),
        (PURE_FORWARDS, LongType(), False),
        (DELIVERED, LongType(), False),
        (SENT, LongType(), True),
    ),
    partition_by=(),
    description=(
        "Per node: messages received, those on topics it does not subscribe to (pure forwards), "
        "publications delivered to it, and messages it sent on (null for a run stored before it was counted)."
    ),
)

ROUTING_METRICS = TableSpec(
    name="routing_metrics",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (RUN_ID, StringType(), False),
        (PROTOCOL, StringType(), False),
        (PUBLICATIONS, LongType(), False),
        (ROUTING_OVERHEAD, LongType(), False),
        (AVG_PATH_LENGTH, DoubleType(), True),
        (MAX_PATH_LENGTH, LongType(), True),
        (LATENCY_MEDIAN, DoubleType(), True),
        (LATENCY_P95, DoubleType(), True),
        (STRETCH_MEDIAN, DoubleType(), True),
        (DELIVERY_RATIO, DoubleType(), False),
        (DUPLICATE_DELIVERIES, LongType(), False),
        (MISSING_DELIVERIES, LongType(), False),
        (DELIVERIES, LongType(), False),
        (EXPECTED_DELIVERIES, LongType(), False),
        (MESSAGES, LongType(), False),
        (SUPERSTEPS, LongType(), False),
        (COMPUTED_AT, TimestampType(), False),
        (BYTES_SENT, LongType(), True),
    ),
    partition_by=(),
    description=(
        "Routing quality (BeaConvey section 4.2): routing overhead = messages received by nodes not "
        "subscribed to the topic; path lengths over deliveries; delivery ratio = distinct deliveries "
        "over (publication, subscriber other than the publisher) pairs; duplicates and misses; a spread's "
        "bytes sent (null for other runs)."
    ),
)

COMPARISON_ID = "comparison_id"
SYSTEM = "system"
OVERHEAD_RATIO = "overhead_ratio"
PATH_RATIO = "path_ratio"
PAPER_COLUMN = "paper_column"
PAPER_OVERHEAD_RATIO = "paper_overhead_ratio"
PAPER_PATH_RATIO = "paper_path_ratio"

ROUTING_COMPARISON = TableSpec(
    name="routing_comparison",
    schema=_fields(
        (COMPARISON_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (SYSTEM, StringType(), False),
        (OVERLAY_TYPE, StringType(), False),
        (PROTOCOL, StringType(), False),
        (ROUTING_RUN_ID, StringType(), False),
        (TCO_SUPPORT, DoubleType(), True),
        (ROUTING_OVERHEAD, LongType(), False),
        (AVG_PATH_LENGTH, DoubleType(), True),
        (MAX_PATH_LENGTH, LongType(), True),
        (OVERHEAD_RATIO, DoubleType(), True),
        (PATH_RATIO, DoubleType(), True),
        (PAPER_COLUMN, StringType(), True),
        (PAPER_OVERHEAD_RATIO, DoubleType(), True),
        (PAPER_PATH_RATIO, DoubleType(), True),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "The BeaConvey comparison (DEBS'18 Tables 3-5) on one instance: every system's routing "
        "overhead and average path length, as ratios against Scribe(-), next to the paper's."
    ),
)

# Failures (`overlay.resilience`) --------------------------------------------------------------
MODEL = "model"
TRIAL = "trial"
FAILED = "failed"
SURVIVORS = "survivors"
SHARED_TOPICS = "shared_topics"
CONNECTED_TOPICS = "connected_topics"
CONNECTED_TOPIC_SHARE = "connected_topic_share"

RESILIENCE = TableSpec(
    name="resilience",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (MODEL, StringType(), False),
        (SHARE, DoubleType(), False),
        (TRIAL, IntegerType(), False),
        (SEED, LongType(), False),
        (FAILED, LongType(), False),
        (SURVIVORS, LongType(), False),
        (SUBSCRIPTIONS, LongType(), False),
        (TOPICS, LongType(), False),
        (TCC, LongType(), False),
        (TCO_SUPPORT, DoubleType(), False),
        (SHARED_TOPICS, LongType(), False),
        (CONNECTED_TOPICS, LongType(), False),
        (CONNECTED_TOPIC_SHARE, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "Per run, failure model (random-nodes, targeted-nodes, random-links), share removed, "
        "trial and seed: how many nodes or links failed, the nodes left, the surviving "
        "subscriptions and topics, the TCCs of the surviving overlay and its TcoSuppR on the "
        "instance restricted to the survivors, and the share of topics with two or more "
        "surviving subscribers that stay connected. Running a (model, seed) again replaces its "
        "rows at the shares given."
    ),
)

# Day two (docs/concepts/day-two.md): how an overlay differs from an earlier one of its instance.
PREVIOUS_RUN_ID = "previous_run_id"
PREVIOUS_INGEST_ID = "previous_ingest_id"
CHANGE_KIND = "change_kind"
LINKS_KEPT, LINKS_ADDED, LINKS_REMOVED = "links_kept", "links_added", "links_removed"
REMOVED_DEPARTED, REMOVED_UNSHARED, REMOVED_BUDGET = "removed_departed", "removed_unshared", "removed_budget"
REMOVED_REDUNDANT = "removed_redundant"
CHANGED_SUBSCRIPTIONS = "changed_subscriptions"
SECONDS_ENGINE = "seconds_engine"
INCREMENTAL, FRESH, REBUILT = "incremental", "fresh", "rebuilt"

OVERLAY_CHANGES = TableSpec(
    name="overlay_changes",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (PREVIOUS_RUN_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (INGEST_ID, StringType(), False),
        (PREVIOUS_INGEST_ID, StringType(), False),
        (CHANGE_KIND, StringType(), False),
        (LINKS_KEPT, LongType(), False),
        (LINKS_ADDED, LongType(), False),
        (LINKS_REMOVED, LongType(), False),
        (REMOVED_DEPARTED, LongType(), False),
        (REMOVED_UNSHARED, LongType(), True),
        (REMOVED_BUDGET, LongType(), True),
        (REMOVED_REDUNDANT, LongType(), True),
        (CHANGED_SUBSCRIPTIONS, LongType(), False),
        (EDGES, LongType(), False),
        (TCO_SUPPORT, DoubleType(), True),
        (MAX_DEGREE, LongType(), True),
        (SECONDS, DoubleType(), True),
        (SECONDS_ENGINE, DoubleType(), True),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per overlay run compared with an earlier run of the same instance (by node keys): "
        "links kept, added and removed (removed_departed: an end left; removed_unshared: the ends share "
        "no topic any more; removed_budget: removed to restore the budget; removed_redundant: "
        "released where the budget binds, every topic they served staying connected; the last three for an "
        "incremental design only), the subscriptions that changed between the two versions (by keys), "
        "and the run's links, TcoSuppR, max degree, seconds and engine seconds. change_kind: "
        "incremental (designed from the previous run), fresh (designed from scratch, compared with it), "
        "rebuilt (an incremental design that fell back to a fresh one)."
    ),
)

# Gossip simulations (Feverfew): a simulation is an overlay run; these hold its cycles.
CYCLE = "cycle"
COVERED = "covered"
COVERED_SUBSCRIPTIONS = "covered_subscriptions"
COVERED_SHARE = "covered_share"
COVERED_NODES = "covered_nodes"
VIEW_AVG = "view_avg"
CYCLON_MESSAGES = "cyclon_messages"
GOSSIP_MESSAGES = "gossip_messages"
COPIES = "copies"
MATCHES = "matches"
STARTED_CYCLE = "started_cycle"
TTL = "ttl"
FIRST_MATCH_CYCLE = "first_match_cycle"

GOSSIP_CYCLES = TableSpec(
    name="gossip_cycles",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (CYCLE, IntegerType(), False),
        (SUBSCRIPTIONS, LongType(), False),
        (COVERED_SUBSCRIPTIONS, LongType(), False),
        (COVERED_SHARE, DoubleType(), True),
        (NODES, LongType(), False),
        (COVERED_NODES, LongType(), False),
        (VIEW_AVG, DoubleType(), False),
        (CYCLON_MESSAGES, LongType(), False),
        (GOSSIP_MESSAGES, LongType(), False),
        (COPIES, LongType(), False),
        (MATCHES, LongType(), False),
        (SECONDS, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per cycle of a gossip simulation (append-only): the subscriptions of topics with two or "
        "more subscribers and how many are ln-covered (their share), the nodes with every such topic covered, "
        "the mean ln-covered view |LV|, the messages sent in the cycle (Cyclon requests and answers, "
        "GossipSample requests and answers, BubbleSample copies, agents' match notifications) and the "
        "cycle's seconds (its Spark job, or its work in the driver in the memory regime)."
    ),
)

GOSSIP_COVERAGE = TableSpec(
    name="gossip_coverage",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (CYCLE, IntegerType(), False),
        (TOPIC_ID, LongType(), False),
        (SUBSCRIBERS, LongType(), False),
        (COVERED, LongType(), False),
    ),
    partition_by=(),
    description=(
        "Per cycle and topic with two or more subscribers (append-only): its subscribers and how many of "
        "their subscriptions are ln-covered (Feverfew Fig. 5 buckets these by topic size)."
    ),
)

GOSSIP_DIFFUSIONS = TableSpec(
    name="gossip_diffusions",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (CYCLE, IntegerType(), False),
        (NODE_ID, LongType(), False),
        (TOPIC_ID, LongType(), False),
        (STARTED_CYCLE, IntegerType(), False),
        (TTL, IntegerType(), False),
        (FIRST_MATCH_CYCLE, IntegerType(), True),
        (MATCHES, LongType(), False),
    ),
    partition_by=(),
    description=(
        "BubbleSample diffusions (append-only): a row for a diffusion of `topic_id` by its origin `node_id` "
        "in the cycle it starts, the cycle of its first match and the last cycle it sends copies in; with "
        "its TTL0, the first match's cycle (null: none yet) and the matches the origin was told of so far "
        "(each match is two notifications)."
    ),
)

GOSSIP_STATE_ARRAYS = (
    ("rv", LongType()),
    ("rv_age", IntegerType()),
    ("sv", LongType()),
    ("lv", LongType()),
    ("mb", LongType()),
    ("av_origin", LongType()),
    ("av_topic", LongType()),
    ("reported_origin", LongType()),
    ("reported_other", LongType()),
    ("held_origin", LongType()),
    ("held_topic", LongType()),
    ("held_ttl", IntegerType()),
    ("own_topic", LongType()),
    ("own_started", IntegerType()),
    ("own_ttl", IntegerType()),
    ("own_first_match", IntegerType()),
    ("own_matches", IntegerType()),
)

GOSSIP_STATES = TableSpec(
    name="gossip_states",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (CYCLE, IntegerType(), False),
        (NODE_ID, LongType(), False),
        *((name, ArrayType(kind), False) for name, kind in GOSSIP_STATE_ARRAYS),
    ),
    partition_by=(),
    description=(
        "Every node's whole state after a cycle, every few cycles and at the end (a notebook replays "
        "convergence from it; a simulation resumes from its last one): Feverfew's random view (rv) with "
        "ages, similar view (sv), ln-covered view (lv, in Alg. 3's order), matches buffer (mb), agent view "
        "(av_origin, av_topic, oldest first), the (origin, other) pairs this agent reported, the diffusion "
        "copies held (origin, topic, TTL) and the node's own diffusions (topic, start, TTL0, first match, "
        "matches; -1: none)."
    ),
)

CHOICES = "choices"

GOSSIP_VIEWS = TableSpec(
    name="gossip_views",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (NODES, LongType(), False),
        (CHOICES, LongType(), False),
        (VIEW_AVG, DoubleType(), False),
        (SUBSCRIPTIONS, LongType(), False),
        (COVERED_SUBSCRIPTIONS, LongType(), False),
        (COVERED_SHARE, DoubleType(), True),
        (COVERED_NODES, LongType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per gossip-protocol run (`simulate`): what the nodes chose as neighbours, the paper's way: "
        "the choices (sum of |LV(p)|, or of SpiderCast's picks), their mean per node (Feverfew's \"average "
        "node degree\"; the overlay's links are these choices made undirected), and the ln-coverage they give "
        "(subscriptions of topics with two or more subscribers, covered ones, their share, nodes fully covered)."
    ),
)

WANTED = "wanted"
CONNECTED = "connected"
DIAMETER = "diameter"
CLUSTERING = "clustering"

TOPIC_STRUCTURE = TableSpec(
    name="topic_structure",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (WANTED, LongType(), False),
        (TOPIC_ID, LongType(), False),
        (SUBSCRIBERS, LongType(), False),
        (CONNECTED, BooleanType(), False),
        (DIAMETER, IntegerType(), True),
        (CLUSTERING, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "Sampled topic subgraphs of a run (`topic-structure`; Feverfew Table 3): for each size `wanted`, "
        "the topic nearest it, whether its subgraph is connected, its exact diameter (null when not "
        "connected) and its mean local clustering coefficient (nodes of degree < 2 count 0)."
    ),
)

GOSSIP_TABLES = (GOSSIP_CYCLES, GOSSIP_COVERAGE, GOSSIP_DIFFUSIONS, GOSSIP_STATES, GOSSIP_VIEWS, TOPIC_STRUCTURE)

# gossipsub (libp2p v1.1) simulations: per-topic meshes kept by heartbeats; a simulation is an
# overlay run whose links are the union of its meshes.
HEARTBEAT = "heartbeat"
PEER_ID = "peer_id"
GRAFTS = "grafts"
PRUNES = "prunes"
REFUSED = "refused"
MESHES = "meshes"
MESH_AVG = "mesh_avg"
MESH_MIN = "mesh_min"
MESH_MAX = "mesh_max"
BELOW_LOW = "below_low"
ABOVE_HIGH = "above_high"
BACKOFFS = "backoffs"

GOSSIPSUB_MESH = TableSpec(
    name="gossipsub_mesh",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (TOPIC_ID, LongType(), False),
        (NODE_ID, LongType(), False),
        (PEER_ID, LongType(), False),
    ),
    partition_by=(),
    description=(
        "The final meshes of a gossipsub simulation: (topic, node, peer) for every peer in the node's mesh of "
        "the topic at the end of the last heartbeat interval (symmetric, each link with both rows, unless a "
        "GRAFT or PRUNE is still in flight then)."
    ),
)

GOSSIPSUB_HEARTBEATS = TableSpec(
    name="gossipsub_heartbeats",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (HEARTBEAT, IntegerType(), False),
        (GRAFTS, LongType(), False),
        (PRUNES, LongType(), False),
        (REFUSED, LongType(), False),
        (MESHES, LongType(), False),
        (MESH_AVG, DoubleType(), True),
        (MESH_MIN, IntegerType(), True),
        (MESH_MAX, IntegerType(), True),
        (BELOW_LOW, LongType(), False),
        (ABOVE_HIGH, LongType(), False),
        (BACKOFFS, LongType(), False),
        (SECONDS, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per heartbeat of a gossipsub simulation (append-only): the GRAFTs and PRUNEs sent (PRUNEs "
        "include the refusals of GRAFTs), the GRAFTs refused; over the meshes of topics with more than D_low "
        "subscribers (one per such subscription): their number, mean, min and max size, how many are below "
        "D_low and above D_high; the backoffs held; seconds: the simulation's seconds per heartbeat (each "
        "topic runs all its heartbeats at once). Measured at the end of each heartbeat interval."
    ),
)

GOSSIPSUB_CONNECTIONS = TableSpec(
    name="gossipsub_connections",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (NODE_ID, LongType(), False),
        (PEER_ID, LongType(), False),
    ),
    partition_by=(),
    description=(
        "A gossipsub simulation's connections when its nodes hold a bounded number of peers (`--peers`): one "
        "row per connection, node_id dialled peer_id (outbound at node_id). Runs where every subscriber of a "
        "node's topics is connected to it have none."
    ),
)

BATCH = "batch"
FIRST_TOPIC = "first_topic"
LAST_TOPIC = "last_topic"
MESH_LINKS = "mesh_links"

GOSSIPSUB_BATCHES = TableSpec(
    name="gossipsub_batches",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (BATCH, IntegerType(), False),
        (FIRST_TOPIC, LongType(), False),
        (LAST_TOPIC, LongType(), False),
        (HEARTBEAT, IntegerType(), False),
        (GRAFTS, LongType(), False),
        (PRUNES, LongType(), False),
        (REFUSED, LongType(), False),
        (MESHES, LongType(), False),
        (MESH_LINKS, LongType(), False),
        (MESH_MIN, IntegerType(), False),
        (MESH_MAX, IntegerType(), False),
        (BELOW_LOW, LongType(), False),
        (ABOVE_HIGH, LongType(), False),
        (BACKOFFS, LongType(), False),
        (SECONDS, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "A gossipsub simulation's commits (append-only): topics first_topic..last_topic simulated whole, one "
        "row per heartbeat with their measures summed (mesh_links: the meshes' sizes summed; mesh_min and "
        "mesh_max -1 when none), and the batch's seconds. A simulation resumes after its last batch; "
        "gossipsub_heartbeats combines the batches at the end."
    ),
)

DUPLICATES_PER_DELIVERY = "duplicates_per_delivery"
IRRELEVANT_PER_DELIVERY = "irrelevant_per_delivery"
DELIVERY_RATIO_5 = "delivery_ratio_5"
DELIVERY_RATIO_20 = "delivery_ratio_20"
BYTES_PER_DELIVERY = "bytes_per_delivery"

MESH_COMPARISON = TableSpec(
    name="mesh_comparison",
    schema=_fields(
        (COMPARISON_ID, StringType(), False),
        (INSTANCE, StringType(), False),
        (SEED, LongType(), False),
        (SYSTEM, StringType(), False),
        (RUN_ID, StringType(), False),
        (ROUTING_RUN_ID, StringType(), False),
        (AVG_DEGREE, DoubleType(), False),
        (MAX_DEGREE, LongType(), False),
        (TCO_SUPPORT, DoubleType(), True),
        (DUPLICATES_PER_DELIVERY, DoubleType(), True),
        (IRRELEVANT_PER_DELIVERY, DoubleType(), True),
        (AVG_PATH_LENGTH, DoubleType(), True),
        (LATENCY_MEDIAN, DoubleType(), True),
        (DELIVERY_RATIO, DoubleType(), True),
        (DELIVERY_RATIO_5, DoubleType(), True),
        (DELIVERY_RATIO_20, DoubleType(), True),
        (COMPUTED_AT, TimestampType(), False),
        (BYTES_PER_DELIVERY, DoubleType(), True),
    ),
    partition_by=(),
    description=(
        "gossipsub beside the designed and gossip-built overlays on one instance (`compare-meshes`), one row "
        "per system: gossipsub's meshes (their union), GPM at gossipsub's max degree, MinMaxODA, Feverfew and "
        "BeaConvey's SL with Pie. Links per node (avg_degree) and max degree, TcoSuppR; of its publications with "
        "every node up (routing_run_id): duplicates and irrelevant copies (received by non-subscribers) per "
        "delivery, path length in hops and median latency; the delivery ratio with every node up, and with 5% "
        "and 20% of the nodes down (null for Pie: routing does not simulate failures); bytes sent per delivery "
        "with every node up (null for Pie)."
    ),
)

GOSSIPSUB_TABLES = (GOSSIPSUB_MESH, GOSSIPSUB_HEARTBEATS, GOSSIPSUB_BATCHES, GOSSIPSUB_CONNECTIONS)
COMPARISON_TABLES = (MESH_COMPARISON,)

ALIVE = "alive"
INFORMED = "informed"
COMPLETION = "completion"

DISSEMINATION_COMPLETION = TableSpec(
    name="dissemination_completion",
    schema=_fields(
        (ROUTING_RUN_ID, StringType(), False),
        (PUB_ID, LongType(), False),
        (TOPIC_ID, LongType(), False),
        (PUBLISHER, LongType(), False),
        (SUBSCRIBERS, LongType(), False),
        (CYCLE, IntegerType(), False),
        (ALIVE, LongType(), False),
        (INFORMED, LongType(), False),
        (COMPLETION, DoubleType(), True),
    ),
    partition_by=(),
    description=(
        "Push-pull dissemination (`disseminate`, a routing run of protocol push-pull on the stored overlay, "
        "or push-pull-live inside a Feverfew run's gossip): per publication (topic, publisher, the topic's "
        "subscribers) and cycle from 0, the subscribers alive, those informed among them, and the "
        "completion rate informed / alive (the publisher never fails, so one at least is alive)."
    ),
)

# -- Rappel (ComNet'09): the friendship overlay's run, its feeds' trees and their measures -----------
MODEL_SEED = "model_seed"
X_MS, Y_MS = "x_ms", "y_ms"
PARENT = "parent"
DEPTH = "depth"
TICK = "tick"
UPDATE_ID = "update_id"
PUBLISHED_MS, ARRIVAL_MS = "published_ms", "arrival_ms"
NODES_UP = "nodes_up"
FRIENDS_AVG = "friends_avg"
FEEDS = "feeds"
FULL_COVERAGE_NODES = "full_coverage_nodes"
DELIVERIES = "deliveries"
NOISE = "noise"
DATA_MESSAGES, CONTROL_MESSAGES = "data_messages", "control_messages"
JOINS, JOINS_IN, REJOINS_IN, TREE_PINGS = "joins", "joins_in", "rejoins_in", "tree_pings"
FRIENDSHIP_MESSAGES = "friendship_messages"
FRIENDS = "friends"
OVERLAP_ROLES, OVERLAP_NEIGHBOURS, OVERLAP_RATIO = "overlap_roles", "overlap_neighbours", "overlap_ratio"

NODE_COORDINATES = TableSpec(
    name="node_coordinates",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (INGEST_ID, StringType(), False),
        (MODEL_SEED, IntegerType(), False),
        (NODE_ID, LongType(), False),
        (X_MS, DoubleType(), False),
        (Y_MS, DoubleType(), False),
    ),
    partition_by=(),
    description=(
        "Network coordinates of an instance version's nodes from the seeded latency model "
        "(`overlay/rappel/coordinates.py`): the latency between two nodes is their distance in ms. Written "
        "the first time a Rappel simulation needs them for that version and model seed."
    ),
)

FEED_PUBLISHERS = TableSpec(
    name="feed_publishers",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (TOPIC_ID, LongType(), False),
        (PUBLISHER, LongType(), False),
        (SUBSCRIBERS, LongType(), False),
        (CHOSEN_BY, StringType(), False),
    ),
    partition_by=(),
    description=(
        "Each feed's publisher in a Rappel run: the node with the topic's key on a social instance "
        "(`key`: the followed user), else a seeded subscriber (`seeded`)."
    ),
)

FEED_TREES = TableSpec(
    name="feed_trees",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (TOPIC_ID, LongType(), False),
        (NODE_ID, LongType(), False),
        (PARENT, LongType(), True),
        (DEPTH, IntegerType(), True),
        (TICK, IntegerType(), False),
    ),
    partition_by=(),
    description=(
        "Rappel's per-feed dissemination trees after a round (every few rounds and at the end): each online "
        "member's parent (null: the root, or not attached) and depth (hops to the publisher; null when its "
        "chain does not reach it); `tick` is the snapshot's time in 5 s ticks."
    ),
)

RAPPEL_ROUNDS = TableSpec(
    name="rappel_rounds",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (NODES_UP, LongType(), False),
        (FRIENDS_AVG, DoubleType(), True),
        (FEEDS, LongType(), False),
        (COVERED, LongType(), False),
        (COVERED_SHARE, DoubleType(), True),
        (FULL_COVERAGE_NODES, LongType(), False),
        (DELIVERIES, LongType(), False),
        (LATENCY_MEDIAN, DoubleType(), True),
        (LATENCY_P95, DoubleType(), True),
        (STRETCH_MEDIAN, DoubleType(), True),
        (NOISE, LongType(), False),
        (DATA_MESSAGES, LongType(), False),
        (CONTROL_MESSAGES, LongType(), False),
        (SECONDS, DoubleType(), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "One row per 30 s round of a Rappel simulation (append-only): nodes online, their mean number of "
        "friends, their subscriptions and how many some friend shares (the share), nodes with every feed "
        "covered; updates delivered in the round with the median and 95th percentile latency (ms) and the "
        "median stretch (latency over the direct latency to the publisher); noise (deliveries to nodes "
        "that do not subscribe: zero by construction, counted against the subscriptions); update messages "
        "and control messages (tree joins, tree pings and acks, friendship pings, acks, requests, answers)."
    ),
)

RAPPEL_DELIVERIES = TableSpec(
    name="rappel_deliveries",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (TOPIC_ID, LongType(), False),
        (UPDATE_ID, LongType(), False),
        (NODE_ID, LongType(), False),
        (PUBLISHED_MS, LongType(), False),
        (ARRIVAL_MS, DoubleType(), False),
        (LATENCY_MS, DoubleType(), False),
        (HOPS, IntegerType(), False),
        (DIRECT_MS, DoubleType(), False),
    ),
    partition_by=(),
    description=(
        "Every update a Rappel subscriber received (append-only): when it was published and arrived (ms of "
        "simulated time), the latency, the tree hops (-1: off the publisher's tree, a pull) and the direct "
        "latency to the publisher (the measured stretch is latency / direct; without latency noise it is "
        "also the coordinate stretch)."
    ),
)

RAPPEL_TRAFFIC = TableSpec(
    name="rappel_traffic",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (NODE_ID, LongType(), False),
        (DATA_MESSAGES, LongType(), False),
        (JOINS, LongType(), False),
        (JOINS_IN, LongType(), False),
        (REJOINS_IN, LongType(), False),
        (TREE_PINGS, LongType(), False),
        (FRIENDSHIP_MESSAGES, LongType(), False),
    ),
    partition_by=(),
    description=(
        "Per node and round of a Rappel simulation, over all its feeds: update messages sent, tree join "
        "messages sent (requests, forwards, answers), join requests received and those of periodic rejoins, "
        "tree pings and acks, friendship messages sent (pings, acks, requests, answers)."
    ),
)

RAPPEL_NODES = TableSpec(
    name="rappel_nodes",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (NODE_ID, LongType(), False),
        (FEEDS, LongType(), False),
        (COVERED, LongType(), False),
        (FRIENDS, LongType(), False),
        (OVERLAP_ROLES, LongType(), False),
        (OVERLAP_NEIGHBOURS, LongType(), False),
        (OVERLAP_RATIO, DoubleType(), True),
    ),
    partition_by=(),
    description=(
        "Each node at the end of a Rappel run: its feeds, those some friend shares, its friends, and the "
        "neighbour overlap ratio: roles played by its friends, parents and children over all trees, over "
        "the distinct such neighbours (fans and candidates excluded)."
    ),
)

LEGACY_TREE = "tree"  # the pickled tree of tables written before layout 1 (read only by their migration)
LAYOUT_VERSION = "layout_version"
UPDATES, MEMBERS = "updates", "members"
ONLINE, CHILDREN, SINCE, PLAN, DIRECT, REJOIN, SKIP, DETECT, ANCESTORS, GOT = (
    "online",
    "children",
    "since",
    "plan",
    "direct",
    "rejoin",
    "skip",
    "detect",
    "ancestors",
    "got",
)
# A feed's tree as explicit columns (`overlay.rappel.tree_codec` encodes and decodes it; layout 1).
# Member fields are those of `overlay.rappel.feeds.Member`; ticks are 5 s; null: none.
RAPPEL_TREE_UPDATE = _fields((UPDATE_ID, LongType(), True), (TICK, IntegerType(), True))
RAPPEL_TREE_GOT = _fields((UPDATE_ID, LongType(), True), (ARRIVAL_MS, DoubleType(), True))
RAPPEL_TREE_MEMBER = _fields(
    (NODE_ID, LongType(), True),
    (ONLINE, BooleanType(), True),
    (PARENT, LongType(), True),
    (CHILDREN, ArrayType(LongType()), True),
    (SINCE, IntegerType(), True),
    (PLAN, IntegerType(), True),
    (DIRECT, BooleanType(), True),
    (REJOIN, IntegerType(), True),
    (SKIP, BooleanType(), True),
    (DETECT, IntegerType(), True),
    (ANCESTORS, ArrayType(LongType()), True),
    (GOT, ArrayType(RAPPEL_TREE_GOT), True),
)
RAPPEL_TREE_COLUMNS = (
    (PUBLISHER, LongType(), False),
    (UPDATES, ArrayType(RAPPEL_TREE_UPDATE), False),
    (MEMBERS, ArrayType(RAPPEL_TREE_MEMBER), False),
)
# One tree as a struct, the trees' step rows carry it (null in the rows of other kinds).
RAPPEL_TREE = _fields(*((name, kind, True) for name, kind, _ in RAPPEL_TREE_COLUMNS))
RAPPEL_STATE_ARRAYS = (
    ("friends", LongType()),
    ("fans", LongType()),
    ("fan_seen", IntegerType()),
    ("cand", LongType()),
    ("cand_votes", IntegerType()),
    ("cand_audited", IntegerType()),
    ("cand_heard", IntegerType()),
    ("met", LongType()),
)

RAPPEL_STATES = TableSpec(
    name="rappel_states",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (NODE_ID, LongType(), False),
        *((name, ArrayType(kind), False) for name, kind in RAPPEL_STATE_ARRAYS),
        (COVERED, IntegerType(), False),
        (FEEDS, IntegerType(), False),
    ),
    partition_by=(),
    description=(
        "Every node's friendship state after a Rappel round, every few rounds and at the end (a stopped run "
        "resumes from its last one): friends, fans with the round each was last heard from (fan_seen), "
        "candidates with votes, audited flag and round last heard, and the nodes its join walks met (heard "
        "of first in the next round); covered and feeds: its friend coverage in that round."
    ),
)

RAPPEL_TREE_STATES = TableSpec(
    name="rappel_tree_states",
    schema=_fields(
        (RUN_ID, StringType(), False),
        (ROUND, IntegerType(), False),
        (TOPIC_ID, LongType(), False),
        (LAYOUT_VERSION, IntegerType(), False),
        *RAPPEL_TREE_COLUMNS,
    ),
    partition_by=(),
    description=(
        "Each feed's whole dissemination tree after a Rappel round, every few rounds and at the end, written "
        "after `rappel_states` of the round (a stopped run resumes from the last round found here), as "
        "explicit columns in layout `layout_version` (1; `overlay/rappel/tree_codec.py`): the publisher, "
        "the cache `updates` (update_id, tick published; oldest first) and `members`, one struct per "
        "subscriber and the publisher: node_id, online, parent, children (ascending), since (the tick from "
        "which updates are its), plan (the tick its join plan started), direct (a fallback plan: the "
        "publisher first), rejoin (the tick of its next periodic rejoin), skip (skips that rejoin), detect "
        "(an orphan: the tick it notices), ancestors (an orphan's, nearest first), got (update_id, "
        "arrival_ms); ticks are 5 s, null: none. Tables written before layout 1 held a pickle in `tree`: "
        "the Rappel job rewrites them once on opening."
    ),
)

MIN_FEEDS, SAMPLE, COVERED_AFTER = "min_feeds", "sample", "covered_after"

FRIEND_BOUND = TableSpec(
    name="friend_bound",
    schema=_fields(
        (INSTANCE, StringType(), False),
        (INGEST_ID, StringType(), False),
        (K, IntegerType(), False),
        (MIN_FEEDS, IntegerType(), False),
        (SAMPLE, IntegerType(), False),
        (SEED, LongType(), False),
        (NODE_ID, LongType(), False),
        (FEEDS, LongType(), False),
        (FRIENDS, ArrayType(LongType()), False),
        (COVERED_AFTER, ArrayType(IntegerType()), False),
        (COMPUTED_AT, TimestampType(), False),
    ),
    partition_by=(),
    description=(
        "ComNet'09 Fig. 1 on an instance version: for sampled nodes of at least `min_feeds` feeds, the greedy "
        "best friends (at most k, from every node: each the one covering most of the feeds not yet covered) "
        "and the feeds covered after each pick. The node has full coverage with j friends when "
        "covered_after[j-1] == feeds."
    ),
)

RAPPEL_TABLES = (
    NODE_COORDINATES,
    FEED_PUBLISHERS,
    FEED_TREES,
    RAPPEL_ROUNDS,
    RAPPEL_DELIVERIES,
    RAPPEL_TRAFFIC,
    RAPPEL_NODES,
    RAPPEL_STATES,
    RAPPEL_TREE_STATES,
)
RAPPEL_RUN_TABLES = RAPPEL_TABLES[1:]  # those keyed by run_id

ROUTING_TABLES = (
    ROUTING_RUNS,
    ROUTING_PUBLICATIONS,
    ROUTING_DELIVERIES,
    ROUTING_LOAD,
    ROUTING_METRICS,
    ROUTING_COMPARISON,
    DISSEMINATION_COMPLETION,
)

OVERLAY_TABLES = (
    OVERLAY_RUNS,
    OVERLAY_EDGES,
    OVERLAY_ROUNDS,
    REJECTED_OVERLAY_EDGES,
    TOPIC_COMPONENTS,
    OVERLAY_METRICS,
    TOPIC_CONNECTIVITY,
    OVERLAY_KTCO,
    RESILIENCE,
    OVERLAY_CHANGES,
)
SMALL_WORLD_TABLES = (RING, FINGERS)
ALL_TABLES = (
    INSTANCES,
    INSTANCE_VERSIONS,
    *INSTANCE_TABLES,
    *OVERLAY_TABLES,
    *SMALL_WORLD_TABLES,
    *GOSSIP_TABLES,
    *GOSSIPSUB_TABLES,
    *COMPARISON_TABLES,
    *ROUTING_TABLES,
    *RAPPEL_TABLES,
    FRIEND_BOUND,
)

# The shape of each instance table as the library produces it, before the job stamps
# `instance` and `ingest_id` onto the rows.
SUBSCRIPTION_COLUMNS = (NODE_ID, TOPIC_ID)
KEY_COLUMNS = (KEY, ID)
REJECTED_COLUMNS = (RECORD, REASON, SOURCE_FILE, LINE)
EDGE_COLUMNS = (U, V, ADDED_ORDER, ROUND, GAIN)
RING_COLUMNS = (NODE_ID, POSITION)
FINGER_COLUMNS = (NODE_ID, PHASE, FINGER, CHOSEN_BY)


def frame_schema(table: TableSpec, columns: tuple[str, ...]) -> StructType:
    """The schema of `columns` as declared in `table` (for frames the library builds)."""
    by_name = {field.name: field for field in table.schema.fields}
    return StructType([by_name[name] for name in columns])


REJECTED_FRAME_SCHEMA = frame_schema(REJECTED_SUBSCRIPTIONS, REJECTED_COLUMNS)


def table_named(name: str) -> TableSpec:
    """The table of that name; the error lists the tables there are."""
    for table in ALL_TABLES:
        if table.name == name:
            return table
    raise KeyError(f"no table '{name}'; the tables are {', '.join(t.name for t in ALL_TABLES)}")
