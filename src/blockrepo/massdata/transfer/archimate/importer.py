"""Maps an ArchiMate model onto building blocks and imports it through the import of exports: elements
by the mapping's types, properties into the attributes of the same name, relationships into relation
ends, parents and flow elements, and a report of everything it could not map."""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.elements.repository import ids_by_name as element_ids_by_name
from blockrepo.elements.values import ValueProblem, check_name
from blockrepo.errors import BlockrepoError
from blockrepo.massdata.transfer.archimate import repository
from blockrepo.massdata.transfer.archimate.export import MARK_PROPERTY, REVISION_PROPERTY, parse_identifier
from blockrepo.massdata.transfer.archimate.mapping import ArchimateMapping
from blockrepo.massdata.transfer.archimate.model import ArchimateModel, Concept
from blockrepo.massdata.transfer.document import Document
from blockrepo.massdata.transfer.importer import ImportReport, import_document
from blockrepo.metamodel.snapshot import AttributeDef, BlockTypeDef, Metamodel, RelationTypeDef
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.revisions.repository import revision_mark

# Entries of each list of the report at most; the rest are counted.
MAX_LISTED = 1000
_NUMBER = re.compile(r"^[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?$")


@dataclass
class MappingReport:
    """What an ArchiMate import read and what became of it."""

    format: str
    elements_read: int = 0
    relationships_read: int = 0
    views_ignored: int = 0
    mapped: dict[str, int] = field(default_factory=dict)  # building block type -> records
    relations: dict[str, int] = field(default_factory=dict)  # relation type, "parent" -> entries
    not_mapped: list[dict[str, str]] = field(default_factory=list)
    not_mapped_count: int = 0
    properties_not_mapped: list[dict[str, str]] = field(default_factory=list)
    properties_not_mapped_count: int = 0

    def skip(self, concept: Concept, reason: str) -> None:
        self.not_mapped_count += 1
        if len(self.not_mapped) < MAX_LISTED:
            self.not_mapped.append(
                {
                    "identifier": concept.identifier,
                    "type": concept.type,
                    "name": concept.name,
                    "reason": reason,
                }
            )

    def skip_property(self, concept: Concept, key: str, reason: str) -> None:
        self.properties_not_mapped_count += 1
        if len(self.properties_not_mapped) < MAX_LISTED:
            self.properties_not_mapped.append(
                {"identifier": concept.identifier, "key": key, "reason": reason}
            )

    def as_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "elementsRead": self.elements_read,
            "relationshipsRead": self.relationships_read,
            "viewsIgnored": self.views_ignored,
            "mapped": dict(sorted(self.mapped.items())),
            "relations": dict(sorted(self.relations.items())),
            "notMapped": self.not_mapped,
            "notMappedCount": self.not_mapped_count,
            "propertiesNotMapped": self.properties_not_mapped,
            "propertiesNotMappedCount": self.properties_not_mapped_count,
        }


@dataclass
class _Target:
    """A concept of the file as what it became: the record of an element of `type_def` named `name`."""

    type_def: BlockTypeDef
    name: str
    record: dict[str, Any]
    identifier: str


def _converter(attribute: AttributeDef) -> Callable[[str], Any]:
    kind = attribute.value_type

    def number(text: str) -> Any:
        if not _NUMBER.match(text.strip()):
            raise ValueError("not a number")
        value = float(text)
        return int(value) if value.is_integer() and abs(value) < 2**53 else value

    def date(text: str) -> Any:
        return dt.date.fromisoformat(text.strip()[:10]).isoformat()

    def interval(text: str) -> Any:
        start, separator, end = text.partition("/")
        if not separator:
            raise ValueError("an interval is start/end")
        return {
            "start": None if start.strip() in ("", "..") else date(start),
            "end": None if end.strip() in ("", "..") else date(end),
        }

    def boolean(text: str) -> Any:
        lowered = text.strip().lower()
        if lowered not in ("true", "false", "yes", "no", "1", "0"):
            raise ValueError("not true or false")
        return lowered in ("true", "yes", "1")

    def literal(text: str) -> Any:
        if attribute.literal_named(text.strip()) is None:
            raise ValueError(f"not one of {', '.join(lit.name for lit in attribute.literals)}")
        return text.strip()

    return {
        "number": number,
        "date": date,
        "dateInterval": interval,
        "boolean": boolean,
        "enum": literal,
    }.get(kind, str)


