"""Reads an ArchiMate exchange file (3.0/3.1, or the older 2.1) and Archi's CSV files into an
`ArchimateModel`, with a parser that resolves no entity, loads no DTD and touches no network, and within
bounds on the elements it takes."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from lxml import etree

from blockrepo.errors import BadRequest, ErrorItem, PayloadTooLarge
from blockrepo.massdata.transfer.archimate.mapping import archimate_type
from blockrepo.massdata.transfer.archimate.model import ArchimateModel, Concept

NAMESPACE_3 = "http://www.opengroup.org/xsd/archimate/3.0/"
NAMESPACE_2 = "http://www.opengroup.org/xsd/archimate"
XSI_TYPE = "{http://www.w3.org/2001/XMLSchema-instance}type"
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"


def _problem(message: str, pointer: str = "body") -> BadRequest:
    return BadRequest(message, code="malformed_body", errors=[ErrorItem(pointer, "malformed_body", message)])


def _too_many(limit: int) -> PayloadTooLarge:
    return PayloadTooLarge(
        f"the model holds more than {limit} elements and relationships",
        extra={"limit": {"name": "import_archimate_max_concepts", "value": limit}},
    )


Source = bytes | bytearray | Path  # a file's bytes, or the file (read as it is parsed)


def _declares(source: Source, marker: bytes) -> bool:
    """Whether `marker` occurs in the source, read a megabyte at a time from a file."""
    if not isinstance(source, Path):
        return marker in source
    with source.open("rb") as file:
        tail = b""
        while piece := file.read(1 << 20):
            if marker in tail + piece:
                return True
            tail = piece[-len(marker) :]
    return False


@contextmanager
def _parsing(
    body: Source, events: tuple[str, ...], tag: list[str] | None = None
) -> Iterator[Iterator[tuple[str, etree._Element]]]:
    """The parser's events over the source (a file closed again however the reading ends).

    No entity is expanded, no DTD loaded, nothing fetched, no "huge tree" (lxml's depth and text bounds
    stay on): a billion laughs, an external entity or a quadratic blow-up ends as a parse error. `tag`
    filters in C, so Python sees only the nodes it takes."""
    with body.open("rb") if isinstance(body, Path) else io.BytesIO(body) as stream:
        yield etree.iterparse(
            stream,
            events=events,
            tag=tag,
            resolve_entities=False,
            load_dtd=False,
            no_network=True,
            huge_tree=False,
            remove_comments=True,
            remove_pis=True,
        )


def _text(node: etree._Element, namespace: str, tag: str) -> str | None:
    """The text of `node`'s first child `tag` in English or without a language, else its first; None
    without such a child."""
    found = node.findall(f"{{{namespace}}}{tag}")
    for child in found:
        if child.get(XML_LANG) in (None, "en"):
            return (child.text or "").strip()
    return (found[0].text or "").strip() if found else None


def _head(body: Source) -> tuple[ArchimateModel, str, list[tuple[str, str]]]:
    """The model's root and what precedes its elements: its identifier, name and property references."""
    model: ArchimateModel | None = None
    namespace = ""
    properties: list[tuple[str, str]] = []
    with _parsing(body, ("start", "end")) as events:
        for event, node in events:
            if model is None:
                tag = etree.QName(node)
                if tag.localname != "model" or tag.namespace not in (NAMESPACE_3, NAMESPACE_2):
                    raise _problem(
                        f"not an ArchiMate exchange file: the root is {node.tag!r}, not <model> in "
                        f"{NAMESPACE_3} (3.x) or {NAMESPACE_2} (2.1)"
                    )
                namespace = tag.namespace or ""
                model = ArchimateModel(
                    identifier=node.get("identifier") or "",
                    format="3.1" if namespace == NAMESPACE_3 else "2.1",
                )
                continue
            parent = node.getparent()
            if parent is None or parent.getparent() is not None:
                continue  # below the model's children
            local = etree.QName(node).localname
            if event == "start":
                if local in ("elements", "relationships", "organizations", "organization", "views"):
                    break  # the head ends where the content starts
                continue
            if local in ("name", "label") and not model.name:
                model.name = (node.text or "").strip()
            elif local == "properties":
                properties = _references(node, namespace, model.format)
    if model is None:
        raise _problem("not an ArchiMate exchange file: empty")
    return model, namespace, properties


