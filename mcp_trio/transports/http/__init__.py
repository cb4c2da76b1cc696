"""HTTP transports: Streamable HTTP (server and client) and the 2024-11-05 HTTP+SSE server.

Public modules: ``server`` (the Streamable HTTP server and its front doors),
``client`` (the Streamable HTTP client, with the legacy HTTP+SSE fallback) and
``legacy_sse`` (the 2024-11-05 HTTP+SSE server).
"""
