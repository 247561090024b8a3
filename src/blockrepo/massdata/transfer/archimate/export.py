"""Writes the repository (or some types; today, as of a revision, or as a planning scenario has them) as
an ArchiMate 3.1 exchange file, streamed from one snapshot: elements a batch at a time, relationships
gathered in a temporary file while the elements go out, then organizations (each type's hierarchy as
folders), property definitions and two views (information flows; systems by domain). Or as Archi's three
CSV files, zipped as they are written from the same batches."""

from __future__ import annotations

import csv
import io
import math
import re
import shutil
import tempfile
import time
import zipfile
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from typing import IO, Any, Protocol, TextIO

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.repository import chunks
from blockrepo.history.asof import element_ids_as_of, read_elements_as_of
from blockrepo.massdata.listing import begin_snapshot
from blockrepo.massdata.transfer.archimate.mapping import ArchimateMapping, FlowRule
from blockrepo.massdata.transfer.archimate.reader import ELEMENT_COLUMNS, PROPERTY_COLUMNS, RELATION_COLUMNS
from blockrepo.massdata.transfer.export import EXPORT_BATCH, Landscape, StoredLandscape, hierarchy_order
from blockrepo.massdata.transfer.plan import ExportPlan, TypePlan
from blockrepo.metamodel.snapshot import AttributeDef
from blockrepo.revisions.repository import revision_mark

NAMESPACE = "http://www.opengroup.org/xsd/archimate/3.0/"
SCHEMA_LOCATION = f"{NAMESPACE} http://www.opengroup.org/xsd/archimate/3.1/archimate3_Diagram.xsd"
# Identifiers of what an export writes: `br-<type>-<element id>`, `br-<relation type>-<source>-<target>`,
# `br-parent-<child id>`; an import reads the type and id back (`parse_identifier`).
IDENTIFIER = re.compile(r"^br-([A-Za-z][A-Za-z0-9_]*)-(\d+)$")
# The model's own properties: the revision it shows and that revision's mark, by which an import into the
# same repository knows that identifiers name its elements (as the JSON export's `revisionMark`).
REVISION_PROPERTY = "blockrepo revision"
MARK_PROPERTY = "blockrepo revision mark"
# The key of the planning scenario a model shows (only in a scenario's export; the revision is its base).
SCENARIO_PROPERTY = "blockrepo scenario"
# Views are drawn up to this many nodes; a larger landscape is left to the diagrams of the web interface.
VIEW_NODES_MAX = 400
NODE_W, NODE_H, GAP = 160, 60, 40
# Characters XML 1.0 cannot carry (C0 controls other than tab, newline, return; lone surrogates; U+FFFE/F).
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_ESCAPES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "\r": "&#13;"})
_DATA_TYPES = {"number": "number", "date": "date", "boolean": "boolean"}
# Built-ins that an exchange file carries otherwise (name, documentation) or not at all (read-only).
_NOT_PROPERTIES = frozenset({"name", "description", "lastModificationTime", "lastModificationUser"})
Properties = Sequence[tuple[AttributeDef, str]]  # a concept's properties: attribute, value as text


def xml_text(value: str) -> str:
    """`value` escaped for an XML attribute or text, without characters XML cannot hold."""
    return _NOT_XML.sub("", value).translate(_ESCAPES)


def element_identifier(type_name: str, element_id: int) -> str:
    return f"br-{type_name}-{element_id}"


def parse_identifier(identifier: str) -> tuple[str, int] | None:
    """(type or relation name, id) of an identifier an export wrote, else None."""
    match = IDENTIFIER.match(identifier)
    return (match.group(1), int(match.group(2))) if match else None


def property_value(attribute: AttributeDef, value: Any) -> str:
    """A value as an exchange property holds it: ISO dates, intervals as `start/end`, numbers plain."""
    if attribute.value_type == "dateInterval" and isinstance(value, dict):
        return f"{value.get('start') or '..'}/{value.get('end') or '..'}"
    if attribute.value_type == "boolean":
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass
class _Drawn:
    """What the views need, gathered while the elements go out: names of the nodes that may be drawn,
    flows between them and which grouping holds which."""

    names: dict[str, str] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    flows: list[tuple[str, str, str]] = field(default_factory=list)  # identifier, source, target
    members: dict[str, list[str]] = field(default_factory=dict)  # grouping -> components


