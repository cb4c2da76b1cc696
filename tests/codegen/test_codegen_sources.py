"""codegen/_sources.py: locating, downloading and verifying the pinned schemas."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from codegen.__main__ import main
from codegen._sources import (
    ENV_SCHEMA_DIR,
    SchemaSourceError,
    load_pins,
    locate_schemas,
    resolve_schema_dir,
    sha256_hex,
)
from tests._support.types import REVISIONS, require_schema_dir


def _offline(url: str) -> bytes:
    raise OSError(f"network is unreachable ({url})")


def test_pins_cover_every_revision() -> None:
    pins = load_pins()
    assert list(pins) == list(REVISIONS)
    for rev, pin in pins.items():
        assert len(pin.sha256) == 64
        assert pin.url.endswith(f"/{pin.commit}/schema/{rev}/schema.json")
        assert pin.url.startswith("https://raw.githubusercontent.com/modelcontextprotocol/")


def test_pins_match_the_schema_dir() -> None:
    schema_dir = require_schema_dir()
    found = locate_schemas(load_pins().values(), schema_dir=schema_dir, download=_offline)
    assert set(found) == set(REVISIONS)
    for rev, schema in found.items():
        assert schema.sha256 == sha256_hex((schema_dir / rev / "schema.json").read_bytes())


def test_missing_schema_dir_gives_clear_error(tmp_path: Path) -> None:
    bogus = tmp_path / "no-such-dir"
    with pytest.raises(SchemaSourceError) as info:
        locate_schemas(load_pins().values(), schema_dir=bogus, download=_offline)
    message = str(info.value)
    assert str(bogus) in message
    assert "2024-11-05" in message and "2026-07-28" in message
    # The three ways to supply the schemas.
    assert "--schema-dir" in message
    assert ENV_SCHEMA_DIR in message
    assert "download" in message


def test_missing_file_in_schema_dir_names_it(tmp_path: Path) -> None:
    (tmp_path / "2024-11-05").mkdir()
    with pytest.raises(SchemaSourceError) as info:
        locate_schemas(load_pins().values(), schema_dir=tmp_path, download=_offline)
    assert f"missing {tmp_path / '2024-11-05' / 'schema.json'}" in str(info.value)


def test_no_schema_dir_and_no_network(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(SchemaSourceError) as info:
        locate_schemas(load_pins().values(), schema_dir=None, cache_dir=cache, download=_offline)
    message = str(info.value)
    assert "could not download revision 2025-11-25" in message
    assert "network is unreachable" in message
    assert "--schema-dir" in message and ENV_SCHEMA_DIR in message
    assert str(cache) in message
    assert not cache.exists()  # nothing half-written


def test_download_fills_the_cache_once(tmp_path: Path) -> None:
    schema_dir = require_schema_dir()
    pins = load_pins()
    urls = {pin.url: pin.revision for pin in pins.values()}
    calls: list[str] = []

    def fake_download(url: str) -> bytes:
        calls.append(url)
        return (schema_dir / urls[url] / "schema.json").read_bytes()

    cache = tmp_path / "cache"
    first = locate_schemas(pins.values(), schema_dir=None, cache_dir=cache, download=fake_download)
    assert len(calls) == len(pins)
    for pin in pins.values():
        assert (cache / pin.commit / pin.revision / "schema.json").is_file()
    second = locate_schemas(pins.values(), schema_dir=None, cache_dir=cache, download=_offline)
    assert {r: s.sha256 for r, s in first.items()} == {r: s.sha256 for r, s in second.items()}
    assert len(calls) == len(pins)


def test_downloaded_file_with_wrong_hash_is_rejected(tmp_path: Path) -> None:
    pins = load_pins()
    cache = tmp_path / "cache"
    with pytest.raises(SchemaSourceError, match="sha256 mismatch"):
        locate_schemas(pins.values(), schema_dir=None, cache_dir=cache, download=lambda url: b"{}")
    assert not any(cache.rglob("schema.json"))


def test_sha256_mismatch_is_detected(tmp_path: Path) -> None:
    schema_dir = require_schema_dir()
    pins = load_pins()
    rev = "2025-06-18"
    target = tmp_path / rev / "schema.json"
    target.parent.mkdir()
    data = bytearray((schema_dir / rev / "schema.json").read_bytes())
    data[100] = ord(" ") if data[100] != ord(" ") else ord("\t")  # alter one byte
    target.write_bytes(bytes(data))
    with pytest.raises(SchemaSourceError) as info:
        locate_schemas([pins[rev]], schema_dir=tmp_path, download=_offline)
    message = str(info.value)
    assert f"sha256 mismatch for revision {rev}" in message
    assert pins[rev].sha256 in message
    assert sha256_hex(bytes(data)) in message


def test_valid_copy_in_another_dir_is_accepted(tmp_path: Path) -> None:
    schema_dir = require_schema_dir()
    pins = load_pins()
    rev = "2024-11-05"
    (tmp_path / rev).mkdir()
    shutil.copy(schema_dir / rev / "schema.json", tmp_path / rev / "schema.json")
    found = locate_schemas([pins[rev]], schema_dir=tmp_path, download=_offline)
    assert found[rev].sha256 == pins[rev].sha256


def test_resolve_schema_dir_precedence(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    shared = tmp_path / "shared" / "mcp-schema"
    env = {ENV_SCHEMA_DIR: str(tmp_path / "env")}
    assert resolve_schema_dir("cli", environ=env, project_root=project) == Path("cli")
    assert resolve_schema_dir(None, environ=env, project_root=project) == tmp_path / "env"
    assert resolve_schema_dir(None, environ={}, project_root=project) is None
    shared.mkdir(parents=True)
    assert resolve_schema_dir(None, environ={}, project_root=project) == shared


def test_cli_error_is_clean(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["--schema-dir", str(tmp_path / "nowhere"), "--no-download", "-q"])
    assert code != 0
    err = capsys.readouterr().err
    assert err.startswith("codegen: error: ")
    assert "Traceback" not in err
    assert "--schema-dir" in err and ENV_SCHEMA_DIR in err


def test_cli_rejects_unknown_revision(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--revision", "1999-01-01", "--check"]) != 0
    assert "not pinned" in capsys.readouterr().err


def test_cli_missing_schema_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "--revision",
            "x",
            "--schema",
            str(tmp_path / "nope.json"),
            "--output",
            str(tmp_path / "x.py"),
        ]
    )
    assert code != 0
    assert "does not exist" in capsys.readouterr().err
