"""Register the lakehouse's Delta tables in a catalog schema, for SQL clients (the AI/BI dashboard).

Each catalog table is an external table over its lakehouse folder (`CREATE TABLE ... LOCATION`):
the jobs keep writing by path and the catalog reads their latest commit, so registering once is
enough and registering again changes nothing. Locally the same statements run against the Spark
session catalog.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass

from pyspark.sql import SparkSession

from overlay import schema as S
from overlay.errors import InputError
from pipelines.lakehouse import Lakehouse

REGISTERED, PRESENT, REPOINTED = "registered", "already registered", "re-pointed"
COLUMNS = ("table", "location", "status", "created_empty")
NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_-]{0,254}$")
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


class CatalogConflict(InputError):
    """A catalog object of a table's name is not that table (another location, managed, a view)."""


@dataclass(frozen=True)
class Registration:
    table: str  # the qualified catalog name
    location: str
    status: str  # REGISTERED, PRESENT or REPOINTED
    created_empty: bool = False  # `create_missing` made the Delta table for it

    def as_row(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class _Existing:
    kind: str  # EXTERNAL, MANAGED, VIEW, ...
    location: str | None


def check_name(value: str, what: str) -> str:
    if not NAME.match(value):
        raise InputError(f"{what} name '{value}' is not allowed: use letters, digits, '_' or '-'")
    return value


def _quote(*parts: str | None) -> str:
    return ".".join(f"`{part}`" for part in parts if part)


def _shown(name: str) -> str:
    return name.replace("`", "")  # names have no backticks (check_name)


def qualified_location(path: str) -> str:
    """A location the catalog resolves as the lakehouse does: a relative local path would be
    taken relative to the schema's own folder."""
    return path if SCHEME.match(path) else os.path.abspath(path)


def comparable(location: str) -> str:
    """A location without the `file:` or `dbfs:` scheme the catalog may add, for comparison."""
    text = location.strip()
    for prefix in ("file://", "file:", "dbfs:"):
        if text.startswith(prefix):
            text = text[len(prefix) :]
            break
    return text.rstrip("/") or "/"


def _existing(spark: SparkSession, name: str) -> _Existing | None:
    if not spark.catalog.tableExists(name):
        return None
    details = {row[0]: row[1] for row in spark.sql(f"DESCRIBE TABLE EXTENDED {name}").collect()}
    return _Existing(str(details.get("Type", "")).upper(), details.get("Location") or None)


def _create(spark: SparkSession, name: str, location: str) -> None:
    literal = "'" + location.replace("\\", "\\\\").replace("'", "\\'") + "'"
    try:
        spark.sql(f"CREATE TABLE IF NOT EXISTS {name} USING DELTA LOCATION {literal}")
    except Exception as error:
        if comparable(location).startswith("/Volumes/"):
            raise InputError(
                f"cannot register {_shown(name)} on {location}: Unity Catalog defines no table on files in a "
                "volume. Keep the lakehouse at an external location (s3://, abfss://, gs://; the bundle "
                f"variable `lakehouse`) to register its tables ({error})"
            ) from error
        raise


def _conflict(name: str, existing: _Existing, location: str) -> str:
    name = _shown(name)
    if existing.kind == "EXTERNAL":
        return (
            f"{name} is registered on {existing.location}, not on the lakehouse table {location}: register "
            "into another schema, or re-point it (--repoint)"
        )
    kind = "a view" if existing.kind == "VIEW" else f"a {existing.kind.lower() or 'catalog'} table"
    return f"{name} is {kind}, not the lakehouse table {location}: drop or rename it, or register into another schema"


def _same_location(existing: _Existing, location: str) -> bool:
    return bool(existing.location) and comparable(existing.location) == comparable(location)


def _register(spark: SparkSession, name: str, location: str, existing: _Existing | None, created: bool) -> Registration:
    if existing is not None and _same_location(existing, location):
        return Registration(_shown(name), location, PRESENT, created)
    status = REGISTERED
    if existing is not None:  # an external table elsewhere, to re-point (checked before anything changed)
        spark.sql(f"DROP TABLE {name}")  # an external table: its files stay where they are
        status = REPOINTED
    _create(spark, name, location)
    now = _existing(spark, name)  # a concurrent registration may have won the race
    if now is None or not _same_location(now, location):
        raise CatalogConflict(_conflict(name, now or _Existing("", None), location))
    return Registration(_shown(name), location, status, created)


def register_tables(
    spark: SparkSession,
    lakehouse: Lakehouse,
    schema: str,
    catalog: str | None = None,
    create_missing: bool = False,
    repoint: bool = False,
    tables: Sequence[S.TableSpec] = S.ALL_TABLES,
) -> list[Registration]:
    """Register the lakehouse's `tables` in `catalog.schema` (the session's current catalog
    when None): those it stores, and with `create_missing` the others too, created empty first
    (so every query over the schema resolves before a job writes them). `repoint`: an external
    table of the name on another location is re-pointed; any other object of the name is an
    error, raised before anything changes. Idempotent."""
    check_name(schema, "schema")
    if catalog:
        check_name(catalog, "catalog")
    namespace = _quote(catalog, schema)
    planned = []
    for table in tables:
        stored = lakehouse.exists(table)
        if stored or create_missing:
            name = f"{namespace}.{_quote(table.name)}"
            planned.append((table, name, qualified_location(lakehouse.path(table)), _existing(spark, name), stored))
    if not planned:
        raise InputError(f"the lakehouse {lakehouse.root} has no tables yet: run a job (ingest, ...) first")
    conflicts = [
        _conflict(name, existing, location)
        for _, name, location, existing, _ in planned
        if existing is not None
        and not _same_location(existing, location)
        and not (repoint and existing.kind == "EXTERNAL")
    ]
    if conflicts:
        raise CatalogConflict("; ".join(conflicts))
    spark.sql(f"CREATE SCHEMA IF NOT EXISTS {namespace}")
    registrations = []
    for table, name, location, existing, stored in planned:
        if not stored:
            lakehouse.ensure(table)
        registrations.append(_register(spark, name, location, existing, created=not stored))
    return registrations