@dataclass
class _Export:
    """One export in progress."""

    plan: ExportPlan
    mapping: ArchimateMapping
    relationships: IO[bytes]
    definitions: dict[int, AttributeDef] = field(default_factory=dict)
    folders: dict[str, list[tuple[int, int | None, str]]] = field(default_factory=dict)
    drawn: _Drawn = field(default_factory=_Drawn)
    complete_flows: dict[int, tuple[int, int]] = field(default_factory=dict)
    relationships_written: int = 0

    def identifier_of(self, type_name: str, element_id: int) -> str:
        return element_identifier(type_name, element_id)

    def properties(self, attributes: Iterable[tuple[AttributeDef, list[Any]]]) -> Properties:
        found: list[tuple[AttributeDef, str]] = []
        for attribute, values in attributes:
            for value in values:
                if value is None or value == "":
                    continue
                self.definitions[attribute.id] = attribute
                found.append((attribute, property_value(attribute, value)))
        return found

    def element(
        self, identifier: str, kind: str, name: str, documentation: str, properties: Properties
    ) -> str:
        """The element's XML, which goes out with its batch."""
        parts = [f'<element identifier="{identifier}" xsi:type="{kind}">']
        parts.extend(_concept_parts(name, documentation))
        parts.append(_xml_properties(properties))
        parts.append("</element>\n")
        return "".join(parts)

    def relationship(
        self,
        identifier: str,
        kind: str,
        source: str,
        target: str,
        *,
        name: str = "",
        documentation: str = "",
        properties: Properties = (),
    ) -> None:
        parts = [
            f'<relationship identifier="{identifier}" source="{source}" target="{target}" xsi:type="{kind}">'
        ]
        if name:
            parts.append(f'<name xml:lang="en">{xml_text(name)}</name>')
        if documentation:
            parts.append(f'<documentation xml:lang="en">{xml_text(documentation)}</documentation>')
        parts.append(_xml_properties(properties))
        parts.append("</relationship>\n")
        self.relationships.write("".join(parts).encode())
        self.relationships_written += 1


def _xml_properties(properties: Properties) -> str:
    if not properties:
        return ""
    parts = [
        f'<property propertyDefinitionRef="propid-{attribute.id}"><value xml:lang="en">'
        f"{xml_text(text)}</value></property>"
        for attribute, text in properties
    ]
    return f"<properties>{''.join(parts)}</properties>"


def csv_text(value: str) -> str:
    """`value` as Archi's CSV files of an export hold it: what the exchange file holds of it, read back
    (without the characters XML cannot hold, without surrounding white space)."""
    return _NOT_XML.sub("", value).strip()


class _Rows(Protocol):
    """A CSV file being written (`csv.writer`)."""

    def writerow(self, row: Iterable[str], /) -> Any: ...

    def writerows(self, rows: Iterable[Iterable[str]], /) -> None: ...


class _CsvExport(_Export):
    """An export to Archi's CSV files: an element's row goes to `element_rows` at once, a relationship's
    to `relation_rows`, their properties to `element_properties` and `relation_properties` (properties.csv
    holds the elements' before the relationships')."""

    def __init__(
        self,
        plan: ExportPlan,
        mapping: ArchimateMapping,
        element_rows: _Rows,
        relation_rows: _Rows,
        element_properties: _Rows,
        relation_properties: _Rows,
    ) -> None:
        super().__init__(plan, mapping, io.BytesIO())  # the exchange file's relationships: none here
        self.element_rows, self.relation_rows = element_rows, relation_rows
        self.element_properties, self.relation_properties = element_properties, relation_properties

    def element(
        self, identifier: str, kind: str, name: str, documentation: str, properties: Properties
    ) -> str:
        self.element_rows.writerow([identifier, kind, csv_text(name), csv_text(documentation), ""])
        self.element_properties.writerows(
            [identifier, csv_text(attribute.name), csv_text(text)] for attribute, text in properties
        )
        return ""

    def relationship(
        self,
        identifier: str,
        kind: str,
        source: str,
        target: str,
        *,
        name: str = "",
        documentation: str = "",
        properties: Properties = (),
    ) -> None:
        self.relation_rows.writerow(
            [identifier, f"{kind}Relationship", csv_text(name), csv_text(documentation), source, target, ""]
        )
        self.relation_properties.writerows(
            [identifier, csv_text(attribute.name), csv_text(text)] for attribute, text in properties
        )
        self.relationships_written += 1


