"""The trio engine (private): runs a sans-IO ``SessionCore`` over a transport.

``_session`` holds ``Session`` (input, dispatch, writer, lifecycle), whose other
methods live in mixins: ``_handlers`` (running the requests we receive, the
reader relay), ``_outgoing`` (what we send) and ``_handshake`` (a client's
connect); ``_context`` holds the ``RequestContext`` a handler sees and
``_common`` what they share.  Only this package imports both ``mcp_trio._core``
and trio; it never imports ``server`` or ``client``.  See docs/engine.md.
"""
