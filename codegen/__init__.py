"""Code generator for ``mcp_trio.types.v<revision>`` (development only).

Never imported by ``mcp_trio`` at run time.  Entry point: ``python -m codegen``
(:func:`codegen.__main__.main`).  Pipeline per revision::

    schema.json --_sources--> verified bytes --_normalize--> msgspec-friendly schema
        --datamodel-code-generator--> Structs --_postprocess + _registry--> module

See ``docs/codegen.md``.
"""