def _concept_parts(name: str, documentation: str) -> list[str]:
    parts = [f'<name xml:lang="en">{xml_text(name)}</name>']
    if documentation:
        parts.append(f'<documentation xml:lang="en">{xml_text(documentation)}</documentation>')
    return parts


def _attributes(plan: TypePlan, element: dict[str, Any]) -> list[tuple[AttributeDef, list[Any]]]:
    return [(a, element.get(a.name) or []) for a in plan.attributes if a.name not in _NOT_PROPERTIES]


def _write_ends(run: _Export, plan: TypePlan, element: dict[str, Any], own: str, skip: set[str]) -> None:
    """The element's source ends as relationships, each directed as the mapping reads it."""
    mapping = run.mapping
    element_id = element["id"][0]
    for end in plan.ends:
        if end.name in skip:
            continue
        relation_type = end.relation_type
        rule = mapping.rule_for(relation_type)
        other_type = end.other_type
        if rule is None or (other_type not in mapping.elements and other_type not in mapping.flows):
            continue
        relation_attributes = plan.relation_attributes(end) or ()
        for entry in element.get(end.name) or []:
            other = run.identifier_of(other_type, entry["id"])
            source, target = (other, own) if rule.reversed else (own, other)
            attributes = entry.get("attributes") or {}
            properties = run.properties((a, attributes.get(a.name) or []) for a in relation_attributes)
            run.relationship(
                f"br-{end.relation_type.name}-{element_id}-{entry['id']}",
                rule.relationship,
                source,
                target,
                properties=properties,
            )
            if rule.relationship == "Aggregation" and source == own:
                run.drawn.members.setdefault(own, []).append(other)


def _flow_ends(
    run: _Export, plan: TypePlan, flow: FlowRule, element: dict[str, Any]
) -> tuple[str, str] | None:
    """The identifiers of the two elements an element written as a relationship joins, if it names both
    (and both are exported)."""
    found = []
    for end_name in (flow.source_end, flow.target_end):
        end = plan.type_def.ends.get(end_name)
        entries = element.get(end_name) or []
        if end is None or end not in plan.ends or not entries or end.other_type not in run.mapping.elements:
            return None
        found.append(run.identifier_of(end.other_type, entries[0]["id"]))
    return found[0], found[1]


def _write_batch(run: _Export, plan: TypePlan, elements: list[dict[str, Any]]) -> str:
    type_name = plan.type_def.name
    mapping = run.mapping
    kind = mapping.elements.get(type_name)
    flow: FlowRule | None = mapping.flows.get(type_name)
    folder = run.folders.setdefault(type_name, [])
    out: list[str] = []
    for element in elements:
        element_id = element["id"][0]
        own = run.identifier_of(type_name, element_id)
        name = element["name"][0]
        documentation = (element.get("description") or [""])[0]
        properties = run.properties(_attributes(plan, element))
        parent = (element.get("parent") or [None])[0]
        folder.append((element_id, parent["id"] if parent else None, name))
        skip: set[str] = set()
        ends = _flow_ends(run, plan, flow, element) if flow is not None else None
        if flow is not None and ends is not None:
            skip = {flow.source_end, flow.target_end}
            run.relationship(
                own,
                flow.relationship,
                *ends,
                name=name,
                documentation=documentation,
                properties=properties,
            )
            run.drawn.flows.append((own, *ends))
        elif kind is not None or flow is not None:
            written = kind if kind is not None else flow.otherwise  # type: ignore[union-attr]
            out.append(run.element(own, written, name, documentation, properties))
            if written in ("ApplicationComponent", "Grouping"):
                run.drawn.names[own] = name
                run.drawn.kinds[own] = written
        else:
            continue
        if parent is not None and plan.type_def.hierarchical:
            run.relationship(
                f"br-parent-{element_id}",
                mapping.hierarchy,
                run.identifier_of(type_name, parent["id"]),
                own,
            )
        _write_ends(run, plan, element, own, skip)
    return "".join(out)


