"""A client for the official MCP conformance suite's client mode.

The suite (``@modelcontextprotocol/conformance``) starts a mock server for each
scenario and runs this program with the server's URL as the last argument and
the scenario's name in ``MCP_CONFORMANCE_SCENARIO``::

    python examples/conformance_client.py http://localhost:PORT/mcp

What it does per scenario:

* ``initialize``: connect (initialize + initialized) and end;
* ``tools_call``: list the tools and call ``add_numbers`` with two numbers;
* ``elicitation-sep1034-client-defaults``: call
  ``test_client_elicitation_defaults`` and accept the server's form with the
  defaults its schema gives (:func:`mcp_trio.client.elicitation_defaults`);
* ``sse-retry``: call ``test_reconnection``, whose response stream the server
  closes before answering; the client waits the ``retry`` delay the server
  set, resumes with ``GET`` + ``Last-Event-ID`` and gets the answer there;
* scenarios whose context (``MCP_CONFORMANCE_CONTEXT``, JSON) lists
  ``toolCalls``: make those calls (e.g. ``http-custom-headers``);
* ``json-schema-2020-12-preservation``: send the ``inputSchema`` of
  ``json_schema_2020_12_tool`` back, verbatim, to ``json_schema_echo``;
* ``sep-2322-client-request-state``, ``http-invalid-tool-headers``: call
  every tool the list offers, with placeholder arguments for the required
  properties (the client leaves out tools whose ``x-mcp-header``
  annotations are invalid).

* ``auth/...``: the server wants OAuth 2.1; the client authorizes with
  :class:`mcp_trio.auth.client.OAuthClient` (built by :func:`auth_for` from
  the scenario and its context: headless authorization code grant with
  dynamic registration or a Client ID Metadata Document, a pre-registered
  client, ``client_credentials``, JWT bearer or enterprise-managed grants),
  then lists the tools and calls the first one.  Where the client must
  refuse (a resource or issuer mismatch, a scope it can never get), it
  exits 1 with the reason.

Any other scenario connects and lists the tools if the server has any.  The exit status is 0 when
the scenario's calls succeeded, 1 otherwise (with the reason on stderr).

With ``MCP_CONFORMANCE_THROUGH_PROXY=1`` in the environment the client reaches the server through
``proxy(SERVER_URL)``, served in the same process (the client's side in memory, the proxy's to
the server over Streamable HTTP): the suite then checks what the proxy relays.
"""

from __future__ import annotations

import functools
import json
import os
import sys
from contextlib import AbstractAsyncContextManager
from typing import Any

import msgspec
import trio

from mcp_trio.auth.client import (
    AuthorizationCodeGrant,
    ClientCredentialsGrant,
    ClientInformation,
    ClientMetadata,
    EnterpriseGrant,
    HeadlessRedirect,
    JwtBearerGrant,
    OAuthClient,
)
from mcp_trio.client import Client, connect, connect_http, elicitation_defaults
from mcp_trio.proxy import proxy

SCENARIO_ENV = "MCP_CONFORMANCE_SCENARIO"
PROXY_ENV = "MCP_CONFORMANCE_THROUGH_PROXY"
CONTEXT_ENV = "MCP_CONFORMANCE_CONTEXT"
#: The Client ID Metadata Document URL the suite's authorization servers expect.
CIMD_URL = "https://conformance-test.local/client-metadata.json"
_PLACEHOLDERS = {"string": "x", "integer": 1, "number": 1.5, "boolean": True, "object": {}, "array": []}


async def accept_defaults(params: Any) -> dict[str, Any]:
    """Accept a form elicitation with the defaults of its schema."""
    return {"action": "accept", "content": elicitation_defaults(params.requestedSchema)}


def _text(result: Any) -> str:
    return " ".join(getattr(block, "text", "") for block in result.content)


async def _call(client: Client, tool: str, arguments: dict[str, Any]) -> None:
    tools = {t.name for t in await client.list_all_tools()}
    if tool not in tools:
        raise RuntimeError(
            f"the server offers no tool {tool!r} (it has: {', '.join(sorted(tools)) or 'none'})"
        )
    result = await client.call_tool(tool, arguments)
    print(f"{tool}: {_text(result)}", file=sys.stderr)
    if result.isError:
        raise RuntimeError(f"{tool} failed: {_text(result)}")


def placeholder_arguments(input_schema: Any) -> dict[str, Any]:
    """A value of the declared type for every required property."""
    schema = msgspec.to_builtins(input_schema) if isinstance(input_schema, msgspec.Struct) else input_schema
    properties = schema.get("properties") or {}
    return {
        name: _PLACEHOLDERS.get(properties.get(name, {}).get("type"), "x")
        for name in schema.get("required") or []
    }


