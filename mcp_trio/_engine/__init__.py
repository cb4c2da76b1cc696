"""The trio engine (private): runs a sans-IO ``SessionCore`` over a transport.

``_session`` holds ``Session`` (reader, writer, outgoing requests, lifecycle) and
``_context`` the ``RequestContext`` a handler sees.  Only this package imports both
``mcp_trio._core`` and trio; it never imports ``server`` or ``client``.
"""
