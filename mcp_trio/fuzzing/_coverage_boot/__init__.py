"""What ``mcp-trio fuzz --coverage`` puts into the target process: ``sitecustomize.py`` (its
directory is prepended to a Python target's ``PYTHONPATH``) and ``take_coverage.cjs`` (preloaded
into a Node target with ``NODE_OPTIONS=--require``).  Nothing here is imported by the fuzzer."""
