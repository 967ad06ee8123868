import pytest

from nodes.executors.addresses import forbidden_reason, is_host_allowed, normalize_host


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "127.1.2.3",
        "10.0.0.1",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "0.0.0.0",
        "100.64.0.1",
        "224.0.0.1",
        "240.0.0.1",
        "255.255.255.255",
        "::1",
        "::",
        "fe80::1",
        "fe80::1%eth0",
        "fc00::1",
        "fec0::1",
        "ff02::1",
        "::ffff:127.0.0.1",
        "::ffff:10.0.0.1",
        "::ffff:0.0.0.0",
        "64:ff9b::7f00:1",
        "2002:7f00:1::1",
        "not-an-ip",
    ],
)
def test_non_public_addresses_are_forbidden(address):
    assert forbidden_reason(address) is not None


@pytest.mark.parametrize(
    "address", ["8.8.8.8", "93.184.216.34", "2606:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
)
def test_public_addresses_are_allowed(address):
    assert forbidden_reason(address) is None


def test_reasons_name_the_embedded_address():
    assert forbidden_reason("::ffff:127.0.0.1") == "loopback"
    assert forbidden_reason("169.254.169.254") == "link-local"


@pytest.mark.parametrize(
    ("raw", "normalized"),
    [
        ("Example.COM", "example.com"),
        ("example.com:8080", "example.com"),
        ("example.com.", "example.com"),
        ("[::1]:8080", "::1"),
        ("[::1]", "::1"),
        ("::1", "::1"),
        ("Bücher.de", "xn--bcher-kva.de"),
    ],
)
def test_normalize_host(raw, normalized):
    assert normalize_host(raw) == normalized


def test_is_host_allowed():
    allowed = ["API.example.com:443", "[::1]", "localhost", ""]
    assert is_host_allowed("api.example.com", allowed)
    assert is_host_allowed("LOCALHOST", allowed)
    assert is_host_allowed("::1", allowed)
    assert not is_host_allowed("example.com", allowed)
    assert not is_host_allowed("evil.api.example.com", allowed)
    assert not is_host_allowed("", allowed)
    assert not is_host_allowed("localhost", [])
