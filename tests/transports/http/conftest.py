"""Fixtures of the Streamable HTTP tests."""

from __future__ import annotations

import pytest


@pytest.fixture(params=["memory", pytest.param("redis", marks=pytest.mark.interop)])
def store_url(request: pytest.FixtureRequest) -> str | None:
    """Where the workers' store is: ``None``, one in-memory store they share;
    else a real redis-server, each worker with a connection of its own."""
    if request.param == "memory":
        return None
    return str(request.getfixturevalue("redis_server").url)