def _organizations(run: _Export) -> str:
    """One folder per type (its display name), each element with children a folder of its own holding it
    and them: the hierarchy as Archi's model tree shows it."""
    out = ["<organizations>"]
    for plan in run.plan.types:
        rows = run.folders.get(plan.type_def.name)
        if not rows:
            continue
        type_name = plan.type_def.name
        children: dict[int | None, list[tuple[int, str]]] = {}
        known = {element_id for element_id, _, _ in rows}
        for element_id, parent_id, name in rows:
            children.setdefault(parent_id if parent_id in known else None, []).append((element_id, name))
        out.append(f'<item><label xml:lang="en">{xml_text(plan.type_def.display_name or type_name)}</label>')
        stack: list[tuple[int, str] | None] = list(reversed(children.get(None, [])))
        while stack:
            entry = stack.pop()
            if entry is None:
                out.append("</item>")
                continue
            element_id, name = entry
            ref = f'<item identifierRef="{run.identifier_of(type_name, element_id)}"/>'
            below = children.get(element_id)
            if not below:
                out.append(ref)
                continue
            out.append(f'<item><label xml:lang="en">{xml_text(name)}</label>{ref}')
            stack.append(None)
            stack.extend(reversed(below))
        out.append("</item>")
    out.append("</organizations>\n")
    return "".join(out) if len(out) > 2 else ""


def _definitions(run: _Export, extra: list[tuple[str, str]]) -> str:
    out = ["<propertyDefinitions>"]
    for key, name in extra:
        out.append(f'<propertyDefinition identifier="{key}" type="string"><name xml:lang="en">{name}</name>')
        out.append("</propertyDefinition>")
    for attribute in sorted(run.definitions.values(), key=lambda a: a.id):
        kind = _DATA_TYPES.get(attribute.value_type, "string")
        out.append(
            f'<propertyDefinition identifier="propid-{attribute.id}" type="{kind}">'
            f'<name xml:lang="en">{xml_text(attribute.name)}</name></propertyDefinition>'
        )
    out.append("</propertyDefinitions>\n")
    return "".join(out)


def _node(identifier: str, ref: str, x: int, y: int, w: int, h: int, inner: str = "") -> str:
    return (
        f'<node identifier="{identifier}" elementRef="{ref}" xsi:type="Element" x="{x}" y="{y}" '
        f'w="{w}" h="{h}">{inner}</node>'
    )


def _flow_view(drawn: _Drawn) -> str:
    """Every application component that takes part in a flow, on a grid by name, and the flows."""
    used = sorted(
        {s for _, s, _ in drawn.flows} | {t for _, _, t in drawn.flows}, key=lambda i: drawn.names.get(i, i)
    )
    used = [identifier for identifier in used if identifier in drawn.names]
    if not used or len(used) > VIEW_NODES_MAX:
        return ""
    columns = max(1, math.ceil(math.sqrt(len(used))))
    out = ['<view identifier="br-view-flows" xsi:type="Diagram"><name xml:lang="en">Information flows</name>']
    nodes: dict[str, str] = {}
    for index, identifier in enumerate(used):
        row, column = divmod(index, columns)
        nodes[identifier] = f"n-flows-{identifier}"
        x, y = GAP + column * (NODE_W + 2 * GAP), GAP + row * (NODE_H + 2 * GAP)
        out.append(_node(nodes[identifier], identifier, x, y, NODE_W, NODE_H))
    for identifier, source, target in drawn.flows:
        if source in nodes and target in nodes:
            out.append(
                f'<connection identifier="c-flows-{identifier}" relationshipRef="{identifier}" '
                f'xsi:type="Relationship" source="{nodes[source]}" target="{nodes[target]}"/>'
            )
    out.append("</view>")
    return "".join(out)


