"""API tokens: minting, listing, changing, rotating and revoking them, and verifying the one a request sends.

A token acts for its owner, narrowed by its restriction (`access.actor.Restriction`): the owner's rights are
read on every request, so a role the owner loses is lost by the token at once. Verification reads the token
and its owner in one statement per request (one for all the requests of a turn on PostgreSQL) and writes
only when the last use it records is a minute old or its hash is under a previous pepper.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

import orjson
from sqlalchemy import Connection, Engine
from sqlalchemy.orm import Session

from blockrepo.access.actor import (
    FUNCTIONAL_PERMISSIONS,
    READING_FUNCTIONS,
    Actor,
    Restriction,
    load_actor_of,
)
from blockrepo.access.repository import Revisions
from blockrepo.errors import Conflict, ErrorItem, Forbidden, NotFound, ValidationFailed
from blockrepo.instants import utc_text
from blockrepo.metamodel.snapshot import Metamodel
from blockrepo.revisions.recorder import ChangeLog
from blockrepo.tokens import repository
from blockrepo.tokens.models import ApiToken
from blockrepo.tokens.schemas import IssuedTokenOut, TokenCreate, TokenOut, TokenRotate, TokenUpdate
from blockrepo.tokens.strings import Peppers, TokenParts, new_token, parse_token

MINT_TOKENS = "MINT_TOKENS"
# Unrevoked tokens one account may hold: a leak of a session cannot mint without bound.
MOST_TOKENS_PER_OWNER = 100
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


class TokenUse(NamedTuple):
    """A valid token as one request uses it: who acts, narrowed how, and the revisions read with it (a
    tuple: every Bearer request builds one, and a frozen dataclass costs several times as much)."""

    token_id: int
    public_id: str
    user_id: int
    login: str
    credentials_version: int
    revisions: Revisions
    restriction: Restriction | None
    # A write is due: the recorded last use is older than the interval, or the hash is under an old pepper.
    touch_due: bool
    old_pepper: str | None
    parts: TokenParts


class TokenVerifier:
    """Verifies Bearer tokens for the authentication layer (every worker and host reads the same rows)."""

    def __init__(
        self,
        read_engine: Engine,
        write_engine: Engine,
        peppers: Callable[[], Peppers],
        touch_interval: int = 60,
    ) -> None:
        self._read_engine = read_engine
        self._write_engine = write_engine
        self._peppers_source = peppers
        self._peppers: Peppers | None = None
        self._touch_interval = touch_interval
        self._lock = threading.Lock()
        # Parsed restrictions and networks by their stored text (few distinct ones; parsed once).
        self._restrictions: dict[str, Restriction | None] = {}
        self._networks: dict[str, tuple[Network, ...]] = {}

    @property
    def peppers(self) -> Peppers:
        if self._peppers is None:
            with self._lock:
                if self._peppers is None:
                    self._peppers = self._peppers_source()
        return self._peppers

    def verify(self, token: str, address: str) -> TokenUse | None:
        """The use of this token from `address`, if it is valid (its own read connection)."""
        with self._read_engine.connect() as connection:
            return self.uses(connection, [(token, address)]).get((token, address))

    def uses(
        self, connection: Connection, requests: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], TokenUse]:
        """The valid uses among (token, client address) pairs, read in one statement on PostgreSQL: each
        token well formed, known, unrevoked, enabled, unexpired, its hash matching, its owner enabled and
        the address within its networks."""
        if len(requests) == 1:  # the common case, without the batch's bookkeeping
            token, address = requests[0]
            parts = parse_token(token)
            row = None if parts is None else repository.token_by_public_id_row(connection, parts.public_id)
            use = None if row is None or parts is None else self._use(row, parts, address, int(time.time()))
            return {} if use is None else {requests[0]: use}
        parsed = {request: parse_token(request[0]) for request in requests}
        public_ids = sorted({parts.public_id for parts in parsed.values() if parts is not None})
        if not public_ids:
            return {}
        rows = repository.tokens_by_public_id(connection, public_ids)
        now = int(time.time())
        found = {}
        for request, parts in parsed.items():
            row = None if parts is None else rows.get(parts.public_id)
            if row is None or parts is None:
                continue
            use = self._use(row, parts, request[1], now)
            if use is not None:
                found[request] = use
        return found

    def _use(self, row: Any, parts: TokenParts, address: str, now: int) -> TokenUse | None:
        (
            public_id,
            token_id,
            user_id,
            secret_hash,
            pepper,
            expires_at,
            enabled,
            restriction,
            networks,
            last_used_at,
            login,
            owner_enabled,
            credentials_version,
            revision,
            metamodel_revision,
            access_revision,
        ) = row
        if not enabled or not owner_enabled or expires_at <= now:
            return None
        if not self.peppers.matches(parts, pepper, secret_hash):
            return None
        if networks is not None and not self._admits(networks, address):
            return None
        old_pepper = None if pepper == self.peppers.current_id else pepper
        touch_due = last_used_at is None or now - last_used_at >= self._touch_interval
        return TokenUse(
            token_id,
            public_id,
            user_id,
            login,
            credentials_version,
            Revisions(revision, metamodel_revision, access_revision),
            self._restriction(restriction),
            touch_due or old_pepper is not None,
            old_pepper,
            parts,
        )

    def still_valid(self, public_id: str) -> bool:
        """Whether the token with this public id still authenticates (not revoked, disabled or expired, its
        owner enabled): for a response that outlives the request that verified it (the change stream)."""
        with self._read_engine.connect() as connection:
            row = repository.token_by_public_id_row(connection, public_id)
        return row is not None and bool(row[6]) and bool(row[11]) and row[5] > int(time.time())

    def record_use(self, use: TokenUse, address: str) -> None:
        """Write what `touch_due` asks for: the last use (at most once per interval, whichever request of
        any worker comes first) and the hash under the current pepper."""
        now = int(time.time())
        repository.touch(self._write_engine, use.token_id, now, address, now - self._touch_interval + 1)
        if use.old_pepper is not None:
            digest = self.peppers.digest(use.parts)
            assert digest is not None, "the current pepper is always configured"
            repository.rehash(
                self._write_engine, use.token_id, use.old_pepper, self.peppers.current_id, digest
            )

    def _restriction(self, text: str | None) -> Restriction | None:
        if text is None:
            return None
        found = self._restrictions.get(text)
        if found is None and text not in self._restrictions:
            found = restriction_from_text(text)
            if len(self._restrictions) > 4096:
                self._restrictions.clear()
            self._restrictions[text] = found
        return found

    def _admits(self, text: str, address: str) -> bool:
        networks = self._networks.get(text)
        if networks is None:
            networks = tuple(ipaddress.ip_network(n, strict=False) for n in text.split(",") if n)
            if len(self._networks) > 4096:
                self._networks.clear()
            self._networks[text] = networks
        try:
            client = ipaddress.ip_address(address)
        except ValueError:
            return False  # no address known: a token bound to networks is not used
        return any(client in network for network in networks)


def restriction_from_text(text: str) -> Restriction | None:
    """The restriction a token's row stores as JSON text."""
    data = orjson.loads(text)
    restriction = Restriction(
        read_only=bool(data.get("readOnly", False)),
        type_ids=None if data.get("typeIds") is None else frozenset(data["typeIds"]),
        group_ids=None if data.get("groupIds") is None else frozenset(data["groupIds"]),
        functions=None if data.get("functions") is None else frozenset(data["functions"]),
        scenario=data.get("scenario"),
    )
    return None if restriction == Restriction() else restriction


