"""Input files checked before Spark reads them, and Spark's read failures, as one-line
`InputError`s naming the file.

A Spark task that fails on a broken file logs a JVM stack trace before the error reaches Python,
so the checks that can be made cheaply run first, on local files only (a URI is left to Spark):
a Parquet file starts and ends with its `PAR1` marker, a `.gz` file starts with the gzip marker.
What only reading finds (a `.gz` file cut short) is translated from Spark's failure.
"""

from __future__ import annotations

import re
from pathlib import Path

from overlay.errors import InputError, excerpt

PARQUET_MARKER = b"PAR1"
GZIP_MARKER = b"\x1f\x8b"
_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:/")


def local_path(path: str) -> Path | None:
    """The local file or folder `path` names; None for a URI (s3://, dbfs:/, abfss://...)."""
    if _URI.match(path) and not path.startswith("file:"):
        return None
    return Path(path.removeprefix("file://").removeprefix("file:")).expanduser()


def data_files(path: Path) -> list[Path]:
    """The files Spark reads for a local path: the file itself, or the files under a folder that
    are neither hidden nor named `_...` (`_SUCCESS`, checksums)."""
    if path.is_file():
        return [path]
    return sorted(
        p
        for p in path.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(path).parts)
    )


def check_parquet_files(path: str) -> None:
    """Every local file of a Parquet input carries the `PAR1` marker at both ends (an empty,
    truncated or non-Parquet file fails here, before a Spark task does)."""
    local = local_path(path)
    if local is None or not local.exists():
        return  # a missing path is Spark's PATH_NOT_FOUND, which the readers translate
    files = data_files(local)
    if not files:
        raise InputError(f"{path}: no Parquet files in this folder; check the --path argument")
    for file in files:
        size = file.stat().st_size
        with file.open("rb") as handle:
            head = handle.read(len(PARQUET_MARKER))
            handle.seek(max(size - len(PARQUET_MARKER), 0))
            tail = handle.read(len(PARQUET_MARKER))
        if size == 0:
            problem = "it is empty (0 bytes)"
        elif head != PARQUET_MARKER:
            problem = "it does not start with the PAR1 marker (another format?)"
        elif size < 3 * len(PARQUET_MARKER) or tail != PARQUET_MARKER:
            problem = "its footer is missing (a truncated copy?)"
        else:
            continue
        raise InputError(f"{file}: not a Parquet file: {problem}; write or copy it again")


def check_gzip_files(path: str) -> None:
    """Every local `.gz` file of a text input starts with the gzip marker."""
    local = local_path(path)
    if local is None or not local.exists():
        return
    for file in data_files(local):
        if file.name.lower().endswith(".gz"):
            with file.open("rb") as handle:
                if handle.read(len(GZIP_MARKER)) != GZIP_MARKER:
                    raise InputError(
                        f"{file}: not a gzip file, though its name ends in .gz; compress it again, or rename it"
                    )


def read_failure(error: Exception, path: str) -> InputError | None:
    """Spark's failure to read `path` as an InputError: a path that does not exist, or a file it
    could not decode (the innermost cause says why, e.g. a compressed stream that ends early).
    None for any other error."""
    text = str(error)
    if "PATH_NOT_FOUND" in text or "Path does not exist" in text:
        return InputError(f"file not found: {path}. Check the --path argument.")
    if "FAILED_READ_FILE" in text or "CANNOT_READ_FILE_FOOTER" in text:
        causes = [line.removeprefix("Caused by: ") for line in text.splitlines() if line.startswith("Caused by: ")]
        cause = re.sub(r"^(?:[a-z_]\w*\.)+", "", causes[-1]) if causes else "the file is corrupt"  # no package
        return InputError(
            f"{path}: cannot be read ({excerpt(cause, 120)}); check that the file is complete (a truncated copy?)"
        )
    return None
