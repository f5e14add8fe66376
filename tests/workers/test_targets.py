"""The address classifier: an address inside is refused in every notation (pure, no I/O).

Each notation is read the way the system resolver reads it (`literal_address`), then
classified (`refusal`). The networks a config allows let exactly those addresses through.
"""

from __future__ import annotations

import socket
from ipaddress import ip_address, ip_network

import pytest

from workers.targets import literal_address, refusal

# notation -> the class it is refused as (None: a global address, allowed)
NOTATIONS: list[tuple[str, str | None]] = [
    # IPv4 loopback in every form inet_aton reads
    ("127.0.0.1", "loopback"),
    ("127.255.255.254", "loopback"),
    ("2130706433", "loopback"),  # decimal integer
    ("0x7f000001", "loopback"),  # hex integer
    ("017700000001", "loopback"),  # octal integer
    ("0x7f.1", "loopback"),  # hex, two parts
    ("0177.0.0.1", "loopback"),  # octal first byte
    ("0x7F.0.0.0x1", "loopback"),
    ("127.1", "loopback"),  # short form
    ("127.0.1", "loopback"),
    # IPv6 loopback and its IPv4 in IPv6 forms
    ("::1", "loopback"),
    ("[::1]", "loopback"),
    ("0:0:0:0:0:0:0:1", "loopback"),
    ("::ffff:127.0.0.1", "loopback"),  # IPv4-mapped
    ("::ffff:7f00:1", "loopback"),
    ("[::ffff:127.0.0.1]", "loopback"),
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated), in ::/8
    ("2002:7f00:1::", "embeds 127.0.0.1, which is loopback"),  # 6to4
    ("2002:a00:1::1", "embeds 10.0.0.1, which is private"),
    ("64:ff9b::a9fe:a9fe", "link-local"),  # NAT64 of the metadata address
    ("64:ff9b::101:101", None),  # NAT64 of 1.1.1.1: a normal target on an IPv6-only host
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "private"),  # Teredo
    # unspecified
    ("0.0.0.0", "unspecified"),
    ("0", "unspecified"),
    ("0x0", "unspecified"),
    ("::", "unspecified"),
    ("::ffff:0.0.0.0", "unspecified"),
    # private
    ("10.0.0.1", "private"),
    ("012.0.0.1", "private"),  # octal 10
    ("167772161", "private"),  # decimal 10.0.0.1
    ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("0xc0a80101", "private"),
    ("::ffff:192.168.1.1", "private"),
    ("fc00::1", "private"),
    ("fd12:3456::1", "private"),
    # link-local, the cloud metadata address among them
    ("169.254.169.254", "link-local"),
    ("0xa9fea9fe", "link-local"),
    ("2852039166", "link-local"),
    ("::ffff:169.254.169.254", "link-local"),
    ("fe80::1", "link-local"),
    # multicast
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("ff0e::1", "multicast"),  # global scope multicast is still multicast
    # reserved / broadcast / other non-global
    ("240.0.0.1", "reserved"),
    ("255.255.255.255", "reserved"),
    ("100.64.0.1", "not globally routable"),  # shared address space (CGNAT)
    ("192.0.2.1", "private"),  # documentation
    ("198.18.0.1", "private"),  # benchmarking
    ("2001:db8::1", "private"),  # documentation
    # global: allowed
    ("93.184.216.34", None),
    ("1.1.1.1", None),
    ("16843009", None),  # decimal 1.1.1.1
    ("2606:4700:4700::1111", None),
    ("::ffff:1.1.1.1", None),
    ("2002:101:101::1", None),  # 6to4 of 1.1.1.1
]


@pytest.mark.parametrize(("notation", "expected"), NOTATIONS, ids=[n for n, _ in NOTATIONS])
def test_every_notation_is_classified_by_the_address_it_names(
    notation: str, expected: str | None
) -> None:
    address = literal_address(notation)
    assert address is not None, notation
    why = refusal(address)
    if expected is None:
        assert why is None, (notation, why)
    else:
        assert why is not None and why.endswith(expected), (notation, why)


@pytest.mark.parametrize(
    "host", ["agent.example", "localhost", "1.2.3.4.5", "0x7g.1", "127.0.0.1 x"]
)
def test_host_names_and_non_numbers_are_not_literals(host: str) -> None:
    assert literal_address(host) is None


@pytest.mark.parametrize(
    "notation", ["2130706433", "0x7f.1", "0177.0.0.1", "127.1", "0x7f000001", "0"]
)
def test_the_system_resolver_reads_these_notations_as_the_classifier_does(notation: str) -> None:
    # What counts is the address connected to: the resolver's answer is what gets checked
    # at delivery, and for these numeric forms it agrees with literal_address (no DNS involved).
    answers = {
        ip_address(info[4][0])
        for info in socket.getaddrinfo(notation, 443, type=socket.SOCK_STREAM)
    }
    assert answers == {literal_address(notation)}
    assert all(refusal(a) is not None for a in answers)


def test_allowed_networks_let_exactly_their_addresses_through() -> None:
    loopback = [ip_network("127.0.0.0/8"), ip_network("::1/128")]
    for allowed in ("127.0.0.1", "2130706433", "::1", "::ffff:127.0.0.1", "127.9.9.9"):
        address = literal_address(allowed)
        assert address is not None and refusal(address, loopback) is None, allowed
    for still_refused in ("10.0.0.1", "169.254.169.254", "0.0.0.0", "::", "fe80::1", "192.168.0.1"):
        address = literal_address(still_refused)
        assert address is not None and refusal(address, loopback) is not None, still_refused
    # a 6to4 address is allowed only if the IPv4 it leads to is too
    sixtofour = ip_address("2002:a00:1::1")
    assert refusal(sixtofour, loopback) is not None
    assert refusal(sixtofour, [ip_network("10.0.0.0/8")]) is None
    # an IPv4 network never allows an IPv6 address of another meaning, nor the reverse
    assert refusal(ip_address("fc00::1"), [ip_network("10.0.0.0/8")]) is not None
    assert refusal(ip_address("10.0.0.1"), [ip_network("fc00::/7")]) is not None