def restriction_text(restriction: Restriction) -> str | None:
    """The JSON text a token's (or a webhook's) row stores for a restriction (None: none)."""
    if restriction == Restriction():
        return None
    return orjson.dumps(
        {
            "readOnly": restriction.read_only,
            "typeIds": None if restriction.type_ids is None else sorted(restriction.type_ids),
            "groupIds": None if restriction.group_ids is None else sorted(restriction.group_ids),
            "functions": None if restriction.functions is None else sorted(restriction.functions),
            **({} if restriction.scenario is None else {"scenario": restriction.scenario}),
        }
    ).decode()


# --- management ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TokenSettings:
    """What the management functions need of the settings and the process."""

    peppers: Peppers
    max_days: int


def create_token(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    body: TokenCreate,
    settings: TokenSettings,
    acting_token: str | None,
    sees_scenario: Callable[[Actor, str], bool] = lambda owner, key: False,
) -> IssuedTokenOut:
    """Mint a token for the caller, or for `body.owner` (a service account: MINT_TOKENS and ADMIN_USERS,
    and only a supervisor mints for a supervisor). Never with a token: a token cannot make another. A
    token bound to a scenario (`body.scenario`) needs one its owner sees (`sees_scenario`)."""
    if acting_token is not None:
        raise Forbidden("a token cannot mint tokens; log in as its owner", code="token_cannot_mint")
    now = int(time.time())
    owner_id, owner_login = actor.user_id, actor.login
    if body.owner is not None and body.owner != actor.login:
        owner_id, owner_login = _mintable_owner(db, actor, body.owner)
    restriction = _restriction_of(metamodel, body)
    if body.scenario is not None:
        owner = actor if owner_id == actor.user_id else load_actor_of(db, owner_id, owner_login)
        if not sees_scenario(owner, body.scenario):
            raise ValidationFailed(
                f"there is no scenario {body.scenario!r}",
                errors=[ErrorItem("/scenario", "unknown_scenario", "a key of a scenario the owner sees")],
            )
    networks = _networks_of(body.allowed_networks)
    expires_at = _expiry(body.expires_at, now, settings.max_days, "/expiresAt")
    _bounded(db, owner_id, owner_login)
    text, token = _mint(
        db,
        settings.peppers,
        name=body.name,
        user_id=owner_id,
        created_by=actor.login,
        created_by_id=actor.user_id,
        created_at=now,
        expires_at=expires_at,
        restriction=restriction_text(restriction),
        allowed_networks=networks,
        rotated_from=None,
    )
    changes.administration(
        "created",
        f"token {token.public_id}",
        [
            {"property": "name", "old": None, "new": token.name},
            {"property": "owner", "old": None, "new": owner_login},
            {"property": "expiresAt", "old": None, "new": utc_text(expires_at)},
        ],
    )
    return IssuedTokenOut(**_out(token, owner_login, metamodel).model_dump(), token=text)


