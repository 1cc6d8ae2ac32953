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
ALL_TABLES = (INSTANCES, *INSTANCE_TABLES)

# The shape of each instance table as the library produces it, before the job stamps
# `instance` and `ingest_id` onto the rows.
SUBSCRIPTION_COLUMNS = (NODE_ID, TOPIC_ID)
KEY_COLUMNS = (KEY, ID)
REJECTED_COLUMNS = (RECORD, REASON, SOURCE_FILE, LINE)


def frame_schema(table: TableSpec, columns: tuple[str, ...]) -> StructType:
    """The schema of `columns` as declared in `table` (for frames the library builds)."""
    by_name = {field.name: field for field in table.schema.fields}
    return StructType([by_name[name] for name in columns])


REJECTED_FRAME_SCHEMA = frame_schema(REJECTED_SUBSCRIPTIONS, REJECTED_COLUMNS)
