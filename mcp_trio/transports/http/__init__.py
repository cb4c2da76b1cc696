"""HTTP transports: Streamable HTTP (server and client) and the 2024-11-05 HTTP+SSE server.

Public modules: ``server`` (the Streamable HTTP server and its front doors:
every public name of the server side), ``h11_server`` (the lean HTTP/1.1
front door), ``asgi`` (the ASGI application and the hypercorn front door),
``client`` (the Streamable HTTP client, with the legacy HTTP+SSE fallback)
and ``legacy_sse`` (the 2024-11-05 HTTP+SSE server).
"""