def list_tokens(
    db: Session, actor: Actor, metamodel: Metamodel, *, everyone: bool, revoked: bool
) -> list[TokenOut]:
    """The caller's tokens, or with `everyone` (a supervisor only) every account's."""
    if everyone and not actor.supervisor:
        raise Forbidden("only a supervisor sees every account's tokens")
    rows = repository.listed_tokens(db, None if everyone else actor.user_id, revoked=revoked)
    return [_out(token, login, metamodel) for token, login in rows]


def get_token(db: Session, actor: Actor, metamodel: Metamodel, token_id: int) -> TokenOut:
    token, login = _managed(db, actor, token_id)
    return _out(token, login, metamodel)


def update_token(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    token_id: int,
    body: TokenUpdate,
    settings: TokenSettings,
    acting_token: str | None,
) -> TokenOut:
    """Rename, disable or enable a token, or bring its expiry forward (never later)."""
    if acting_token is not None:
        raise Forbidden("a token cannot change tokens; log in as its owner", code="token_cannot_mint")
    token, login = _managed(db, actor, token_id, live=True)
    record: list[dict[str, Any]] = []
    if body.name is not None and body.name != token.name:
        record.append({"property": "name", "old": token.name, "new": body.name})
        token.name = body.name
    if body.enabled is not None and body.enabled != token.enabled:
        record.append({"property": "enabled", "old": token.enabled, "new": body.enabled})
        token.enabled = body.enabled
    if body.expires_at is not None:
        expires_at = _expiry(body.expires_at, int(time.time()), settings.max_days, "/expiresAt")
        if expires_at > token.expires_at:
            raise ValidationFailed(
                "a token's expiry can only be brought forward",
                errors=[ErrorItem("/expiresAt", "later_expiry", f"after {utc_text(token.expires_at)}")],
            )
        if expires_at != token.expires_at:
            record.append(
                {"property": "expiresAt", "old": utc_text(token.expires_at), "new": utc_text(expires_at)}
            )
            token.expires_at = expires_at
    if record:
        changes.administration("updated", f"token {token.public_id}", record)
        db.flush()
    return _out(token, login, metamodel)


