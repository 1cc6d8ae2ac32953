"""A feed's dissemination tree (`overlay.rappel.feeds.FeedTree`) as plain typed values and back:
what the trees' step rows carry from round to round and `rappel_tree_states` stores.

Why not a pickle: a pickle is readable only by classes of the same layout, so any refactor of
`FeedTree` or `Member` made every stored run unreadable. Here the stored form is documented
columns (`schema.RAPPEL_TREE_COLUMNS`) with a `layout_version`: a refactor of the classes changes
`encode` and `decode`, not the columns; a change of the columns is a bump of `LAYOUT_VERSION` and
a function in `MIGRATIONS` from a tree of the layout before to the new one. `current_rows` turns
stored rows of any known layout into the current one (the Rappel job rewrites an older table
with it once).

Layout 1, the tree of feed f (f itself is the row's `topic_id`, outside the tree); null: none
(`feeds.NONE`); ticks are 5 s:
* `publisher`: the root's node id;
* `updates`: the cache, oldest first, each (`update_id`, `tick`: when it was published);
* `members`: one struct per member in the tree's order: `node_id`, then `Member`'s fields
  `online`, `parent`, `children` (ascending), `since`, `plan`, `direct`, `rejoin`, `skip`,
  `detect`, `ancestors` (nearest first) and `got`, each (`update_id`, `arrival_ms`).

Layout 0 is the pickle (protocol 5) of a `FeedTree` in the binary column `tree`, as stored before
layout 1: read with today's classes when their fields are the pickle's, else unreadable."""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable, Iterator, Mapping
from dataclasses import fields

import pyarrow as pa
from pyspark.sql import DataFrame
from pyspark.sql.pandas.types import to_arrow_type
from pyspark.sql.types import IntegerType, StructField, StructType

from overlay import schema as S
from overlay.rappel.feeds import NONE, FeedTree, Member

LAYOUT_VERSION = 1
FIRST_COLUMN_LAYOUT = 1  # the first layout with `layout_version` (layout 0 was one pickle per tree)
TREE_ARROW = to_arrow_type(S.RAPPEL_TREE)  # the struct the trees' step rows carry
TREE_COLUMNS = tuple(name for name, _, _ in S.RAPPEL_TREE_COLUMNS)
# Member's fields, in the order of a member struct (after node_id): a field of `Member` missing
# here is a field the stored trees would lose (tests/test_rappel_tree_codec.py checks).
MEMBER_FIELDS = (
    S.ONLINE,
    S.PARENT,
    S.CHILDREN,
    S.SINCE,
    S.PLAN,
    S.DIRECT,
    S.REJOIN,
    S.SKIP,
    S.DETECT,
    S.ANCESTORS,
    S.GOT,
)


def _stored(value: int) -> int | None:
    return None if value == NONE else value


def _kept(value: int | None) -> int:
    return NONE if value is None else int(value)


def encode(tree: FeedTree) -> dict:
    """The tree in layout `LAYOUT_VERSION`, as a dict of the `schema.RAPPEL_TREE` struct."""
    return {
        S.PUBLISHER: tree.publisher,
        S.UPDATES: [{S.UPDATE_ID: u, S.TICK: tick} for u, tick in tree.updates],
        S.MEMBERS: [
            {
                S.NODE_ID: x,
                S.ONLINE: m.online,
                S.PARENT: _stored(m.parent),
                S.CHILDREN: list(m.children),
                S.SINCE: _stored(m.since),
                S.PLAN: _stored(m.plan),
                S.DIRECT: m.direct,
                S.REJOIN: _stored(m.rejoin),
                S.SKIP: m.skip,
                S.DETECT: _stored(m.detect),
                S.ANCESTORS: list(m.ancestors),
                S.GOT: [{S.UPDATE_ID: u, S.ARRIVAL_MS: float(ms)} for u, ms in m.got.items()],
            }
            for x, m in tree.members.items()
        ],
    }


def decode(feed: int, value: Mapping) -> FeedTree:
    """Feed `feed`'s tree from its layout-`LAYOUT_VERSION` struct (a dict, as Arrow's `to_pylist`
    gives it): `decode(f, encode(t)) == t` for the tree t of feed f."""
    members = {
        int(m[S.NODE_ID]): Member(
            online=bool(m[S.ONLINE]),
            parent=_kept(m[S.PARENT]),
            children=[int(c) for c in m[S.CHILDREN]],
            since=_kept(m[S.SINCE]),
            plan=_kept(m[S.PLAN]),
            direct=bool(m[S.DIRECT]),
            rejoin=_kept(m[S.REJOIN]),
            skip=bool(m[S.SKIP]),
            detect=_kept(m[S.DETECT]),
            ancestors=[int(a) for a in m[S.ANCESTORS]],
            got={int(g[S.UPDATE_ID]): g[S.ARRIVAL_MS] for g in m[S.GOT]},
        )
        for m in value[S.MEMBERS]
    }
    updates = [(int(u[S.UPDATE_ID]), int(u[S.TICK])) for u in value[S.UPDATES]]
    return FeedTree(int(feed), int(value[S.PUBLISHER]), members, updates)


