"""The sans-IO pieces of the OAuth client: metadata documents, well-known URLs,
resource matching, ``WWW-Authenticate`` parsing, and the signed JWTs."""

from __future__ import annotations

import hashlib

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from mcp_trio.auth._client_jose import DPoPKey, b64url, client_assertion, load_private_key
from mcp_trio.auth._metadata import (
    AuthorizationServerMetadata,
    ClientInformation,
    ClientMetadata,
    MetadataError,
    ProtectedResourceMetadata,
    TokenResponse,
    authorization_server_metadata_urls,
    canonical_resource,
    decode,
    encode,
    parse_www_authenticate,
    protected_resource_metadata_url,
    protected_resource_metadata_urls,
    resource_matches,
)


def test_protected_resource_metadata_urls_path_first_then_root() -> None:
    assert protected_resource_metadata_urls("https://h.example/a/mcp") == [
        "https://h.example/.well-known/oauth-protected-resource/a/mcp",
        "https://h.example/.well-known/oauth-protected-resource",
    ]
    assert protected_resource_metadata_urls("https://h.example/") == [
        "https://h.example/.well-known/oauth-protected-resource"
    ]
    assert (
        protected_resource_metadata_url("http://h:8/mcp/")
        == "http://h:8/.well-known/oauth-protected-resource/mcp"
    )


def test_authorization_server_metadata_urls_in_the_spec_order() -> None:
    assert authorization_server_metadata_urls("https://as.example/tenant1") == [
        "https://as.example/.well-known/oauth-authorization-server/tenant1",
        "https://as.example/.well-known/openid-configuration/tenant1",
        "https://as.example/tenant1/.well-known/openid-configuration",
    ]
    assert authorization_server_metadata_urls("https://as.example") == [
        "https://as.example/.well-known/oauth-authorization-server",
        "https://as.example/.well-known/openid-configuration",
    ]
    with pytest.raises(MetadataError):
        authorization_server_metadata_urls("ftp://as.example")


def test_resource_matching() -> None:
    assert canonical_resource("HTTPS://H.example:443/mcp#frag") == "https://h.example/mcp"
    assert resource_matches("https://h.example/mcp", "https://h.example/mcp")
    assert resource_matches("https://h.example", "https://h.example/mcp")  # covers the endpoint
    assert not resource_matches("https://h.example/mc", "https://h.example/mcp")
    assert not resource_matches("https://evil.example/mcp", "https://h.example/mcp")
    assert not resource_matches("http://h.example/mcp", "https://h.example/mcp")
    assert not resource_matches("not a url", "https://h.example/mcp")


def test_documents_decode_strictly_and_encode_sparsely() -> None:
    prm = decode(
        b'{"resource": "https://h/mcp", "authorization_servers": ["https://as"], "x": 1}',
        ProtectedResourceMetadata,
    )
    assert prm.authorization_servers == ["https://as"]
    with pytest.raises(MetadataError, match="not a valid ProtectedResourceMetadata"):
        decode(b'{"resource": "https://h/mcp", "scopes_supported": "a b"}', ProtectedResourceMetadata)
    with pytest.raises(MetadataError, match="not JSON"):
        decode(b"<html>", AuthorizationServerMetadata)
    with pytest.raises(MetadataError, match="no client_id"):
        decode(b'{"client_secret": "s"}', ClientInformation)
    assert encode(ClientMetadata(client_name="n", redirect_uris=["http://127.0.0.1/cb"])) == (
        b'{"redirect_uris":["http://127.0.0.1/cb"],"client_name":"n"}'
    )
    token = decode(b'{"access_token": "t", "token_type": "Bearer", "expires_in": 60}', TokenResponse)
    assert token.expires_in == 60 and token.refresh_token is None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        (
            'Bearer error="insufficient_scope", scope="a b", resource_metadata="https://h/x"',
            [
                (
                    "bearer",
                    {
                        "error": "insufficient_scope",
                        "scope": "a b",
                        "resource_metadata": "https://h/x",
                    },
                )
            ],
        ),
        (
            'DPoP algs="ES256", error=use_dpop_nonce',
            [("dpop", {"algs": "ES256", "error": "use_dpop_nonce"})],
        ),
        (
            'Basic realm="x", Bearer scope="s"',
            [("basic", {"realm": "x"}), ("bearer", {"scope": "s"})],
        ),
        ("Negotiate abc==, Bearer", [("negotiate", {}), ("bearer", {})]),
        ('Bearer realm="a \\"quoted\\" word"', [("bearer", {"realm": 'a "quoted" word'})]),
        ("", []),
        ('"', []),
        ("Bearer ,,, =", [("bearer", {})]),
    ],
)
def test_www_authenticate_parsing(header: str, expected: list[tuple[str, dict[str, str]]]) -> None:
    assert [(c.scheme, c.params) for c in parse_www_authenticate(header)] == expected


def test_www_authenticate_parsing_never_raises_on_junk() -> None:
    for junk in ["\x00\xff", "=" * 10000, 'Bearer a="' + "x" * 10000, ", , ,", "B e a r e r"]:
        parse_www_authenticate(junk)


def _pem_key() -> tuple[str, ec.EllipticCurvePublicKey]:
    key = ec.generate_private_key(ec.SECP256R1())
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode()
    return pem, key.public_key()


def test_client_assertion_claims() -> None:
    pem, public = _pem_key()
    token = client_assertion("cid", "https://as.example", load_private_key(pem))
    claims = jwt.decode(token, public, algorithms=["ES256"], audience="https://as.example")
    assert claims["iss"] == claims["sub"] == "cid"
    assert claims["exp"] - claims["iat"] <= 300 and claims["jti"]
    with pytest.raises(ValueError, match="not a usable PEM private key"):
        load_private_key("-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n")


def test_dpop_proofs_are_fresh_and_bound() -> None:
    key = DPoPKey()
    first = key.proof("post", "https://rs.example/mcp?x=1#f", nonce="n1", access_token="tok")
    second = key.proof("POST", "https://rs.example/mcp")
    header = jwt.get_unverified_header(first)
    assert header["typ"] == "dpop+jwt" and "d" not in header["jwk"]
    public = jwt.PyJWK(header["jwk"], "ES256").key
    claims = jwt.decode(first, public, algorithms=["ES256"])
    assert claims["htm"] == "POST" and claims["htu"] == "https://rs.example/mcp"
    assert claims["nonce"] == "n1"
    assert claims["ath"] == b64url(hashlib.sha256(b"tok").digest())
    assert jwt.decode(second, public, algorithms=["ES256"])["jti"] != claims["jti"]
