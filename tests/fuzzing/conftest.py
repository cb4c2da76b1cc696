"""Shared fixtures of the fuzzing tests: a server of ours served over Streamable HTTP."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests._support.fuzzing import EVERYTHING, serve_http


@pytest.fixture(scope="module")
def everything_http(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with serve_http(EVERYTHING, tmp_path_factory.mktemp("serve") / "stderr.txt") as url:
        yield url