class _Mapper:
    def __init__(
        self,
        metamodel: Metamodel,
        actor: Actor,
        mapping: ArchimateMapping,
        model: ArchimateModel,
        *,
        own: bool = False,
        known: dict[str, int] | None = None,
    ) -> None:
        self.metamodel, self.actor, self.mapping, self.model = metamodel, actor, mapping, model
        # Whose identifiers name stored elements: a blockrepo export of this repository's (`own`), and
        # those an earlier import of the model remembered (`known`: identifier -> element id).
        self.own = own
        self.known = known or {}
        self.report = MappingReport(
            model.format,
            elements_read=len(model.elements),
            relationships_read=len(model.relationships),
            views_ignored=model.views,
        )
        self.records: dict[str, list[dict[str, Any]]] = {}
        self.identifiers: dict[str, list[str]] = {}
        self.names: dict[tuple[int, str], _Target] = {}
        self.targets: dict[str, _Target] = {}
        # Identifiers of elements of a mapped type the import could not take (a name taken twice)
        self.dropped: set[str] = set()
        # (relationship, type of the ArchiMate source, type of the ArchiMate target) -> (relation type,
        # whether the ArchiMate source holds the relation's source end)
        self.rules: dict[tuple[str, int, int], tuple[RelationTypeDef, bool]] = {}
        for relation_type in metamodel.relation_types:
            rule = mapping.rule_for(relation_type)
            if rule is None:
                continue
            ends = (relation_type.source_type_id, relation_type.target_type_id)
            if rule.reversed:
                ends = ends[::-1]
            self.rules.setdefault((rule.relationship, *ends), (relation_type, not rule.reversed))

    def named_relation(
        self, concept: Concept, source: _Target, target: _Target
    ) -> tuple[RelationTypeDef, bool] | None:
        return _named_relation_type(self.metamodel, self.mapping, concept, source, target)

    def type_of(self, concept: Concept) -> BlockTypeDef | None:
        parsed = parse_identifier(concept.identifier)
        if parsed is not None and (named := self.metamodel.type_named(parsed[0])) is not None:
            return named  # written by a blockrepo export: its type, whatever the element type
        name = self.mapping.element_sources.get(concept.type)
        return self.metamodel.type_named(name) if name else None

    def add(self, concept: Concept, type_def: BlockTypeDef, name: str) -> _Target | None:
        try:
            name = check_name(name)
        except ValueProblem as problem:
            self.report.skip(concept, f"its name cannot name a {type_def.name}: {problem.message}")
            self.dropped.add(concept.identifier)
            return None
        if (type_def.id, name) in self.names:
            other = self.names[(type_def.id, name)]
            self.report.skip(concept, f"{other.identifier} is a {type_def.name} of this name already")
            self.dropped.add(concept.identifier)
            return None
        record: dict[str, Any] = {"name": name}
        if concept.documentation is not None:
            record["description"] = concept.documentation
        parsed = parse_identifier(concept.identifier)
        if parsed is not None and self.own:
            record["id"] = parsed[1]  # a blockrepo export of this repository: the id names the element
        elif concept.identifier in self.known:
            record["id"] = self.known[concept.identifier]  # imported from this model before
        target = _Target(type_def, name, record, concept.identifier)
        self.names[(type_def.id, name)] = target
        self.targets[concept.identifier] = target
        self.records.setdefault(type_def.name, []).append(record)
        self.identifiers.setdefault(type_def.name, []).append(concept.identifier)
        self.report.mapped[type_def.name] = self.report.mapped.get(type_def.name, 0) + 1
        self.properties(
            concept,
            record,
            {
                a.name: a
                for a in type_def.properties
                if not a.builtin or a.name in ("status", "version", "runtimePeriod")
            },
        )
        return target

    def properties(
        self, concept: Concept, record: dict[str, Any], attributes: dict[str, AttributeDef]
    ) -> None:
        for key, text in concept.properties:
            attribute = attributes.get(key)
            if attribute is None:
                self.report.skip_property(concept, key, "no attribute of this name applies")
                continue
            if text.strip() == "":
                continue
            try:
                value = _converter(attribute)(text)
            except ValueError as exc:
                self.report.skip_property(concept, key, f"{text!r}: {exc}")
                continue
            values = record.setdefault(attribute.name, [])
            if values and not attribute.multiple:
                self.report.skip_property(concept, key, f"{attribute.name} takes one value")
                continue
            values.append(value)

    def elements(self) -> None:
        for concept in self.model.elements:
            type_def = self.type_of(concept)
            if type_def is None:
                self.report.skip(
                    concept, f"no building block type for {concept.type or 'an untyped element'}"
                )
            elif not concept.name.strip():
                self.report.skip(concept, "it has no name")
                self.dropped.add(concept.identifier)
            else:
                self.add(concept, type_def, concept.name)

    def flows(self) -> list[Concept]:
        """Relationships that stand for elements (a Flow between two systems is an information flow);
        returns the others."""
        rest: list[Concept] = []
        by_relationship = {rule.relationship: (name, rule) for name, rule in self.mapping.flows.items()}
        for concept in self.model.relationships:
            found = by_relationship.get(concept.type)
            source, target = self.targets.get(concept.source), self.targets.get(concept.target)
            flow_type = self.metamodel.type_named(found[0]) if found else None
            if found is None or flow_type is None or source is None or target is None:
                rest.append(concept)
                continue
            rule = found[1]
            source_end, target_end = flow_type.ends.get(rule.source_end), flow_type.ends.get(rule.target_end)
            if (
                source_end is None
                or target_end is None
                or source.type_def.id != source_end.other_type_id
                or target.type_def.id != target_end.other_type_id
            ):
                rest.append(concept)
                continue
            flow = self.add(concept, flow_type, concept.name.strip() or f"{source.name} → {target.name}")
            if flow is not None:
                flow.record[rule.source_end] = [source.name]
                flow.record[rule.target_end] = [target.name]
        return rest

    def relationships(self, relationships: list[Concept]) -> None:
        """Each relationship as an entry of its holder's relation end, then the mapped ends the file left
        empty listed empty (`empty_ends`)."""
        seen: set[int] = set()  # relation types some relationship became
        unsure: set[str] = set()  # elements a relationship to an element not taken (`dropped`) has
        for concept in relationships:
            source, target = self.targets.get(concept.source), self.targets.get(concept.target)
            if source is None or target is None:
                missing = concept.source if source is None else concept.target
                self.report.skip(concept, f"{missing} is not an element the import took")
                if missing in self.dropped:
                    unsure.add(concept.target if source is None else concept.source)
                continue
            if (
                concept.type == self.mapping.hierarchy
                and source.type_def.id == target.type_def.id
                and source.type_def.hierarchical
                and "parent" not in target.record
            ):
                target.record["parent"] = source.name
                self.report.relations["parent"] = self.report.relations.get("parent", 0) + 1
                continue
            found = self.named_relation(concept, source, target) or self.rules.get(
                (concept.type, source.type_def.id, target.type_def.id)
            )
            if found is None:
                self.report.skip(
                    concept,
                    f"no relation type joins a {source.type_def.name} and a {target.type_def.name} as "
                    f"{concept.type}",
                )
                continue
            relation_type, source_holds = found
            holder, other = (source, target) if source_holds else (target, source)
            end_name = relation_type.source_end
            entry: Any = other.name
            if relation_type.attributes and concept.properties:
                attributes: dict[str, Any] = {}
                self.properties(concept, attributes, {a.name: a for a in relation_type.attributes})
                entry = {"name": other.name, "attributes": attributes} if attributes else other.name
            elif concept.properties:
                for key, _ in concept.properties:
                    self.report.skip_property(concept, key, f"{relation_type.name} has no attributes")
            entries = holder.record.setdefault(end_name, [])
            if not relation_type.source_multiple and entries:
                self.report.skip(concept, f"{end_name} of {holder.name} takes one {other.type_def.name}")
                continue
            entries.append(entry)
            seen.add(relation_type.id)
            self.report.relations[relation_type.name] = self.report.relations.get(relation_type.name, 0) + 1
        self.empty_ends(seen, unsure)

    def empty_ends(self, seen: set[int], unsure: set[str]) -> None:
        """Lists empty each relation end the mapping maps that the file's relationships left empty on an
        element it describes, so that a re-import removes a relationship removed in the other tool even
        where it was the element's last of its kind (a record's empty end empties it:
        `Document.empty_ends_empty`). Not emptied, as the file cannot be said to describe them: an end
        whose relation type is not the one the mapping's rule picks for its relationship and types (two
        relation types may share a rule) unless a relationship of the file became it, an end to a type
        of which the file has no element (a selection of types), and the ends of an element with a
        relationship to an element of a mapped type the import could not take (`dropped`)."""
        chosen = {relation_type.id for relation_type, _ in self.rules.values()} | seen
        mapped_types = self.report.mapped
        for target in self.targets.values():
            if target.identifier in unsure:
                continue
            for end in target.type_def.ends.values():
                if (
                    end.holder_is_source
                    and end.relation_type.id in chosen
                    and end.other_type in mapped_types
                    and self.mapping.rule_for(end.relation_type) is not None
                ):
                    target.record.setdefault(end.name, [])


