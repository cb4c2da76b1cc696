"""Code generator for ``mcp_trio.types.v<revision>`` (development only).

Never imported by ``mcp_trio`` at run time.  Entry points: ``python -m codegen`` in a
checkout, ``mcp-trio codegen`` anywhere (:func:`codegen.__main__.main`).  The folder is
``codegen/`` in the repository; the wheel installs it as the package ``mcp_trio_codegen``
(with ``schema/revisions.toml`` as its package data), never as a top-level ``codegen``.
Pipeline per revision::

    schema.json --_sources--> verified bytes --_normalize--> msgspec-friendly schema
        --datamodel-code-generator--> Structs --_postprocess + _registry--> module

See ``docs/codegen.md``.
"""
