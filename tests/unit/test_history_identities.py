"""A name recorded in history resolves to the attribute that bore it then, whoever bears it today."""

from __future__ import annotations

from blockrepo.history.identities import AttributeIdentities, FormerName
from blockrepo.metamodel.snapshot import AttributeDef, AttributeGroupDef, Metamodel


def _attribute(attribute_id: int, name: str, group_id: int) -> AttributeDef:
    return AttributeDef(
        id=attribute_id,
        name=name,
        description="",
        value_type="text",
        multiple=False,
        mandatory=False,
        group_id=group_id,
        group_name=f"group {group_id}",
        unit=None,
        min_value=None,
        max_value=None,
        builtin_type_id=None,
        position=0,
    )


def test_each_recorded_name_resolves_to_its_bearer_at_that_revision() -> None:
    """A: N -> M at 3, M -> K at 6; B took N at 4 and was deleted (group 7) at 8; C bears N today; D reused
    B's id (never on PostgreSQL, nor on SQLite since migration 0007), which must not make B's past D's."""
    metamodel = Metamodel(
        revision=1,
        types=(),
        relation_types=(),
        attributes=(_attribute(1, "K", 5), _attribute(2, "Reused", 5), _attribute(3, "N", 5)),
        groups=(AttributeGroupDef(5, "Open", "", 0), AttributeGroupDef(7, "Finance", "", 1)),
    )
    identities = AttributeIdentities(
        [
            FormerName(1, "N", 3, None),
            FormerName(1, "M", 6, None),
            FormerName(2, "N", 8, 7),
            FormerName(None, "Old", 2, None),
        ],
        metamodel,
    )
    a = identities.former("N", 1)
    assert a is not None and a.attribute is not None and a.attribute.name == "K"
    assert identities.former("N", 3) == a  # the rename's own revision still records the old name
    b = identities.former("N", 5)
    assert b is not None and b.attribute is None and b.group_id == 7
    assert identities.former("N", 9) is None  # C's: read as today
    m = identities.former("M", 4)
    assert m is not None and m.attribute is not None and m.attribute.id == 1
    assert identities.former("M", 7) is None
    unknown = identities.former("Old", 1)
    assert unknown is not None and unknown.attribute is None and unknown.group_id is None
    assert identities.former("Elsewhere", 1) is None
    assert not identities.empty and AttributeIdentities([], metamodel).empty