# -- older layouts ---------------------------------------------------------------------------

_PICKLED = {
    ("overlay.rappel.feeds", "FeedTree"): FeedTree,
    ("overlay.rappel.feeds", "Member"): Member,
}


class _TreeUnpickler(pickle.Unpickler):
    """Builds only `FeedTree` and `Member` (and builtins' plain values): a stored blob runs no
    other code."""

    def find_class(self, module: str, name: str):
        found = _PICKLED.get((module, name))
        if found is None:
            raise pickle.UnpicklingError(f"not a Rappel tree class: {module}.{name}")
        return found


def from_pickle(blob: bytes) -> FeedTree | None:
    """A layout-0 tree (a pickled `FeedTree`) when its fields are today's `FeedTree`'s and
    `Member`'s, else None: a pickle of another layout would be resumed as if it were this one's."""
    try:
        tree = _TreeUnpickler(io.BytesIO(blob)).load()
    except Exception:  # not a pickle, a class refused, a truncated blob: unpickling raises anything
        return None

    def names(cls) -> set[str]:
        return {f.name for f in fields(cls)}

    if not (isinstance(tree, FeedTree) and set(vars(tree)) == names(FeedTree)):
        return None
    if not all(isinstance(m, Member) and set(vars(m)) == names(Member) for m in tree.members.values()):
        return None
    return tree


def _layout_0(row: Mapping) -> dict | None:
    tree = from_pickle(row[S.LEGACY_TREE])
    return None if tree is None else encode(tree)


# Layout v -> v + 1, over a stored row's tree (a dict of that layout's columns); None: unreadable.
MIGRATIONS: dict[int, Callable[[Mapping], dict | None]] = {0: _layout_0}


def upgrade(row: Mapping) -> dict | None:
    """A stored row's tree in layout `LAYOUT_VERSION` (its columns as a dict), None when it
    cannot be read; a row without `layout_version` (or with it null) is of layout 0."""
    version = row.get(S.LAYOUT_VERSION)
    version = 0 if version is None or row.get(S.LEGACY_TREE) is not None else version
    if version > LAYOUT_VERSION:
        raise ValueError(f"a tree of layout {version}, newer than this code's {LAYOUT_VERSION}")
    tree: Mapping | None = row
    while version < LAYOUT_VERSION and tree is not None:
        tree = MIGRATIONS[version](tree)
        version += 1
    return None if tree is None else {name: tree[name] for name in TREE_COLUMNS}


def outdated(frame: DataFrame) -> bool:
    """Whether stored tree rows hold a tree of an older layout (a layout-0 column, or a row
    whose `layout_version` is older). Read from the schema alone while the current layout is the
    first with columns (no row can be older then): a Rappel run's start costs no Spark job; a
    later layout adds one small job."""
    if S.LEGACY_TREE in frame.columns or S.LAYOUT_VERSION not in frame.columns:
        return True
    if LAYOUT_VERSION == FIRST_COLUMN_LAYOUT:
        return False
    return not frame.where(frame[S.LAYOUT_VERSION] < LAYOUT_VERSION).isEmpty()


def current_rows(frame: DataFrame) -> DataFrame:
    """Stored tree rows of any known layout in layout `LAYOUT_VERSION` (lazy): the other columns
    (run_id, round, topic_id) kept, then `layout_version` and `schema.RAPPEL_TREE_COLUMNS`; rows
    whose tree cannot be read are left out."""
    tree_names = {S.LEGACY_TREE, S.LAYOUT_VERSION, *TREE_COLUMNS}
    keys = [f for f in frame.schema.fields if f.name not in tree_names]
    out = StructType(
        [
            *keys,
            StructField(S.LAYOUT_VERSION, IntegerType(), True),
            *(StructField(name, kind, True) for name, kind, _ in S.RAPPEL_TREE_COLUMNS),
        ]
    )
    arrow = to_arrow_type(out)
    schema = pa.schema(list(arrow))
    names = [f.name for f in keys]

    def rows(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            kept = []
            for row in batch.to_pylist():
                tree = upgrade(row)
                if tree is not None:
                    kept.append({**{n: row[n] for n in names}, S.LAYOUT_VERSION: LAYOUT_VERSION, **tree})
            yield pa.RecordBatch.from_pylist(kept, schema=schema)

    return frame.mapInArrow(rows, out)