def _landscape_view(drawn: _Drawn) -> str:
    """Each grouping that holds application components, as a box with them inside, the boxes in a row."""
    groups = [
        (grouping, [m for m in members if drawn.kinds.get(m) == "ApplicationComponent"])
        for grouping, members in drawn.members.items()
        if drawn.kinds.get(grouping) == "Grouping"
    ]
    groups = [(g, sorted(set(m), key=lambda i: drawn.names[i])) for g, m in groups if m]
    if not groups or sum(len(m) + 1 for _, m in groups) > VIEW_NODES_MAX:
        return ""
    out = ['<view identifier="br-view-landscape" xsi:type="Diagram"><name xml:lang="en">Landscape</name>']
    x = GAP
    for grouping, members in sorted(groups, key=lambda g: drawn.names[g[0]]):
        columns = max(1, math.ceil(math.sqrt(len(members))))
        rows = math.ceil(len(members) / columns)
        width = columns * (NODE_W + GAP) + GAP
        height = rows * (NODE_H + GAP) + 2 * GAP
        inner = []
        for index, member in enumerate(members):
            row, column = divmod(index, columns)
            inner.append(
                _node(
                    f"n-{grouping}-{member}",
                    member,
                    x + GAP + column * (NODE_W + GAP),
                    GAP + 2 * GAP + row * (NODE_H + GAP),
                    NODE_W,
                    NODE_H,
                )
            )
        out.append(_node(f"n-{grouping}", grouping, x, GAP, width, height, "".join(inner)))
        x += width + GAP
    out.append("</view>")
    return "".join(out)


ElementBatches = Callable[[TypePlan], Generator[list[dict[str, Any]], None, None]]


def archimate_chunks(
    db: Session,
    plan: ExportPlan,
    mapping: ArchimateMapping,
    revision: int,
    batches: ElementBatches,
    name: str,
    scenario: str | None = None,
) -> Iterator[bytes]:
    """The exchange file in pieces: each batch of elements as it is read, then the rest; `scenario`: the
    key of the planning scenario it shows (`revision` being its base)."""
    mark = revision_mark(db, revision) or ""
    # Said in the model, so that nothing is left out unnoticed: types the mapping gives no element.
    left_out = [
        p.type_def.name
        for p in plan.types
        if p.type_def.name not in mapping.elements and p.type_def.name not in mapping.flows
    ]
    documentation = (
        f'<documentation xml:lang="en">Not in this model (no ArchiMate element in the mapping): '
        f"{xml_text(', '.join(left_out))}</documentation>\n"
        if left_out
        else ""
    )
    extra = [("propid-blockrepo-revision", REVISION_PROPERTY), ("propid-blockrepo-mark", MARK_PROPERTY)]
    scenario_property = ""
    if scenario is not None:
        extra.append(("propid-blockrepo-scenario", SCENARIO_PROPERTY))
        scenario_property = (
            '<property propertyDefinitionRef="propid-blockrepo-scenario">'
            f'<value xml:lang="en">{xml_text(scenario)}</value></property>'
        )
    yield (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        f'<model xmlns="{NAMESPACE}" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" '
        f'xsi:schemaLocation="{SCHEMA_LOCATION}" identifier="br-model-{revision}">\n'
        f'<name xml:lang="en">{xml_text(name)}</name>\n{documentation}'
        '<properties><property propertyDefinitionRef="propid-blockrepo-revision">'
        f'<value xml:lang="en">{revision}</value></property>'
        '<property propertyDefinitionRef="propid-blockrepo-mark">'
        f'<value xml:lang="en">{mark}</value></property>{scenario_property}</properties>\n'
    ).encode()
    with tempfile.TemporaryFile() as relationships:
        run = _Export(plan, mapping, relationships)
        wrote_elements = False
        for type_plan in plan.types:
            type_batches = batches(type_plan)
            with closing(type_batches):
                for elements in type_batches:
                    text = _write_batch(run, type_plan, elements)
                    if text:
                        # The schema wants an element in <elements>: an empty selection writes none.
                        yield (text if wrote_elements else "<elements>\n" + text).encode()
                        wrote_elements = True
        if wrote_elements:
            yield b"</elements>\n"
        if run.relationships_written:
            yield b"<relationships>\n"
            relationships.seek(0)
            while piece := relationships.read(1 << 20):
                yield piece
            yield b"</relationships>\n"
    yield _organizations(run).encode()
    yield _definitions(run, extra).encode()
    views = _flow_view(run.drawn) + _landscape_view(run.drawn)
    if views:
        yield f"<views><diagrams>{views}</diagrams></views>\n".encode()
    yield b"</model>\n"


