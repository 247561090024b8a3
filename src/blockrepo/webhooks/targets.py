"""Where a webhook may deliver: http(s) URLs whose every address is public, unless the settings allow a
network (`webhook_allowed_networks`). Loopback, private, link-local (the cloud metadata service at
169.254.169.254 among them), shared, reserved, multicast and unspecified addresses are refused, so a
subscription cannot make the server call into the network it runs in (SSRF). The address checked is the
address connected to: a delivery resolves the host once and connects to that address."""

from __future__ import annotations

import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

from blockrepo.errors import ErrorItem, ValidationFailed

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Target:
    """A delivery's destination: the URL as subscribed and the address it resolved to now."""

    url: str
    host: str
    port: int
    scheme: str
    address: str


def target_rules(allowed_networks: str, public: bool) -> TargetRules:
    """The rules of the settings: comma-separated networks (CIDR or single addresses) allowed beyond
    public addresses, and whether public addresses are allowed."""
    networks = (part.strip() for part in allowed_networks.split(","))
    return TargetRules(tuple(ipaddress.ip_network(n, strict=False) for n in networks if n), public)


def parsed_url(url: str, pointer: str = "/url") -> SplitResult:
    """The URL's parts, or a 400: http or https, a host, no user name or password in it."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise _refused(pointer, "invalid_url", f"not a URL: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _refused(pointer, "invalid_url", "an http or https URL with a host")
    if parts.username is not None or parts.password is not None:
        raise _refused(pointer, "invalid_url", "a URL without credentials (the signature authenticates)")
    if port == 0:
        raise _refused(pointer, "invalid_url", "port 0")
    if any(ord(c) < 33 or ord(c) == 127 for c in url):
        raise _refused(pointer, "invalid_url", "a URL without spaces or control characters")
    return parts


@dataclass(frozen=True)
class TargetRules:
    """The networks allowed beyond public addresses, and whether public addresses are allowed at all."""

    allowed: tuple[Network, ...] = ()
    public: bool = True


def refusal(address: Address, rules: TargetRules) -> str | None:
    """Why the address may not be delivered to (None: it may)."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if any(address in network for network in rules.allowed):
        return None
    if not rules.public:
        return "outside the networks webhooks may deliver to"
    for flag, reason in (
        (address.is_loopback, "a loopback address"),
        (address.is_link_local, "a link-local address (cloud metadata among them)"),
        (address.is_private, "a private address"),
        (address.is_multicast, "a multicast address"),
        (address.is_reserved, "a reserved address"),
        (address.is_unspecified, "the unspecified address"),
        (not address.is_global, "not a public address"),
    ):
        if flag:
            return reason
    return None


def resolve(url: str, rules: TargetRules, pointer: str = "/url") -> Target:
    """The URL's target with the address to connect to, or a 400 naming the address that is refused
    (every address the host resolves to must be allowed: a name with one private address among public
    ones is refused)."""
    parts = parsed_url(url, pointer)
    host = parts.hostname
    assert host is not None
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = {info[4][0] for info in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)}
    except (OSError, UnicodeError) as exc:
        raise _refused(pointer, "unresolvable_target", f"{host} does not resolve: {exc}") from None
    addresses = sorted(
        (ipaddress.ip_address(str(a).split("%")[0]) for a in found), key=lambda a: (a.version, str(a))
    )
    if not addresses:
        raise _refused(pointer, "unresolvable_target", f"{host} does not resolve")
    for address in addresses:
        reason = refusal(address, rules)
        if reason is not None:
            raise _refused(
                pointer,
                "target_not_allowed",
                f"{host} resolves to {address}, {reason}; the server's webhook_allowed_networks setting "
                "can allow it",
            )
    return Target(url, host, port, parts.scheme, str(addresses[0]))


def _refused(pointer: str, code: str, message: str) -> ValidationFailed:
    return ValidationFailed(
        f"the webhook URL is refused: {message}", errors=[ErrorItem(pointer, code, message)]
    )
