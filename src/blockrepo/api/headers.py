"""Headers every response gets by what it is (API.md rules 1.7 and 1.8): data is private to its reader,
nothing is sniffed, every HTML page refuses to be framed, and redirects are relative."""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

# A browser keeps a response per URL, whoever is logged in: it must revalidate each use (no-cache), keep
# it out of shared caches (private), and not revalidate one cookie's or account's copy for another (Vary).
PRIVATE = (b"cache-control", b"private, no-cache")
VARY = (b"vary", b"Cookie, Authorization")
NOSNIFF = (b"x-content-type-options", b"nosniff")
# What the element GET lane (which answers before this middleware) adds to each of its answers.
DATA_HEADERS = (PRIVATE, VARY, NOSNIFF)
# For HTML that brings no policy of its own (a helper page of a bundled package): it runs nothing.
DEFAULT_PAGE_POLICY = b"default-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
REFERRER_POLICY = (b"referrer-policy", b"same-origin")
NO_FRAMES = (b"x-frame-options", b"DENY")  # frame-ancestors for browsers that predate it

_SET_HERE = frozenset({b"x-content-type-options", b"x-frame-options"})


class ResponseHeadersMiddleware:
    """Pure ASGI, around the whole application (inside the element GET lane, which adds `DATA_HEADERS`
    itself; outside FastAPI's own error middleware, so a 500 has them too). Decided by the response, not
    by the route, so no route, mount or framework redirect can miss them:

    - every response: `X-Content-Type-Options: nosniff`;
    - every response except public assets (`public_prefixes`: static files that hold no data): `Cache-Control:
      private, no-cache` (a route's `no-store` is kept) and `Vary: Cookie, Authorization`;
    - every HTML response: a Content-Security-Policy with `frame-ancestors 'none'` (the page's own, else
      `DEFAULT_PAGE_POLICY`), `Referrer-Policy` and `X-Frame-Options`;
    - a `Location` naming a scheme or host (Starlette's trailing-slash redirect copies the request's `Host`)
      loses them: the application only ever redirects to itself."""

    def __init__(self, app: ASGIApp, *, public_prefixes: tuple[str, ...]) -> None:
        self.app = app
        self.public_prefixes = public_prefixes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        public = scope["path"].startswith(self.public_prefixes)

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = response_headers(message.get("headers", []), public=public)
            await send(message)

        await self.app(scope, receive, send_with_headers)


def response_headers(headers: list[tuple[bytes, bytes]], *, public: bool) -> list[tuple[bytes, bytes]]:
    """`headers` of a response with those of `ResponseHeadersMiddleware` set."""
    out: list[tuple[bytes, bytes]] = []
    found: dict[bytes, bytes] = {}
    for name, value in headers:
        lowered = name.lower()
        if lowered in _SET_HERE:
            continue
        if lowered == b"location":
            value = relative_location(value)
        elif not public and lowered in (b"cache-control", b"vary"):
            found[lowered] = value  # merged below
            continue
        elif lowered == b"content-security-policy" and b"frame-ancestors" not in value:
            value += b"; frame-ancestors 'none'"
        found.setdefault(lowered, value)
        out.append((name, value))
    out.append(NOSNIFF)
    if not public:
        cache_control = found.get(b"cache-control", b"")
        out.append((b"cache-control", cache_control) if b"no-store" in cache_control else PRIVATE)
        out.append(_merged_vary(found.get(b"vary")))
    if found.get(b"content-type", b"").lower().startswith(b"text/html"):
        if b"content-security-policy" not in found:
            out.append((b"content-security-policy", DEFAULT_PAGE_POLICY))
        if b"referrer-policy" not in found:
            out.append(REFERRER_POLICY)
        out.append(NO_FRAMES)
    return out


def _merged_vary(vary: bytes | None) -> tuple[bytes, bytes]:
    if not vary:
        return VARY
    named = {part.strip().lower() for part in vary.split(b",")}
    if b"*" in named:
        return (b"vary", vary)
    missing = [name for name in (b"Cookie", b"Authorization") if name.lower() not in named]
    return (b"vary", b", ".join([vary, *missing]))


def relative_location(location: bytes) -> bytes:
    """A redirect target without scheme and host (path and query kept); never a network-path reference
    (`//host/…`, or `/\\host/…`, which browsers read alike) that a browser would resolve against another
    host. A target that is already a path is returned as it is."""
    text = location.decode("latin-1")
    parts = urlsplit(text)
    if not (parts.scheme or parts.netloc or text.startswith(("//", "\\", "/\\"))):
        return location
    path = "/" + parts.path.lstrip("/\\")
    return (path + (f"?{parts.query}" if parts.query else "")).encode("latin-1")