def archi_csv_zip(
    db: Session,
    plan: ExportPlan,
    mapping: ArchimateMapping,
    revision: int,
    batches: ElementBatches,
    name: str,
    target: IO[bytes],
    scenario: str | None = None,
) -> None:
    """Archi's three CSV files of the export `archimate_chunks` writes (its elements, relationships and
    properties as Archi's CSV export of that file has them), zipped into `target` as they are written:
    elements.csv a batch at a time, relations.csv and properties.csv gathered in temporary files
    meanwhile. Memory holds a batch, not the export. `scenario`: the key of the planning scenario it
    shows (`revision` being its base)."""
    mark = revision_mark(db, revision) or ""
    identifier = f"br-model-{revision}"
    with (
        zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive,
        _text_spool() as relations,
        _text_spool() as element_properties,
        _text_spool() as relation_properties,
    ):
        with _zip_entry(archive, "elements.csv") as elements:
            element_rows = _csv_rows(elements)
            element_rows.writerow(ELEMENT_COLUMNS)
            element_rows.writerow([identifier, "ArchimateModel", csv_text(name), "", ""])
            run = _CsvExport(
                plan,
                mapping,
                element_rows,
                _csv_rows(relations),
                _csv_rows(element_properties),
                _csv_rows(relation_properties),
            )
            for type_plan in plan.types:
                type_batches = batches(type_plan)
                with closing(type_batches):
                    for batch in type_batches:
                        _write_batch(run, type_plan, batch)
        with _zip_entry(archive, "relations.csv") as entry:
            _csv_rows(entry).writerow(RELATION_COLUMNS)
            _copy_text(relations, entry)
        with _zip_entry(archive, "properties.csv") as entry:
            property_rows = _csv_rows(entry)
            property_rows.writerow(PROPERTY_COLUMNS)
            property_rows.writerow([identifier, REVISION_PROPERTY, str(revision)])
            property_rows.writerow([identifier, MARK_PROPERTY, mark])
            if scenario is not None:
                property_rows.writerow([identifier, SCENARIO_PROPERTY, csv_text(scenario)])
            _copy_text(element_properties, entry)
            _copy_text(relation_properties, entry)


def _csv_rows(file: TextIO) -> _Rows:
    return csv.writer(file, quoting=csv.QUOTE_ALL, lineterminator="\n")


def _text_spool() -> TextIO:
    return tempfile.TemporaryFile("w+", encoding="utf-8", newline="")


def _copy_text(spool: TextIO, target: TextIO) -> None:
    spool.seek(0)
    shutil.copyfileobj(spool, target, 1 << 20)


@contextmanager
def _zip_entry(archive: zipfile.ZipFile, name: str) -> Iterator[TextIO]:
    """A file of the zip written as UTF-8 text, compressed as it is written."""
    info = zipfile.ZipInfo(name, date_time=time.localtime()[:6])
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o600 << 16  # as `ZipFile.writestr` gives a file
    with archive.open(info, "w") as entry, io.TextIOWrapper(entry, encoding="utf-8", newline="") as text:
        yield text