def revoke_token(
    db: Session, actor: Actor, changes: ChangeLog, token_id: int, acting_token: str | None
) -> None:
    """Revoke a token at once (every worker and host refuses it from the next request on). A token may
    revoke itself, no other."""
    token, _ = _managed(db, actor, token_id, live=True, acting_token=acting_token)
    _revoke(db, token, changes, "revoked", successors=False)


def rotate_token(
    db: Session,
    actor: Actor,
    metamodel: Metamodel,
    changes: ChangeLog,
    token_id: int,
    body: TokenRotate,
    settings: TokenSettings,
    acting_token: str | None,
) -> IssuedTokenOut:
    """A new token with the old one's name, owner, restriction, networks and expiry; the old one keeps
    working for `overlapSeconds` (revoked at once with 0). A token may rotate itself, no other."""
    old, login = _managed(db, actor, token_id, live=True, acting_token=acting_token)
    now = int(time.time())
    if old.expires_at <= now:
        raise Conflict("the token has expired; mint a new one", code="token_expired")
    if repository.successor_of(db, old.id) is not None:
        # Once: else a leaked token could keep making live copies of itself within its overlap.
        raise Conflict("the token was rotated already; rotate its successor", code="token_rotated")
    _bounded(db, old.user_id, login)
    text, token = _mint(
        db,
        settings.peppers,
        name=old.name,
        user_id=old.user_id,
        created_by=actor.login,
        created_by_id=actor.user_id,
        created_at=now,
        expires_at=old.expires_at,
        restriction=old.restriction,
        allowed_networks=old.allowed_networks,
        rotated_from=old.id,
    )
    if body.overlap_seconds == 0:
        old.revoked_at = now
    else:
        old.expires_at = min(old.expires_at, now + body.overlap_seconds)
    changes.administration(
        "updated",
        f"token {old.public_id}",
        [
            {"property": "rotatedTo", "old": None, "new": token.public_id},
            {"property": "expiresAt", "old": None, "new": utc_text(old.expires_at)},
        ],
    )
    changes.administration(
        "created",
        f"token {token.public_id}",
        [{"property": "rotatedFrom", "old": None, "new": old.public_id}],
    )
    db.flush()
    return IssuedTokenOut(**_out(token, login, metamodel).model_dump(), token=text)


def revoke_leaked(db: Session, changes: ChangeLog, text: str, peppers: Peppers) -> bool:
    """Revoke the token whose string this is, if it is a valid, unrevoked one (whoever sends it: holding
    the string is all it takes to use it, so it is all it takes to end it), and the token its rotation
    made, if any. Whether one was revoked."""
    parts = parse_token(text.strip())
    if parts is None:
        return False
    token = repository.token_by_public_id(db, parts.public_id)
    if token is None or token.revoked_at is not None:
        return False
    if not peppers.matches(parts, token.pepper_id, token.secret_hash):
        return False
    _revoke(db, token, changes, "revoked (the token string was reported)", successors=True)
    return True


def _bounded(db: Session, owner_id: int, owner_login: str) -> None:
    held = len(repository.listed_tokens(db, owner_id, revoked=False))
    if held >= MOST_TOKENS_PER_OWNER:
        raise Conflict(
            f"'{owner_login}' holds {held} tokens, the most one account may; revoke some first",
            code="too_many_tokens",
        )


