"""OAuth 2.1 authorization for MCP over HTTP: the client side (:mod:`mcp_trio.auth.client`),
the resource-server side and an example authorization server, with the metadata documents they
share (:mod:`mcp_trio.auth._metadata`).  Import from the submodules."""
