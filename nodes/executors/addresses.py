"""The SSRF guard: which hosts and addresses an HTTP node may reach.

A host in ``allowed_hosts`` may be reached whatever it resolves to. Any other host is
resolved, and refused if ANY of its addresses is not a public unicast address
(loopback, private, link-local, shared, multicast, reserved, unspecified, or an IPv6
address embedding one of those).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Collection

from nodes.errors import NodeError

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def normalize_host(host: str) -> str:
    """Lower-case ASCII, without port, brackets or trailing dot: ``"[::1]:80"`` → ``"::1"``."""
    host = host.strip().lower()
    if host.startswith("["):
        host = host[1 : host.find("]")] if "]" in host else host[1:]
    elif host.count(":") == 1:
        host = host.split(":", 1)[0]
    host = host.rstrip(".")
    try:  # compare international names in their ASCII (punycode) form
        return host.encode("idna").decode("ascii")
    except UnicodeError:
        return host


def is_host_allowed(host: str, allowed_hosts: Collection[str]) -> bool:
    """Whether ``host`` is listed in ``allowed_hosts`` (case-insensitive, port ignored)."""
    wanted = normalize_host(host)
    return any(normalize_host(entry) == wanted for entry in allowed_hosts if entry)


NAT64_PREFIX = ipaddress.IPv6Network("64:ff9b::/96")


def _effective(ip: IPAddress) -> list[IPAddress]:
    """The addresses to judge ``ip`` by.

    An IPv4-mapped or NAT64 address reaches exactly its embedded IPv4 address, so it is
    judged by that alone; a 6to4 or Teredo address is judged by itself and the IPv4
    addresses it embeds.
    """
    if not isinstance(ip, ipaddress.IPv6Address):
        return [ip]
    if ip.ipv4_mapped is not None:
        return [ip.ipv4_mapped]
    if ip in NAT64_PREFIX:
        return [ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)]
    found: list[IPAddress] = [ip]
    if ip.sixtofour is not None:
        found.append(ip.sixtofour)
    if ip.teredo is not None:
        found.extend(ip.teredo)
    return found


def forbidden_reason(address: str) -> str | None:
    """Why ``address`` (an IP literal) may not be reached, or None if it is public."""
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    for candidate in _effective(ip):
        for reason in (
            "unspecified",
            "loopback",
            "link_local",
            "private",
            "multicast",
            "reserved",
        ):
            if getattr(candidate, f"is_{reason}"):
                return reason.replace("_", "-")
        if isinstance(candidate, ipaddress.IPv6Address) and candidate.is_site_local:
            return "site-local"
        if not candidate.is_global:
            return "not global"
    return None


def resolve(host: str, port: int) -> list[str]:
    """The addresses ``host`` resolves to, in resolver order, without duplicates.

    Raises OSError (socket.gaierror) when the name does not resolve.
    """
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0])
        if address not in addresses:
            addresses.append(address)
    return addresses


def forbidden_address_error(host: str, address: str, reason: str) -> NodeError:
    return NodeError(
        f"refusing to connect to {host!r}: it resolves to {address} ({reason}); "
        "add the host to WORKFLOW_HTTP_ALLOWED_HOSTS to allow it",
        type="ForbiddenAddress",
        retryable=False,
        details={"host": host, "address": address, "reason": reason},
    )


def checked_addresses(host: str, port: int, allowed_hosts: Collection[str]) -> list[str]:
    """Resolve ``host`` and return its addresses, all safe to connect to.

    Raises NodeError ``ForbiddenAddress`` (not retryable) if any address is not public
    and the host is not allowed, ``HTTPConnectionError`` (retryable) if it does not
    resolve.
    """
    try:
        addresses = resolve(host, port)
    except (OSError, UnicodeError) as exc:
        raise NodeError(
            f"cannot resolve {host!r}: {exc}",
            type="HTTPConnectionError",
            retryable=True,
            details={"host": host},
        ) from exc
    if not addresses:
        raise NodeError(
            f"cannot resolve {host!r}: no addresses", type="HTTPConnectionError", retryable=True
        )
    if is_host_allowed(host, allowed_hosts):
        return addresses
    for address in addresses:
        reason = forbidden_reason(address)
        if reason is not None:
            raise forbidden_address_error(host, address, reason)
    return addresses