def read_exchange(body: Source, max_concepts: int) -> ArchimateModel:
    """The model of an exchange file (its bytes, or the file); 400 for anything that is not one, 413
    beyond `max_concepts`."""
    if _declares(body, b"<!DOCTYPE") or _declares(body, b"<!ENTITY"):
        raise _problem("a document type declaration (DOCTYPE, ENTITY) is not accepted")
    try:
        model, namespace, model_properties = _head(body)
        # Each property names its definition, which comes after the elements: (concept, references)
        # pairs are named once the definitions are read.
        definitions: dict[str, str] = {}
        pending: list[list[tuple[str, str]]] = [model_properties]
        names = ("element", "relationship", "propertyDefinition", "propertydef", "view")
        count = 0
        tags = [f"{{{namespace}}}{name}" for name in names]
        with _parsing(body, ("end",), tags) as events:
            for _, node in events:
                local = etree.QName(node).localname
                parent = node.getparent()
                parent_local = etree.QName(parent).localname if parent is not None else ""
                if local in ("element", "relationship") and parent_local in ("elements", "relationships"):
                    count += 1
                    if count > max_concepts:
                        raise _too_many(max_concepts)
                    concept = _concept(node, namespace, model.format)
                    if concept.properties:
                        pending.append(concept.properties)
                    if local == "element":
                        model.elements.append(concept)
                    else:
                        concept.source, concept.target = node.get("source") or "", node.get("target") or ""
                        model.relationships.append(concept)
                elif local in ("propertyDefinition", "propertydef"):
                    # 3.x: <name> children; 2.1: a name attribute
                    definitions[node.get("identifier") or ""] = (
                        node.get("name") or _text(node, namespace, "name") or ""
                    )
                elif local == "view":
                    model.views += 1
                else:
                    continue  # an element inside another (a view's node), taken with its container
                # What is read is let go, and the parsed nodes before it with it: memory holds one concept.
                node.clear()
                while parent is not None and node.getprevious() is not None:
                    del parent[0]
    except etree.XMLSyntaxError as exc:
        raise _problem(f"not well-formed XML: {exc}") from exc
    for references in pending:
        references[:] = [(definitions.get(reference, reference), value) for reference, value in references]
    model.properties = model_properties
    return model


def _references(node: etree._Element, namespace: str, version: str) -> list[tuple[str, str]]:
    """The properties under `node` as (definition reference, value)."""
    found: list[tuple[str, str]] = []
    reference_attribute = "propertyDefinitionRef" if version == "3.1" else "identifierref"
    for prop in node.iterfind(f"{{{namespace}}}property"):
        reference = prop.get(reference_attribute) or prop.get("identifierRef") or ""
        found.append((reference, _text(prop, namespace, "value") or ""))
    return found


def _concept(node: etree._Element, namespace: str, version: str) -> Concept:
    properties = node.find(f"{{{namespace}}}properties")
    return Concept(
        identifier=node.get("identifier") or "",
        type=archimate_type(node.get(XSI_TYPE) or ""),
        name=_text(node, namespace, "name" if version == "3.1" else "label") or "",
        documentation=_text(node, namespace, "documentation"),
        properties=_references(properties, namespace, version) if properties is not None else [],
    )


# Archi's CSV files: elements (and the model as type ArchimateModel), relations, properties.
ELEMENT_COLUMNS = ("ID", "Type", "Name", "Documentation", "Specialization")
RELATION_COLUMNS = ("ID", "Type", "Name", "Documentation", "Source", "Target", "Specialization")
PROPERTY_COLUMNS = ("ID", "Key", "Value")


def _rows(text: bytes, columns: tuple[str, ...], file: str) -> Iterator[dict[str, str]]:
    try:
        decoded = text.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _problem(f"{file}: not UTF-8 ({exc})", file) from exc
    reader = csv.reader(io.StringIO(decoded, newline=""), delimiter=_delimiter(decoded))
    header = next(reader, None)
    if header is None or tuple(header[: len(columns) - 1]) != columns[: len(columns) - 1]:
        raise _problem(f"{file}: the header is {', '.join(columns)}", file)
    for line, row in enumerate(reader, start=2):
        if not row:
            continue
        if len(row) < len(columns) - 1:
            raise _problem(f"{file}, line {line}: {len(columns) - 1} columns expected", file)
        yield dict(zip(header, row, strict=False))


def _lines(text: str | None) -> str:
    # Archi on Windows ends lines with CR LF inside a quoted value.
    return (text or "").replace("\r\n", "\n")


def _delimiter(text: str) -> str:
    # Archi writes commas by default, semicolons or tabs if asked; the header shows which.
    first = text.split("\n", 1)[0]
    return max((",", ";", "\t"), key=first.count)


def read_archi_csv(
    elements: bytes, relations: bytes | None, properties: bytes | None, max_concepts: int
) -> ArchimateModel:
    """The model of Archi's CSV export: its elements file, and its relations and properties files."""
    model = ArchimateModel(identifier="", format="csv")
    by_id: dict[str, Concept] = {}
    for row in _rows(elements, ELEMENT_COLUMNS, "elements.csv"):
        if row["Type"] == "ArchimateModel":
            model.identifier, model.name = row["ID"], row["Name"]
            continue
        concept = Concept(
            row["ID"], archimate_type(row["Type"]), row["Name"], _lines(row.get("Documentation"))
        )
        model.elements.append(concept)
        by_id[concept.identifier] = concept
        if len(by_id) > max_concepts:
            raise _too_many(max_concepts)
    for row in _rows(
        relations or b'"ID","Type","Name","Documentation","Source","Target"\n',
        RELATION_COLUMNS,
        "relations.csv",
    ):
        concept = Concept(
            row["ID"],
            archimate_type(row["Type"]),
            row["Name"],
            _lines(row.get("Documentation")),
            source=row["Source"],
            target=row["Target"],
        )
        model.relationships.append(concept)
        by_id[concept.identifier] = concept
        if len(by_id) > max_concepts:
            raise _too_many(max_concepts)
    for row in _rows(properties or b'"ID","Key","Value"\n', PROPERTY_COLUMNS, "properties.csv"):
        owner = by_id.get(row["ID"])
        if owner is not None:
            owner.properties.append((row["Key"], row["Value"]))
        elif row["ID"] == model.identifier:
            model.properties.append((row["Key"], row["Value"]))
    return model
