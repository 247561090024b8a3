"""Reviewing planning scenarios: reviewers, approvals, comments, the rules a scenario must pass to merge."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy.orm import Session

from blockrepo.access.actor import Actor
from blockrepo.errors import (
    BlockrepoError,
    Conflict,
    ErrorItem,
    Forbidden,
    NotFound,
    ValidationFailed,
)
from blockrepo.massdata import asof as past
from blockrepo.massdata import listing
from blockrepo.massdata.query.limits import QueryLimits
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.scenarios import repository
from blockrepo.scenarios.models import (
    MergeRule,
    Scenario,
    ScenarioApproval,
    ScenarioComment,
)
from blockrepo.scenarios.schemas import (
    CommentIn,
    CommentOut,
    MergeRuleIn,
    MergeRuleOut,
    ReviewIn,
    ScenarioOut,
)
from blockrepo.scenarios.service import (
    APPROVE,
    open_scenario,
    owned_scenario,
    reading_layer,
    record_event,
    scenario_out,
    seeing_all,
    stamped,
    utc_now,
    visible_scenario,
)


@dataclass(frozen=True)
class ReviewRules:
    """How merging is governed (settings): whether an owner may approve their own scenario, and whether
    main is protected (changed only by merging reviewed scenarios)."""

    self_approval: bool = False
    protected_main: bool = False


# --- checks before a merge ----------------------------------------------------------------------------

CHECK_SAMPLE = 100  # elements named per broken rule


def _rule_out(rule: MergeRule) -> MergeRuleOut:
    return MergeRuleOut(
        id=rule.id,
        name=rule.name,
        query=rule.query,
        required=rule.required,
        created_by=rule.created_by,
        created_at=stamped(rule.created_at) or "",
    )


def list_rules(db: Session) -> list[MergeRuleOut]:
    return [_rule_out(rule) for rule in repository.merge_rules(db)]


def create_rule(
    db: Session, actor: Actor, metamodel: Metamodel, body: MergeRuleIn, limits: QueryLimits
) -> MergeRuleOut:
    """A check every scenario is held to (a supervisor's to set): the query must parse and name what the
    metamodel has (400 at `/query` otherwise); names are unique (409)."""
    if not actor.supervisor:
        raise Forbidden("only a supervisor sets the rules scenarios must pass")
    listing.prepare_query(metamodel, actor, body.query, limits=limits, pointer_of=lambda _: "/query")
    if repository.merge_rule_named(db, body.name) is not None:
        raise Conflict(f"there is a rule named {body.name!r}", code="name_conflict")
    rule = repository.add_merge_rule(
        db,
        MergeRule(
            name=body.name,
            query=body.query,
            required=body.required,
            created_by=actor.login,
            created_at=utc_now(),
        ),
    )
    return _rule_out(rule)


def delete_rule(db: Session, actor: Actor, rule_id: int) -> None:
    if not actor.supervisor:
        raise Forbidden("only a supervisor sets the rules scenarios must pass")
    if not repository.remove_merge_rule(db, rule_id):
        raise NotFound(f"there is no rule {rule_id}")


def evaluate_rules(
    db: Session, actor: Actor, metamodel: Metamodel, scenario: Scenario, limits: QueryLimits
) -> list[dict[str, Any]]:
    """Every rule run on the scenario as it stands (main at its base and its own changes), as a supervisor
    sees it; the elements breaking each, as far as `actor` may read their type."""
    everything = seeing_all(actor)
    layer = reading_layer(db, actor, scenario.key)
    results = []
    for rule in repository.merge_rules(db):
        try:
            prepared = listing.prepare_query(
                metamodel, everything, rule.query, sort="id", fields=["name"], limits=limits
            )
        except BlockrepoError as error:  # the metamodel changed since the rule was written
            results.append(
                {"rule": _rule_out(rule).model_dump(by_alias=True), "passed": False, "error": error.detail}
            )
            continue
        page = past.read_page_as_of(
            db, metamodel, everything, prepared, layer.base, limit=CHECK_SAMPLE, count=True, layer=layer
        )
        readable = actor.supervisor or actor.can_type(prepared.type_def.id, "read")
        results.append(
            {
                "rule": _rule_out(rule).model_dump(by_alias=True),
                "passed": page.total == 0,
                "count": page.total,
                "violations": [
                    {"id": item["id"][0], "type": prepared.type_def.name, "name": item["name"][0]}
                    for item in page.items
                ]
                if readable
                else [],
            }
        )
    return results


def checks(db: Session, actor: Actor, metamodel: Metamodel, key: str, limits: QueryLimits) -> dict[str, Any]:
    """GET /api/scenarios/{key}/checks: each rule's result on the scenario; `mergeable` is false while a
    required one fails."""
    scenario = visible_scenario(db, actor, key)
    results = evaluate_rules(db, actor, metamodel, scenario, limits)
    blocking = [r for r in results if r["rule"]["required"] and not r["passed"]]
    return {"checks": results, "mergeable": not blocking}


# --- review --------------------------------------------------------------------------------------------


def propose(db: Session, actor: Actor, key: str, body: ReviewIn) -> ScenarioOut:
    """Propose the scenario for review by `reviewers` (enabled accounts), of whom `requiredApprovals` must
    approve its current version before a merge; proposing again replaces the reviewers and the number."""
    scenario = open_scenario(owned_scenario(db, actor, key, "proposes it for review"))
    found = repository.user_ids_named(db, body.reviewers)
    unknown = [login for login in body.reviewers if login not in found]
    if unknown:
        raise ValidationFailed(
            f"no enabled account {', '.join(map(repr, unknown))}",
            errors=[
                ErrorItem(
                    f"/reviewers/{body.reviewers.index(login)}", "unknown_user", f"no account {login!r}"
                )
                for login in unknown
            ],
        )
    if body.required_approvals > len(found):
        raise ValidationFailed(
            "requiredApprovals is more than there are reviewers",
            errors=[ErrorItem("/requiredApprovals", "out_of_range", f"at most {len(found)}")],
        )
    repository.set_reviewers(db, scenario.id, found)
    scenario.required_approvals = body.required_approvals
    scenario.proposed_at = utc_now()
    record_event(
        db, actor, scenario, "proposed", reviewers=sorted(found), requiredApprovals=body.required_approvals
    )
    db.flush()
    return scenario_out(db, scenario)


def approve(db: Session, actor: Actor, key: str, rules: ReviewRules) -> ScenarioOut:
    """Approve the scenario as it is now: a reviewer, or whoever holds APPROVE_SCENARIOS. Its owner only
    where self-approval is allowed. A later change of the scenario makes the approval lapse."""
    scenario = open_scenario(visible_scenario(db, actor, key, lock=True))
    if scenario.required_approvals is None:
        raise Conflict(f"scenario {key!r} is not proposed for review", code="not_in_review")
    if scenario.owner_id == actor.user_id and not rules.self_approval:
        raise Forbidden("the owner of a scenario does not approve it", code="self_approval")
    reviewer = any(r.user_id == actor.user_id for r in repository.reviewers(db, scenario.id))
    if not (reviewer or actor.can(APPROVE)):
        raise Forbidden("only the scenario's reviewers, or holders of APPROVE_SCENARIOS, approve it")
    repository.set_approval(
        db,
        ScenarioApproval(
            scenario_id=scenario.id,
            user_id=actor.user_id,
            login=actor.login,
            version=scenario.version,
            approved_at=utc_now(),
        ),
    )
    record_event(db, actor, scenario, "approved", version=scenario.version)
    return scenario_out(db, scenario)


def comment(db: Session, actor: Actor, key: str, body: CommentIn) -> CommentOut:
    """A comment on the scenario, one of its elements, or a field of one, by whoever sees the scenario."""
    scenario = visible_scenario(db, actor, key)
    if body.field is not None and body.element is None:
        raise ValidationFailed(
            "a comment on a field names its element",
            errors=[ErrorItem("/element", "required", "the element the field belongs to")],
        )
    added = repository.add_comment(
        db,
        ScenarioComment(
            scenario_id=scenario.id,
            element_id=body.element,
            field=body.field,
            author=actor.login,
            text=body.text,
            created_at=utc_now(),
        ),
    )
    record_event(
        db,
        actor,
        scenario,
        "commented",
        comment=added.id,
        element=body.element,
        field=body.field,
        text=body.text,
    )
    return _comment_out(added)


def _comment_out(comment: ScenarioComment) -> CommentOut:
    return CommentOut(
        id=comment.id,
        element=comment.element_id,
        field=comment.field,
        author=comment.author,
        text=comment.text,
        created_at=stamped(comment.created_at) or "",
    )


def list_comments(db: Session, actor: Actor, key: str) -> list[CommentOut]:
    scenario = visible_scenario(db, actor, key)
    return [_comment_out(c) for c in repository.comments(db, scenario.id)]
