"""Package discovery only (everything else is in pyproject.toml).

The code generator lives in the repository's top-level ``codegen/`` folder but is
installed as ``mcp_trio_codegen`` (a top-level ``codegen`` package would clash with
another project's), with ``schema/revisions.toml`` as its package data
(``mcp_trio_codegen/schema/revisions.toml``).
"""

from setuptools import find_packages, setup

setup(
    packages=[
        *find_packages(include=["mcp_trio", "mcp_trio.*"]),
        "mcp_trio_codegen",
        "mcp_trio_codegen.schema",
    ],
    package_dir={"mcp_trio_codegen": "codegen", "mcp_trio_codegen.schema": "schema"},
    package_data={
        "mcp_trio": ["py.typed"],
        "mcp_trio.fuzzing._coverage_boot": ["*.cjs"],
        "mcp_trio_codegen.schema": ["revisions.toml"],
    },
)
