"""The prose of the published 7.4 description: what a client reads before the first request."""

from __future__ import annotations

TITLE = "blockrepo REST API"

DESCRIPTION = """\
blockrepo keeps enterprise-architecture planning data (business processes, capabilities, information
systems, interfaces, technical components, projects and the relations between them) and serves it through
this API, compatible with the LUY/iteraplan repository API **7.4**.

## Authentication

* **HTTP Basic** (RFC 7617, UTF-8) works on every endpoint: `curl -u system:$PW …`. Repeated credentials
  are verified once and then cached briefly, so scripts may send them with every request.
* **Sessions.** A request authenticated with credentials starts a server-side session and answers with the
  cookie `JSESSIONID`; later requests may send only the cookie. Sessions end after 300 s idle or 12 h.
  Form login: `POST /j_service_security_check` with `j_username`, `j_password`.
* **Login CSRF.** Credentials a browser sends for a page of another origin (`Sec-Fetch-Site` cross-site
  or same-site, or an `Origin` or `Referer` of another origin) log nobody in: on the login paths they get
  403 `cross_origin_login`; on any other path they act for that one request only, start no session and
  neither end nor replace the caller's session (served rather than refused, so that a sibling page that
  holds the session's token keeps working). Credentials are never read from a URL's query string.
* **CSRF.** A PATCH, POST, PUT or DELETE authenticated by the session cookie alone must repeat the
  `XSRF-TOKEN` cookie in the header `X-XSRF-TOKEN` (else 403 `csrf_token_missing`/`csrf_token_invalid`).
  Requests that carry Basic credentials are exempt, unless a browser sends them for a page of another
  origin (`Sec-Fetch-Site` cross-site or same-site, or an `Origin` of another origin): those need the token
  too. Bodies are accepted only in the content types each operation declares (else 415).
* Too many failed logins for one account or address give 429 with `Retry-After`. Password checks are
  bounded per process; past the bound a check gets 503 `password_hashing_busy` with `Retry-After`.
* **Accounts are never reused.** A user id is never handed out twice; a deleted, disabled or re-created
  account's cookies and cached credentials authenticate nobody, in every process, from the next request on.
  No password may equal its login or be one of the 30,000 most common passwords (400 `weak_password`).
* **Cookies** are host-only (no `Domain`), `Path=/`, `SameSite=Lax`, `Secure` when configured; the names
  `JSESSIONID` and `XSRF-TOKEN` are fixed by API 7.4, so they carry no `__Host-` prefix.

Public without authentication: `/api/auth-scheme`, the login and logout paths, this description and the
interactive page. On this page, **Authorize** with Basic credentials, then *Try it out*.

## Elements

An element is a JSON object whose keys are property names and whose values are **arrays**:
`{"name": ["Order handling"], "Criticality": ["high"], "informationSystems": [{"id": 17, "name": "ERP"}]}`.
Read-only keys: `id`, `type`, `revision`, `lastModificationTime`, `lastModificationUser`, `children`.
A write replaces the whole value list of each key it names, leaves other keys alone, and `[]` clears.
Relation ends and `parent` take ids, `{"id": n}` or `{"name": "…"}`. Every successful write bumps the
element's `revision` (sent as `ETag: W/"<revision>"`; send it back in `If-Match` to avoid lost updates:
a stale one gets 412) and is recorded in the history, in the same transaction. For a caller who may not
read every property of the type, the tag also names what that caller sees (`W/"<revision>.<digest>"`):
`If-Match` compares the revision, `If-None-Match` the whole tag, so no caller gets a 304 for another's copy.

**Names** (of elements, roles, attribute groups, attributes, literals, and names a reference gives) are
trimmed and NFC-normalised on input and kept so; one holding a control or invisible format character
(zero-width, BOM, bidi override and the like) is refused with 400 `invalid_character` at its pointer.
Uniqueness is decided on the normalised name: case-sensitively for element and literal names, regardless of
case (full Unicode case folding) for logins, roles, attribute groups, attributes, types and relation ends.

**What a caller may not read.** Properties in attribute groups the caller may not read, and relation ends to
types they may not read, are left out of what they read; writing one answers exactly like a key the type
does not have (400 `unknown_property`). A readable property they may not write answers 403. The `revision`
and `lastModification*` are the element's, whatever changed: a change to values a reader may not see still
moves them (the reader learns *that* the element changed, not *what*), while the history leaves out, for
that reader, the changes they may not read and every changeset that held nothing else.

## Errors

Every error is `application/problem+json` (RFC 9457, schema `Problem`) with a stable snake_case `code`,
the `requestId` and, for invalid bodies, every problem in `errors[]` located by a JSON pointer such as
`/Costs/0`; a problem with a URL parameter is located as `query:<name>` (a header's as `header:<name>`).
A query parameter the operation does not list is refused, never ignored: 400
`unknown_query_parameter` with one item per unknown name (pointer `query:<name>`), so that a misspelt
`?asof=` or `?query=` never reads as no parameter at all. A request that fails changes nothing. Every
response carries `X-Request-ID` (a valid one sent by the client is echoed), `API-Version` and
`X-Content-Type-Options: nosniff`; every answer with data `Cache-Control: private, no-cache` and `Vary:
Cookie, Authorization`. Redirects are relative.

## Versioning

The API version is **7.4**; every response says so in `API-Version`. A client may send `API-Version: 7.4`;
a version this service does not publish gets 400 `unsupported_api_version` with the supported versions.
`/api/openapi.json` redirects to the description of the current version.

## Limits

Request bodies up to {setting:max_body_bytes} (imports 20 times as much), else 413; pages of
{setting:page_size} elements by default and at most {setting:max_page_size}, else 400; at most
{setting:bulk_max_elements} elements or ids per bulk request, else 413. These are this service's settings.
A request body that pauses longer than {setting:body_read_timeout} s gets 408 `request_timeout` and the
connection is closed; nothing is locked or written before the whole body has arrived.
"""

# Keyed by lower-case tag name, so that route modules may spell their tag in either case.
TAG_DESCRIPTIONS: dict[str, str] = {
    "authentication": "Login, logout, the authentication scheme; sessions and CSRF tokens.",
    "elements": "One building block at a time: read, create, change (partial) and delete.",
    "massdata": "Many elements at once: filtered and paged lists, iteraQL queries, bulk writes, "
    "export and import.",
    "metamodel": "Building block types, their properties and relation types.",
    "history": "Changesets per element and per type, the gap-free change feed, and reading as of a revision.",
    "administration": "Attributes, attribute groups, users and roles.",
    "tokens": "API tokens for `Authorization: Bearer brp_…`: minted, listed, rotated and revoked; each "
    "acts as its owner narrowed by its restriction.",
    "webhooks": "Subscriptions that deliver the committed changes to a receiver: in order, batched, "
    "signed per Standard Webhooks, masked by the owner's rights, retried until a 2xx, with a delivery log "
    "and replay.",
    "scenarios": "Planning scenarios: a future landscape beside main (element reads and writes with "
    "`?scenario=<key>` or the `Blockrepo-Scenario` header), compared with main three ways, its conflicts "
    "settled, merged into main as one revision.",
    "reports": "Saved reports: list filters, iteraQL queries and diagram configurations with an owner, "
    "shared with roles to view or edit, and run as the caller with the caller's rights.",
    "operations": "The whole repository as one backup file, for supervisors (`blockrepo restore` reads it).",
    "exchange": "ArchiMate models in and out: The Open Group's Model Exchange File Format (3.1 written; 3.x "
    "and 2.1 read) and Archi's CSV files, mapped to building blocks (docs/guide/archimate.md).",
}
