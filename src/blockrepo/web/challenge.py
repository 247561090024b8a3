"""Keeps browsers from showing their Basic login dialog when a request of the web interface gets 401.

A 401 carries `WWW-Authenticate: Basic …`, and browsers answer that with a modal password dialog even for
script requests. The interface marks its requests with `X-Requested-With: XMLHttpRequest` (the convention
Spring Security and others follow) and handles 401 itself, by showing its login page; for those requests
only, the challenge names the form login instead, a scheme browsers do not prompt for.

A browser request made for another site's page (`Sec-Fetch-Site` cross-site or same-site) gets the form
login's challenge too: a browser answers a Basic challenge with credentials a foreign page put into the
URL it navigated to (`http://mallory:…@repo/…`) and then keeps them for the origin, so its own later
requests there (the favicon) would log its user in as that page chose (login CSRF, API.md 1.4 and 1.6).
Without a Basic challenge the browser never sends them. Every other client, scripts and the service's own
pages included, gets the Basic challenge unchanged.
"""

from __future__ import annotations

from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

SCRIPT_MARKER = "xmlhttprequest"
FOREIGN_SITES = ("cross-site", "same-site")
FORM_CHALLENGE = b'FormLogin realm="blockrepo", action="/j_service_security_check"'


class ScriptChallengeMiddleware:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        if (
            headers.get("x-requested-with", "").lower() != SCRIPT_MARKER
            and headers.get("sec-fetch-site", "").lower() not in FOREIGN_SITES
        ):
            await self.app(scope, receive, send)
            return

        async def send_form_challenge(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == 401:
                message["headers"] = [
                    (key, FORM_CHALLENGE if key.lower() == b"www-authenticate" else value)
                    for key, value in message.get("headers", [])
                ]
            await send(message)

        await self.app(scope, receive, send_form_challenge)