def _revoke(db: Session, token: ApiToken, changes: ChangeLog, how: str, *, successors: bool) -> None:
    """Revoke the token, and with `successors` what rotation made of it (a leaked token's successors are
    as leaked: whoever held it could rotate it)."""
    now = int(time.time())
    current: ApiToken | None = token
    while current is not None:
        if current.revoked_at is None:
            current.revoked_at = now
            changes.administration(
                "deleted", f"token {current.public_id}", [{"property": "state", "old": None, "new": how}]
            )
        current = repository.successor_of(db, current.id) if successors else None


def _mint(db: Session, peppers: Peppers, **columns: Any) -> tuple[str, ApiToken]:
    text, parts = new_token()
    digest = peppers.digest(parts)
    assert digest is not None, "the current pepper is always configured"
    token = ApiToken(
        public_id=parts.public_id, secret_hash=digest, pepper_id=peppers.current_id, enabled=True, **columns
    )
    return text, repository.add_token(db, token)


def _managed(
    db: Session,
    actor: Actor,
    token_id: int,
    *,
    live: bool = False,
    acting_token: str | None = None,
) -> tuple[ApiToken, str]:
    """The token with this id if the caller may manage it (theirs, minted by them, or any for a
    supervisor; with a token, only that token itself), else 404 (another's token is not told apart from
    none). `live`: 409 for a revoked one."""
    token = repository.token_by_id(db, token_id)
    if token is None or not (
        actor.supervisor or token.user_id == actor.user_id or _may_mint_for(db, actor, token)
    ):
        raise NotFound(f"no token {token_id}")
    if acting_token is not None and token.public_id != acting_token:
        raise Forbidden(
            "a token can only rotate or revoke itself; log in as its owner", code="token_cannot_mint"
        )
    if live and token.revoked_at is not None:
        raise Conflict(f"token {token_id} is revoked", code="token_revoked")
    login = repository.login_of(db, token.user_id)
    assert login is not None, "a token's owner exists (its row goes with the account)"
    return token, login


def _may_mint_for(db: Session, actor: Actor, token: ApiToken) -> bool:
    """Whether the minter of a service account's token still may mint for that account: the same rules
    as minting, checked now (the minter may have lost the rights, the account may be a supervisor now)."""
    if token.created_by_id != actor.user_id or not (actor.can(MINT_TOKENS) and actor.can("ADMIN_USERS")):
        return False
    login = repository.login_of(db, token.user_id)
    return login is not None and not load_actor_of(db, token.user_id, login).supervisor


def _mintable_owner(db: Session, actor: Actor, login: str) -> tuple[int, str]:
    if not (actor.can(MINT_TOKENS) and actor.can("ADMIN_USERS")):
        raise Forbidden("minting a token for another account needs MINT_TOKENS and ADMIN_USERS")
    owner_id = repository.user_id_named(db, login)
    if owner_id is None:
        raise ValidationFailed(
            f"no user '{login}'", errors=[ErrorItem("/owner", "unknown_user", f"no user '{login}'")]
        )
    if not actor.supervisor and load_actor_of(db, owner_id, login).supervisor:
        raise Forbidden(
            f"only a supervisor may mint a token for the supervisor '{login}'", code="supervisor_only"
        )
    return owner_id, login