_RELATIONSHIP_IDENTIFIER = re.compile(r"^br-([A-Za-z][A-Za-z0-9_]*)-\d+-\d+$")


def _named_relation_type(
    metamodel: Metamodel, mapping: ArchimateMapping, concept: Concept, source: _Target, target: _Target
) -> tuple[RelationTypeDef, bool] | None:
    """The relation type a blockrepo export's relationship identifier names (`br-<relation type>-…`),
    when it joins the types its ends became: two relation types may share a rule (an association of two
    systems: predecessor, or an administrator's own relation), and the identifier tells which."""
    match = _RELATIONSHIP_IDENTIFIER.match(concept.identifier)
    relation_type = metamodel.relation_type_named(match.group(1)) if match else None
    if relation_type is None:
        return None
    ends = (relation_type.source_type_id, relation_type.target_type_id)
    if ends not in ((source.type_def.id, target.type_def.id), (target.type_def.id, source.type_def.id)):
        return None
    rule = mapping.rule_for(relation_type)
    if rule is None or rule.relationship != concept.type:
        return None
    return relation_type, not rule.reversed


def model_document(
    metamodel: Metamodel,
    actor: Actor,
    mapping: ArchimateMapping,
    model: ArchimateModel,
    *,
    own: bool = False,
    known: dict[str, int] | None = None,
) -> tuple[Document, MappingReport, dict[str, list[str]]]:
    """The import document of the model, the mapping report and each record's identifier by type. A
    record's `id` is set where its identifier names a stored element (`own`: the model is a blockrepo
    export of this repository; `known`: identifiers an earlier import remembered), and the document says
    its ids are to be trusted."""
    mapper = _Mapper(metamodel, actor, mapping, model, own=own, known=known)
    mapper.elements()
    rest = mapper.flows()
    # The concepts are records now (or reported): let them go before the import takes its memory.
    model.elements.clear()
    model.relationships.clear()
    mapper.relationships(rest)
    del rest
    document = Document(
        metamodel=None, elements=mapper.records, keep_unlisted=True, ids_trusted=True, empty_ends_empty=True
    )
    return document, mapper.report, mapper.identifiers


