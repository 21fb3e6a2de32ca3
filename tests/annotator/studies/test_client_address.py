"""The client's address behind reverse proxies, with X-Forwarded-For shaped the way nginx's
``$proxy_add_x_forwarded_for`` builds it: whatever the client sent, then the address the proxy saw.

One rule serves the link-open limit and the login lock-outs; distinct workers behind one proxy
are distinct, a client cannot choose its address by sending the header itself.
"""

from __future__ import annotations

import pytest
from axes.helpers import get_client_ip_address
from django.test import Client, RequestFactory, override_settings
from django.urls import reverse

from annotator.client_address import client_address, client_network
from annotator.models import Enrolment
from tests.annotator.study_support import entry_url, prolific_link
from tests.factories import PASSWORD, make_batch, make_user

PROXY = "10.0.0.2"  # nginx, as the app server sees it


def nginx(client_ip: str, sent: str | None = None, *, remote: str = PROXY) -> dict:
    """The META a request has after one nginx: ``sent`` is the header the client sent itself."""
    header = f"{sent}, {client_ip}" if sent else client_ip
    return {"REMOTE_ADDR": remote, "HTTP_X_FORWARDED_FOR": header}


def request_with(meta: dict):
    return RequestFactory().get("/", **meta)


@pytest.mark.parametrize(
    "meta, count, expected",
    [
        # No proxy configured: the header is the client's own words and is ignored.
        (nginx("203.0.113.7"), 0, PROXY),
        ({"REMOTE_ADDR": "198.51.100.4"}, 0, "198.51.100.4"),
        # One nginx: the last entry.
        (nginx("203.0.113.7"), 1, "203.0.113.7"),
        # A spoofed leading entry (the client sent X-Forwarded-For itself) changes nothing.
        (nginx("203.0.113.7", "1.2.3.4"), 1, "203.0.113.7"),
        (nginx("203.0.113.7", "1.2.3.4, 5.6.7.8"), 1, "203.0.113.7"),
        (nginx("203.0.113.7", "garbage, , "), 1, "203.0.113.7"),
        # Two proxies: the outer one appended the client, the inner one the outer proxy.
        ({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.2.3.4, 203.0.113.7, 10.0.0.1"}, 2, "203.0.113.7"),
        ({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.7, 10.0.0.1"}, 2, "203.0.113.7"),
        # Fewer entries than proxies, or none: the request bypassed them; the peer's address is used.
        ({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "203.0.113.7"}, 2, PROXY),
        ({"REMOTE_ADDR": PROXY}, 1, PROXY),
        # What stands where the client should is not an address: the peer's address, not the text.
        ({"REMOTE_ADDR": PROXY, "HTTP_X_FORWARDED_FOR": "1.2.3.4, not-an-ip"}, 1, PROXY),
        # IPv6 and the ports some proxies add; addresses are normalised.
        (nginx("2001:DB8:0:0:0:0:0:1"), 1, "2001:db8::1"),
        (nginx("[2001:db8::1]:443"), 1, "2001:db8::1"),
        (nginx("203.0.113.7:51234"), 1, "203.0.113.7"),
    ],
)
def test_the_client_is_the_nth_address_from_the_right(meta, count, expected):
    assert client_address(request_with(meta), proxy_count=count) == expected


@override_settings(ANNOTATOR_PROXY_COUNT=1)
def test_django_axes_reads_the_same_rule():
    request = request_with(nginx("203.0.113.7", "1.2.3.4"))
    assert get_client_ip_address(request) == client_address(request) == "203.0.113.7"


@pytest.mark.parametrize(
    "address, network",
    [
        ("203.0.113.7", "203.0.113.7"),
        ("2001:db8:1:2:aaaa:bbbb:cccc:dddd", "2001:db8:1:2::"),
        ("2001:db8:1:2::1", "2001:db8:1:2::"),
        ("2001:db8:1:3::1", "2001:db8:1:3::"),  # the next /64: another subscriber
        ("::ffff:198.51.100.4", "198.51.100.4"),
    ],
)
def test_limits_count_an_ipv6_client_by_its_64(address, network):
    assert client_network(request_with({"REMOTE_ADDR": address}), proxy_count=0) == network


@pytest.mark.django_db
@override_settings(ANNOTATOR_PROXY_COUNT=1, ANNOTATOR_LINK_OPENS_PER_MINUTE=3)
def test_a_client_rotating_addresses_inside_its_ipv6_64_is_held_back():
    batch = make_batch("crowd-v6", n_items=4)
    _link, token = prolific_link(batch)
    codes = [
        Client(**nginx(f"2001:db8:7:7::{n + 1:x}")).get(entry_url(token, f"{n:024d}")).status_code
        for n in range(5)
    ]
    assert codes == [302, 302, 302, 429, 429]
    # Another /64 is another client.
    assert Client(**nginx("2001:db8:7:8::1")).get(entry_url(token, "9" * 24)).status_code == 302


@override_settings(ANNOTATOR_PROXY_COUNT=1)
def test_django_axes_locks_out_by_the_same_network():
    request = request_with(nginx("2001:db8:5:5::42"))
    assert get_client_ip_address(request) == "2001:db8:5:5::"


@pytest.mark.django_db
@override_settings(ANNOTATOR_PROXY_COUNT=1, ANNOTATOR_LINK_OPENS_PER_MINUTE=3)
def test_distinct_workers_behind_one_proxy_do_not_share_the_link_limit():
    batch = make_batch("crowd-behind-proxy", n_items=4)
    _link, token = prolific_link(batch)
    pids = [f"{n:024d}" for n in range(12)]
    codes = [
        Client(**nginx(f"203.0.113.{n + 1}")).get(entry_url(token, pid)).status_code
        for n, pid in enumerate(pids)
    ]
    assert codes == [302] * len(pids)
    assert Enrolment.objects.count() == len(pids)


@pytest.mark.django_db
@override_settings(ANNOTATOR_PROXY_COUNT=1, ANNOTATOR_LINK_OPENS_PER_MINUTE=3)
def test_one_address_opening_too_fast_is_refused_whatever_it_puts_in_the_header():
    batch = make_batch("crowd-flood", n_items=4)
    _link, token = prolific_link(batch)
    codes = [
        Client(**nginx("198.51.100.9", f"192.0.2.{n}")).get(entry_url(token, f"{n:024d}")).status_code
        for n in range(5)
    ]
    assert codes == [302, 302, 302, 429, 429]
    # Its neighbour behind the same proxy is not held back.
    assert Client(**nginx("198.51.100.10")).get(entry_url(token, "9" * 24)).status_code == 302


@pytest.mark.django_db
@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3, ANNOTATOR_PROXY_COUNT=1)
def test_a_login_lock_out_holds_one_client_behind_the_proxy_not_all():
    make_user("ann", role="annotator")
    url = reverse("login")
    guesser = Client(**nginx("198.51.100.9"))
    for _ in range(3):
        guesser.post(url, {"username": "ann", "password": "wrong"})
    assert guesser.post(url, {"username": "ann", "password": PASSWORD}).status_code == 429
    # A spoofed header does not get the guesser out of the lock-out.
    spoofing = Client(**nginx("198.51.100.9", "192.0.2.77"))
    assert spoofing.post(url, {"username": "ann", "password": PASSWORD}).status_code == 429
    # The real owner, another client behind the same proxy, still signs in.
    owner = Client(**nginx("203.0.113.7"))
    assert owner.post(url, {"username": "ann", "password": PASSWORD}).status_code == 302