def _restriction_of(metamodel: Metamodel, body: TokenCreate) -> Restriction:
    errors: list[ErrorItem] = []
    type_ids: frozenset[int] | None = None
    if body.types is not None:
        found = set()
        for i, name in enumerate(body.types):
            type_def = metamodel.type_named(name)
            if type_def is None:
                errors.append(ErrorItem(f"/types/{i}", "unknown_type", f"no building block type '{name}'"))
            else:
                found.add(type_def.id)
        type_ids = frozenset(found)
    group_ids: frozenset[int] | None = None
    if body.attribute_groups is not None:
        by_name = {group.name: group.id for group in metamodel.groups}
        found = set()
        for i, name in enumerate(body.attribute_groups):
            if name not in by_name:
                errors.append(
                    ErrorItem(f"/attributeGroups/{i}", "unknown_group", f"no attribute group '{name}'")
                )
            else:
                found.add(by_name[name])
        group_ids = frozenset(found)
    functions: frozenset[str] | None = None
    if body.functions is None and (type_ids is not None or group_ids is not None):
        # A token bound to some types or groups keeps no power over rights or the metamodel unless
        # named: with ADMIN_ROLES or ADMIN_USERS it could otherwise make itself an unbound account.
        functions = READING_FUNCTIONS
    if body.functions is not None:
        for i, name in enumerate(body.functions):
            if name not in FUNCTIONAL_PERMISSIONS:
                errors.append(
                    ErrorItem(f"/functions/{i}", "unknown_permission", f"no functional permission '{name}'")
                )
        functions = frozenset(body.functions)
    if errors:
        raise ValidationFailed("the token's restriction names what does not exist", errors=errors)
    return Restriction(
        read_only=body.read_only,
        type_ids=type_ids,
        group_ids=group_ids,
        functions=functions,
        scenario=body.scenario,
    )


def _networks_of(sent: list[str] | None) -> str | None:
    if sent is None:
        return None
    networks = []
    errors = []
    for i, text in enumerate(sent):
        try:
            networks.append(str(ipaddress.ip_network(text.strip(), strict=False)))
        except ValueError:
            errors.append(ErrorItem(f"/allowedNetworks/{i}", "invalid_network", "an address or CIDR network"))
    if errors:
        raise ValidationFailed("allowedNetworks names what is no network", errors=errors)
    if not networks:
        raise ValidationFailed(
            "allowedNetworks is empty: the token could never be used",
            errors=[ErrorItem("/allowedNetworks", "empty", "name a network or leave it out")],
        )
    return ",".join(networks)


def _expiry(text: str, now: int, max_days: int, pointer: str) -> int:
    try:
        moment = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValidationFailed(
            "expiresAt is no ISO 8601 time",
            errors=[ErrorItem(pointer, "invalid_time", "e.g. 2027-06-30T00:00:00Z")],
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=dt.UTC)
    try:
        seconds = int(moment.timestamp())
    except (OverflowError, ValueError, OSError):
        seconds = now + max_days * 86400 + 1
    if seconds <= now:
        raise ValidationFailed(
            "expiresAt is not in the future",
            errors=[ErrorItem(pointer, "past_expiry", "must be in the future")],
        )
    if seconds > now + max_days * 86400:
        raise ValidationFailed(
            f"a token lives at most {max_days} days",
            errors=[ErrorItem(pointer, "expiry_too_far", f"at most {max_days} days ahead")],
        )
    return seconds


def _out(token: ApiToken, owner: str, metamodel: Metamodel) -> TokenOut:
    restriction = None if token.restriction is None else restriction_from_text(token.restriction)
    restriction = restriction or Restriction()
    groups = {group.id: group.name for group in metamodel.groups}
    types = {type_def.id: type_def.name for type_def in metamodel.types}
    return TokenOut(
        id=token.id,
        public_id=token.public_id,
        name=token.name,
        owner=owner,
        created_by=token.created_by,
        created_at=utc_text(token.created_at),
        expires_at=utc_text(token.expires_at),
        enabled=token.enabled,
        revoked=token.revoked_at is not None,
        read_only=restriction.read_only,
        # A type or group deleted since is left out: it cannot come back under the same id.
        types=None
        if restriction.type_ids is None
        else sorted(types[i] for i in restriction.type_ids if i in types),
        attribute_groups=None
        if restriction.group_ids is None
        else sorted(groups[i] for i in restriction.group_ids if i in groups),
        functions=None if restriction.functions is None else sorted(restriction.functions),
        allowed_networks=None if token.allowed_networks is None else token.allowed_networks.split(","),
        scenario=restriction.scenario,
        last_used_at=None if token.last_used_at is None else utc_text(token.last_used_at),
        last_used_address=token.last_used_address,
        rotated_from=token.rotated_from,
    )
