"""The trio engine (private): runs a sans-IO ``SessionCore`` over a transport.

``_session`` holds ``Session``, an orchestrator over collaborators that own their state:
``_writer`` (the outbox and the writer task), ``_handlers`` (running the requests we
receive) with ``_queue`` (those waiting for a slot), ``_reader`` (the input and the reader
relay), ``_outgoing`` (what we send), ``_notifications`` (the user's notification handlers)
and ``_handshake`` (a client's connect); ``_context`` holds the ``RequestContext`` a handler
sees, ``_idle`` the expiry of hosted sessions' idle handler tasks and ``_common`` what they
share.  Only this package imports both ``mcp_trio._core`` and trio; it never imports
``server`` or ``client``.  See docs/engine.md.
"""