def _is_own(db: Session, model: ArchimateModel) -> bool:
    """Whether the model is a blockrepo export of this repository (or of a restored copy): the mark of
    the revision it names is this repository's mark of that revision."""
    properties = dict(model.properties)
    revision, mark = properties.get(REVISION_PROPERTY, ""), properties.get(MARK_PROPERTY)
    return bool(mark) and revision.isdigit() and revision_mark(db, int(revision)) == mark


def _remembered_model(model: ArchimateModel) -> str | None:
    """The key an import remembers the model's identifiers under: its identifier, unless it has none or
    is a blockrepo export (whose identifiers carry their ids)."""
    identifier = model.identifier
    if not identifier or identifier.startswith("br-model-") or len(identifier) > 255:
        return None
    return identifier


def _remember(
    db: Session,
    metamodel: Metamodel,
    model: str,
    identifiers: dict[str, list[str]],
    names: dict[str, list[str]],
) -> None:
    """Keep which element each identifier of the model now stands for (its records' elements, found by
    their names), so that the next import of the model updates them whatever they are called then."""
    pairs: list[tuple[str, int]] = []
    for type_name, listed in identifiers.items():
        type_def = metamodel.type_named(type_name)
        if type_def is None:
            continue
        found = element_ids_by_name(db, type_def.id, names[type_name])
        pairs.extend(
            (identifier, found[name])
            for identifier, name in zip(listed, names[type_name], strict=True)
            if name in found and len(identifier) <= 255
        )
    repository.remember(db, model, pairs)


