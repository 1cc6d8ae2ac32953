"""The cycle engine's Arrow batches (`overlay.gossip.cycles.to_batches`, built column by column
for speed) are exactly what pyarrow's own `RecordBatch.from_pylist` builds from the same rows:
nulls, missing keys, empty and null lists, null list elements, on every protocol's columns."""

import random

import pyarrow as pa
import pytest

from overlay.gossip import cycles, feverfew
from overlay.rappel import friendship

COLUMNS = {
    "feverfew state": feverfew.STATE_COLUMNS + feverfew.MEASURE_COLUMNS + feverfew.INFORMED_COLUMNS,
    "rappel friendship state": friendship.STATE_COLUMNS + friendship.MEASURE_COLUMNS,
    "rappel friendship messages": friendship.MESSAGE_COLUMNS,
    "scalars": (("b", "binary"), ("x", "double"), ("f", "boolean"), ("i", "int")),
}


def _value(rng: random.Random, kind: str):
    if rng.random() < 0.1:
        return None
    if kind == "bigint":
        return rng.randint(-5, 2**40)
    if kind == "int":
        return rng.randint(-5, 2**31 - 1)
    if kind == "double":
        return rng.random() * 100
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "binary":
        return bytes(rng.randrange(256) for _ in range(rng.randrange(5)))
    inner = kind.removeprefix("array<").removesuffix(">")
    return [None if rng.random() < 0.05 else _value(rng, inner) for _ in range(rng.randrange(6))]


def _rows(rng: random.Random, columns) -> list[dict]:
    """Rows as the protocols yield them: some keys left out (a message carries no state), the
    rest values or None."""
    return [
        {name: _value(rng, kind) for name, kind in columns if rng.random() < 0.85} for _ in range(rng.randrange(1, 30))
    ]


@pytest.mark.parametrize("name", sorted(COLUMNS))
def test_batches_equal_pyarrows_own(name):
    columns = COLUMNS[name]
    schema = cycles.arrow_schema(columns)
    rng = random.Random(name)
    for _ in range(100):
        rows = _rows(rng, columns)
        (batch,) = cycles.to_batches(rows, schema)
        assert batch.equals(pa.RecordBatch.from_pylist(rows, schema=schema))


def test_rows_past_one_batch_split_in_order():
    schema = cycles.arrow_schema(feverfew.STATE_COLUMNS)
    rows = [{"node_id": i} for i in range(cycles.BATCH_ROWS + 3)]
    batches = list(cycles.to_batches(rows, schema))
    assert [b.num_rows for b in batches] == [cycles.BATCH_ROWS, 3]
    assert pa.Table.from_batches(batches).equals(pa.Table.from_pylist(rows, schema=schema))
