"""Archi's CSV export, three files in a zip (elements with the model's own row, relations, properties):
written from a model in memory, and read back from a zip that holds them."""

from __future__ import annotations

import csv
import io
import zipfile

from blockrepo.errors import BadRequest, ErrorItem
from blockrepo.massdata.transfer.archimate.model import ArchimateModel
from blockrepo.massdata.transfer.archimate.reader import (
    ELEMENT_COLUMNS,
    PROPERTY_COLUMNS,
    RELATION_COLUMNS,
    read_archi_csv,
)

FILES = ("elements.csv", "relations.csv", "properties.csv")
# What a zip of CSV files may unpack to at most: the files are read whole.
MAX_UNZIPPED_BYTES = 1 << 30


def _file(rows: list[list[str]]) -> bytes:
    text = io.StringIO(newline="")
    writer = csv.writer(text, quoting=csv.QUOTE_ALL, lineterminator="\n")
    writer.writerows(rows)
    return text.getvalue().encode("utf-8")


def write_archi_csv(model: ArchimateModel) -> bytes:
    """The model as Archi writes it to CSV (types as Archi names them: relations end in `Relationship`),
    the three files zipped."""
    elements: list[list[str]] = [list(ELEMENT_COLUMNS)]
    elements.append([model.identifier, "ArchimateModel", model.name, "", ""])
    elements.extend([e.identifier, e.type, e.name, e.documentation or "", ""] for e in model.elements)
    relations: list[list[str]] = [list(RELATION_COLUMNS)]
    relations.extend(
        [r.identifier, f"{r.type}Relationship", r.name, r.documentation or "", r.source, r.target, ""]
        for r in model.relationships
    )
    properties: list[list[str]] = [list(PROPERTY_COLUMNS)]
    properties.extend([model.identifier, key, value] for key, value in model.properties)
    for concept in (*model.elements, *model.relationships):
        properties.extend([concept.identifier, key, value] for key, value in concept.properties)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, rows in zip(FILES, (elements, relations, properties), strict=True):
            archive.writestr(name, _file(rows))
    return out.getvalue()


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
