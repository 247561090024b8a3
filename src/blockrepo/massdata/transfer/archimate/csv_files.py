"""Archi's CSV export, three files in a zip (elements with the model's own row, relations, properties), read
back from a zip that holds them (an export writes them: `export.archi_csv_zip`)."""

from __future__ import annotations

import io
import zipfile

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata.transfer.archimate.model import ArchimateModel
from blockrepo.massdata.transfer.archimate.reader import read_archi_csv

FILES = ("elements.csv", "relations.csv", "properties.csv")
# What a zip of CSV files may unpack to at most: the files are read whole.
MAX_UNZIPPED_BYTES = 1 << 30


def _bad(message: str) -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem("body", "malformed_body", message)])


def read_archi_csv_zip(body: bytes | bytearray, max_concepts: int) -> ArchimateModel:
    """The model of a zip of Archi's CSV files (named `elements.csv` … or with Archi's prefix,
    `<prefix>elements.csv` …)."""
    try:
        archive = zipfile.ZipFile(io.BytesIO(body))
    except zipfile.BadZipFile as exc:
        raise _bad(f"not a zip file: {exc}") from exc
    with archive:
        found: dict[str, bytes] = {}
        total = 0
        for info in archive.infolist():
            kind = next((f for f in FILES if info.filename.rsplit("/", 1)[-1].endswith(f)), None)
            if kind is None or kind in found:
                continue
            total += info.file_size
            if total > MAX_UNZIPPED_BYTES:
                raise _bad(f"the CSV files unpack to more than {MAX_UNZIPPED_BYTES} bytes")
            try:
                found[kind] = archive.read(info)
            except (zipfile.BadZipFile, OSError, EOFError) as exc:
                raise _bad(f"{info.filename}: {exc}") from exc
    if "elements.csv" not in found:
        raise _bad("the zip holds no elements.csv")
    return read_archi_csv(
        found["elements.csv"], found.get("relations.csv"), found.get("properties.csv"), max_concepts
    )
