"""HTTP transports: Streamable HTTP (server and client) and the 2024-11-05 HTTP+SSE server.

Public modules and packages:

* ``server``: the Streamable HTTP server, every public name of the server
  side (front doors included).  Inside: ``_planner`` decides what each
  request calls for, without I/O (its docstring has the rules);
  ``_endpoint`` (:class:`StreamableHTTP`) runs the plans; ``_streams`` and
  ``_table`` hold a session's streams and the session table, ``_standalone``
  (``Streaming``) how answers go out (a POST's, the GET stream, resumption);
  ``_sharing`` and ``_follow`` share sessions between workers through a store.
* ``doors``: the web servers in front: ``doors.h11`` (the lean HTTP/1.1
  door, parsing with h11 or llhttp) and ``doors.asgi`` (the ASGI application
  and hypercorn); ``FRONT_DOORS`` names them.
* ``client``: the Streamable HTTP client, with the legacy HTTP+SSE fallback.
* ``legacy_sse``: the 2024-11-05 HTTP+SSE server.

What several of them share sits here: ``_request`` (the interfaces between
endpoints and doors), ``_replies``, ``_sse``, ``_headers`` and ``_bus`` (what
workers sharing sessions say to each other).  ``h11_server`` and ``asgi``
are deprecated aliases of ``doors.h11`` and ``doors.asgi``.
"""