@dataclass(frozen=True)
class _Source:
    """What an export reads: the revision it shows, each type's elements a batch at a time, and the key of
    the planning scenario it shows (None: main)."""

    revision: int
    batches: ElementBatches
    scenario: str | None


def _source(
    db: Session, plan: ExportPlan, actor: Actor, as_of: int | None, landscape: Landscape | None
) -> _Source:
    """Today's state, as of a revision (read through history, as `GET /api/massdata/{type}?asOf=` reads
    it), or `landscape` (a planning scenario's, in hierarchy order as in main)."""
    if as_of is not None:
        revision = as_of

        def past(type_plan: TypePlan) -> Generator[list[dict[str, Any]], None, None]:
            type_def = type_plan.type_def
            for ids in chunks(element_ids_as_of(db, type_def, revision), EXPORT_BATCH):
                yield read_elements_as_of(
                    db, plan.metamodel, actor, type_def, ids, revision, view=type_plan.view
                )

        return _Source(revision, past, None)
    read = landscape or StoredLandscape(db)

    def in_order(type_plan: TypePlan) -> Generator[list[dict[str, Any]], None, None]:
        order = hierarchy_order(read.placements(type_plan.type_def))
        yield from read.read_batches(type_plan.view, chunks(order, EXPORT_BATCH))

    return _Source(read.revision, in_order, None if read.scenario is None else str(read.scenario["key"]))


def write_archimate(
    db: Session,
    plan: ExportPlan,
    mapping: ArchimateMapping,
    actor: Actor,
    *,
    as_of: int | None = None,
    name: str = "blockrepo",
    landscape: Landscape | None = None,
) -> Iterator[bytes]:
    """`archimate_chunks` of the session's snapshot (`begin_snapshot`): today's state, as of a revision,
    or a planning scenario's (`landscape`)."""
    source = _source(db, plan, actor, as_of, landscape)
    return archimate_chunks(db, plan, mapping, source.revision, source.batches, name, source.scenario)


def write_archi_csv(
    db: Session,
    plan: ExportPlan,
    mapping: ArchimateMapping,
    actor: Actor,
    target: IO[bytes],
    *,
    as_of: int | None = None,
    name: str = "blockrepo",
    landscape: Landscape | None = None,
) -> None:
    """`archi_csv_zip` of the session's snapshot (`begin_snapshot`) into `target`: today's state, as of
    a revision, or a planning scenario's (`landscape`)."""
    source = _source(db, plan, actor, as_of, landscape)
    archi_csv_zip(db, plan, mapping, source.revision, source.batches, name, target, source.scenario)


def stream_archimate(
    open_session: Callable[[], Session],
    plan: ExportPlan,
    mapping: ArchimateMapping,
    actor: Actor,
    *,
    as_of: int | None = None,
    landscape: Callable[[Session], Landscape] | None = None,
) -> Iterator[bytes]:
    """`write_archimate` from one snapshot in a session of its own (the request's is gone by then); with
    `landscape`, of what it reads in that session (a planning scenario's state)."""
    with open_session() as db:
        begin_snapshot(db)
        read = None if landscape is None else landscape(db)
        yield from write_archimate(db, plan, mapping, actor, as_of=as_of, landscape=read)


def export_archi_csv(
    open_session: Callable[[], Session],
    plan: ExportPlan,
    mapping: ArchimateMapping,
    actor: Actor,
    target: IO[bytes],
    *,
    as_of: int | None = None,
    landscape: Callable[[Session], Landscape] | None = None,
) -> None:
    """`write_archi_csv` from one snapshot in a session of its own, as `stream_archimate`."""
    with open_session() as db:
        begin_snapshot(db)
        read = None if landscape is None else landscape(db)
        write_archi_csv(db, plan, mapping, actor, target, as_of=as_of, landscape=read)
