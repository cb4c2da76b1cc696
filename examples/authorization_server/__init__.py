"""The example OAuth 2.1 authorization server (tests, demos, the conformance harness).

Not part of the ``mcp_trio`` library: run it from a checkout's root with
``python -m examples.authorization_server --port 9000`` (see docs/authorization.md).
"""

from ._cli import main as main
from ._client_auth import CLIENT_ASSERTION_TYPE as CLIENT_ASSERTION_TYPE
from ._common import OAuthError as OAuthError
from ._server import AuthorizationServer as AuthorizationServer

__all__ = ["CLIENT_ASSERTION_TYPE", "AuthorizationServer", "OAuthError", "main"]