def _preregistered(context: dict[str, Any], method: str | None = None) -> ClientInformation:
    return ClientInformation(
        client_id=context["client_id"],
        client_secret=context.get("client_secret"),
        token_endpoint_auth_method=method,
    )


# The conformance servers run on localhost over http: allowed for development only.
_local_client = functools.partial(OAuthClient, allow_insecure_loopback=True)


def auth_for(scenario: str, context: dict[str, Any]) -> OAuthClient | None:
    """The OAuth client an ``auth/...`` scenario calls for (``None`` for the others)."""
    if not scenario.startswith("auth/"):
        return None
    metadata = ClientMetadata(client_name="mcp-trio-conformance-client")
    if scenario in ("auth/client-credentials-basic", "auth/client-credentials-jwt"):
        return _local_client(
            grant=ClientCredentialsGrant(),
            client=_preregistered(context),
            private_key=context.get("private_key_pem"),
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
    if scenario in ("auth/enterprise-managed-authorization", "auth/cross-app-access-complete-flow"):
        grant = EnterpriseGrant(
            idp_token_endpoint=context["idp_token_endpoint"],
            id_token=context["idp_id_token"],
            idp_client_id=context.get("idp_client_id"),
        )
        return _local_client(grant=grant, client=_preregistered(context))
    if scenario == "auth/wif-jwt-bearer":
        return _local_client(
            grant=JwtBearerGrant(context["valid_jwt"]), client=_preregistered(context, "none")
        )
    grant = AuthorizationCodeGrant(HeadlessRedirect("http://localhost:3000/callback"))
    if "client_id" in context:  # pre-registration
        return _local_client(grant=grant, client=_preregistered(context), client_issuer=context.get("issuer"))
    return _local_client(grant=grant, client_metadata=metadata, client_metadata_url=CIMD_URL)


def _connect(url: str, auth: OAuthClient | None) -> AbstractAsyncContextManager[Client]:
    """The client of the scenario: to ``url``, or through a proxy to it (``PROXY_ENV``)."""
    options: dict[str, Any] = {"name": "mcp-trio-conformance-client", "version": "1.0.0"}
    if os.environ.get(PROXY_ENV) == "1":
        return connect(proxy(url, auth=auth), elicitation=accept_defaults, **options)
    return connect_http(url, elicitation=accept_defaults, auth=auth, **options)


async def run(url: str, scenario: str, context: dict[str, Any]) -> None:
    auth = auth_for(scenario, context)
    async with _connect(url, auth) as client:
        print(f"connected: {client.session.protocol_version} {client.session.peer_info}", file=sys.stderr)
        if context.get("toolCalls"):
            await client.list_all_tools()  # teaches the transport the x-mcp-header annotations
            for call in context["toolCalls"]:
                result = await client.call_tool(call["name"], call.get("arguments") or {})
                print(f"{call['name']}: {_text(result)}", file=sys.stderr)
        elif scenario == "json-schema-2020-12-preservation":
            tools = {t.name: t for t in await client.list_all_tools()}
            schema = msgspec.to_builtins(tools["json_schema_2020_12_tool"])["inputSchema"]
            await _call(client, "json_schema_echo", {"schema": schema})
        elif scenario in ("sep-2322-client-request-state", "http-invalid-tool-headers"):
            for tool in await client.list_all_tools():
                result = await client.call_tool(tool.name, placeholder_arguments(tool.inputSchema))
                print(f"{tool.name}: {_text(result)}", file=sys.stderr)
        elif scenario == "tools_call":
            await _call(client, "add_numbers", {"a": 5, "b": 3})
        elif scenario == "elicitation-sep1034-client-defaults":
            await _call(client, "test_client_elicitation_defaults", {})
        elif scenario == "sse-retry":
            await _call(client, "test_reconnection", {})
        elif auth is not None:
            tools = await client.list_all_tools()
            if tools:
                result = await client.call_tool(tools[0].name, placeholder_arguments(tools[0].inputSchema))
                print(f"{tools[0].name}: {_text(result)}", file=sys.stderr)
        elif "tools" in client.server_capabilities:
            await client.list_all_tools()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args:
        print("usage: conformance_client.py [...] SERVER_URL", file=sys.stderr)
        return 2
    scenario = os.environ.get(SCENARIO_ENV, "initialize")
    context = json.loads(os.environ.get(CONTEXT_ENV) or "{}")
    try:
        trio.run(run, args[-1], scenario, context if isinstance(context, dict) else {})
    except Exception as exc:  # the harness reads the exit status; say why on stderr
        print(f"{scenario}: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