def _pointer_of(identifiers: dict[str, list[str]], pointer: str) -> str:
    """`/elements/<type>/<record>/…` as the file's identifier: `identifier:<id>/…`."""
    parts = pointer.split("/")
    if len(parts) >= 4 and parts[1] == "elements" and parts[3].isdigit():
        listed = identifiers.get(parts[2], [])
        index = int(parts[3])
        if index < len(listed):
            return "/".join([f"identifier:{listed[index]}", *parts[4:]])
    return pointer


def import_model(
    db: Session,
    metamodel: Metamodel,
    actor: Actor,
    changes: ChangeLog,
    mapping: ArchimateMapping,
    model: ArchimateModel,
    *,
    hash_password: Callable[[str], str],
    list_rows: bool = False,
) -> tuple[ImportReport, MappingReport]:
    """Imports the model additively, all or nothing, as one revision (the caller commits): elements the
    file names are created or updated (by the identifiers a blockrepo export wrote, where the file is
    this repository's, else by name), attributes it holds no property for are kept. Problems name the
    file's identifiers."""
    remembered = _remembered_model(model)
    known = repository.identities(db, remembered) if remembered else {}
    document, report, identifiers = model_document(
        metamodel, actor, mapping, model, own=_is_own(db, model), known=known
    )
    names = {
        type_name: [record["name"] for record in records] for type_name, records in document.elements.items()
    }
    try:
        imported = import_document(
            db,
            metamodel,
            actor,
            changes,
            document,
            mode="additive",
            hash_password=hash_password,
            list_rows=list_rows,
        )
    except BlockrepoError as exc:
        exc.errors = [replace(e, pointer=_pointer_of(identifiers, e.pointer)) for e in exc.errors]
        raise
    if remembered and not list_rows:
        _remember(db, metamodel, remembered, identifiers, names)
    if imported.rows:
        for row in imported.rows:
            listed = identifiers.get(row.get("type", ""), [])
            record = row.get("record")
            if isinstance(record, int) and record < len(listed):
                row["identifier"] = listed[record]
    return imported, report
