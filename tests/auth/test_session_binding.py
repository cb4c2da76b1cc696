"""A session belongs to the user whose token opened it.

Another user with a valid token of their own and the first user's session id
(Streamable HTTP ``Mcp-Session-Id``, or the legacy HTTP+SSE ``session_id``)
gets exactly what an unknown session id gets (404), for POST, GET and DELETE,
and the first user's session goes on untouched.  "Another user" is another
subject, the same subject from another issuer, or (for tokens without a
subject) another client.  Real servers on 127.0.0.1, both HTTP front doors;
WebSocket sessions are their connection and have no id to borrow.
"""

from __future__ import annotations

import json
from typing import Any

import httpx2 as httpx
import trio

from examples.authorization_server import AuthorizationServer
from mcp_trio.auth.server import CallbackVerifier
from mcp_trio.client import open_client
from tests._support.auth import jwt_verifier, protected
from tests._support.auth_scopes import answer, call, legacy_session, open_session, send

VERSION = "2025-11-25"  # (its GET stream starts with a priming event)
UNKNOWN = "no-such-session"


def sse(token: str) -> dict[str, str]:
    return {"accept": "text/event-stream", "authorization": f"Bearer {token}"}


def whoami(rid: int) -> bytes:
    return json.dumps(call(rid, "whoami")).encode()


def caller(response: httpx.Response) -> dict[str, Any]:
    """Whom ``whoami`` saw: subject, client and scopes."""
    assert response.status_code == 200, response.text
    seen: dict[str, Any] = response.json()["result"]["structuredContent"]
    return seen


async def assert_bound(client: httpx.AsyncClient, url: str, owner: str, other: str) -> None:
    """``other`` cannot use, watch or end ``owner``'s session; ``owner`` still can."""
    session = await open_session(client, url, owner, VERSION)
    unknown = {**session, "mcp-session-id": UNKNOWN}
    not_found = answer(await send(client, url, whoami(2), other, **unknown))
    assert not_found[0] == 404
    assert answer(await send(client, url, whoami(2), other, **session)) == not_found
    # notifications (202 for the owner) are refused the same way
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 9}}
    notice = json.dumps(cancel).encode()
    assert answer(await send(client, url, notice, other, **session)) == not_found
    no_stream = answer(await client.get(url, headers={**sse(other), **unknown}))
    assert no_stream[0] == 404
    assert answer(await client.get(url, headers={**sse(other), **session})) == no_stream
    ended = answer(await client.delete(url, headers={**sse(other), **unknown}))
    assert ended[0] == 404
    assert answer(await client.delete(url, headers={**sse(other), **session})) == ended

    # The owner's session is untouched: its requests, its GET stream, its DELETE.
    assert caller(await send(client, url, whoami(3), owner, **session))["scopes"] == ["mcp"]
    async with client.stream("GET", url, headers={**sse(owner), **session}) as stream:
        assert stream.status_code == 200
    assert (await client.delete(url, headers={**sse(owner), **session})).status_code == 200
    assert answer(await send(client, url, whoami(4), owner, **session)) == not_found


async def test_sessions_are_bound_to_the_subject(
    front_door: str,  # noqa: F811
    authorization_server: AuthorizationServer,
    http: httpx.AsyncClient,  # noqa: F811
) -> None:
    issuer = authorization_server.issuer
    assert issuer
    async with protected(front_door, jwt_verifier(authorization_server), issuer) as (url, _):
        ada = authorization_server.issue_access_token(subject="ada", scopes=["mcp"], resource=url)
        bob = authorization_server.issue_access_token(subject="bob", scopes=["mcp"], resource=url)
        with trio.fail_after(20):
            await assert_bound(http, url, ada, bob)
            # The same user with another token (another client, more scopes) is still the owner.
            session = await open_session(http, url, ada, VERSION)
            again = authorization_server.issue_access_token(
                subject="ada", client_id="other", scopes=["mcp", "tools:admin"], resource=url
            )
            assert caller(await send(http, url, whoami(2), again, **session))["sub"] == "ada"

            # The legacy HTTP+SSE endpoints: the session_id of ada's stream.
            origin = url.rsplit("/", 1)[0]
            async with legacy_session(origin, ada) as (messages, channel):
                unknown = messages.split("session_id=")[0] + f"session_id={UNKNOWN}"
                not_found = answer(await send(http, unknown, whoami(2), bob))
                assert not_found[0] == 404
                assert answer(await send(http, messages, whoami(2), bob)) == not_found
                # The owner's session is untouched.
                async with open_client(channel) as client:
                    text = (await client.call_tool("whoami")).content[0].text
                    assert json.loads(text)["sub"] == "ada"


async def test_the_issuer_is_part_of_the_owner(
    front_door: str,  # noqa: F811
    http: httpx.AsyncClient,  # noqa: F811
) -> None:
    resource: list[str] = []

    async def lookup(token: str) -> dict[str, Any]:
        # "<sub>@<issuer>", or "client:<id>" for a token without a subject
        if token.startswith("client:"):
            claims = {"client_id": token[len("client:") :]}
        else:
            subject, _, issuer = token.partition("@")
            claims = {"sub": subject, "iss": f"https://{issuer}.example"}
        return {**claims, "scope": "mcp", "aud": resource[0]}

    async with protected(front_door, CallbackVerifier(lookup), "https://one.example") as (url, _):
        resource.append(url)
        with trio.fail_after(20):
            await assert_bound(http, url, "ada@one", "ada@two")
            await assert_bound(http, url, "client:app1", "client:app2")
