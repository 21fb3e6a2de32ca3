"""The client's address: the one rule the link-open limit and the login lock-outs (django-axes) share.

With ``PROXY_COUNT=N`` reverse proxies in front, each proxy appends the address of the peer it saw
to ``X-Forwarded-For`` (nginx's ``$proxy_add_x_forwarded_for``), so the client is the N-th entry
from the right: the last one behind a single proxy. Entries further left were sent by the client
and can say anything, so they are never read. django-ipware's ``proxy_count`` reads the header from
the left, which a client can spoof, so it is not used.

Limits count per ``client_network``: an IPv4 address, or the /64 an IPv6 address belongs to (one
subscriber's usual assignment, inside which a client can pick a new address for every request).
"""

from __future__ import annotations

import ipaddress

from django.conf import settings


def _address(text: str) -> str | None:
    """``text`` as a normalised IP address (a port some proxies add is dropped), or None."""
    text = text.strip()
    candidates = [text]
    if text.startswith("[") and "]" in text:  # [2001:db8::1]:443
        candidates.append(text[1 : text.index("]")])
    elif text.count(":") == 1:  # 203.0.113.7:51234
        candidates.append(text.split(":", 1)[0])
    for candidate in candidates:
        try:
            return str(ipaddress.ip_address(candidate))
        except ValueError:
            continue
    return None


def client_address(request, proxy_count: int | None = None) -> str | None:
    """The client's IP address for ``request``; ``REMOTE_ADDR`` when no proxy is configured, or when
    the header holds fewer entries than there are proxies (a request that did not come through them)."""
    count = settings.ANNOTATOR_PROXY_COUNT if proxy_count is None else proxy_count
    remote = request.META.get("REMOTE_ADDR") or ""
    if count > 0:
        hops = [hop for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if hop.strip()]
        if len(hops) >= count:
            found = _address(hops[-count])
            if found is not None:
                return found
    return _address(remote) or (remote or None)


IPV6_PREFIX = 64


def client_network(request, proxy_count: int | None = None) -> str | None:
    """What a limit counts for ``request``: its IPv4 address, or the first address of its IPv6 /64
    (an IPv4-mapped IPv6 address counts as the IPv4 one). Still an address, as django-axes stores it."""
    found = client_address(request, proxy_count)
    try:
        address = ipaddress.ip_address(found or "")
    except ValueError:
        return found
    if address.version == 6:
        if address.ipv4_mapped is not None:
            return str(address.ipv4_mapped)
        return str(ipaddress.ip_network(f"{address}/{IPV6_PREFIX}", strict=False).network_address)
    return str(address)
