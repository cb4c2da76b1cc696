"""``mcp-trio install``: real subprocesses writing into a temporary HOME (or --config), never the
real one; the entry written starts the server for real."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_trio._cli._install import config_path
from mcp_trio.client import connect_stdio
from tests._support.paths import ROOT

SERVER = ROOT / "docs" / "examples" / "first_server.py"


def install(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_trio install *argv`` with HOME (and the platform's config dirs) in ``home``."""
    env = {**os.environ, "HOME": str(home), "APPDATA": str(home / "AppData"), "USERPROFILE": str(home)}
    env.pop("XDG_CONFIG_HOME", None)
    command = [sys.executable, "-m", "mcp_trio", "install", *argv]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)


@pytest.mark.skipif(sys.platform != "linux", reason="the Linux locations (the others: the next test)")
def test_each_client_s_file_in_its_place_and_format(tmp_path: Path) -> None:
    expected = {
        "claude-desktop": (tmp_path / ".config/Claude/claude_desktop_config.json", "mcpServers"),
        "cursor": (tmp_path / ".cursor/mcp.json", "mcpServers"),
        "vscode": (tmp_path / ".config/Code/User/mcp.json", "servers"),
    }
    for client, (path, key) in expected.items():
        done = install(client, str(SERVER), home=tmp_path)
        assert done.returncode == 0, done.stderr
        assert f"'first_server' added to {path}" in done.stdout
        written = json.loads(path.read_text())
        assert list(written) == [key]
        server = written[key]["first_server"]
        assert server["command"] == os.path.abspath(sys.executable)
        assert server["args"] == ["-m", "mcp_trio", "serve", str(SERVER)]
        assert ("type" in server) is (client == "vscode") and server.get("type", "stdio") == "stdio"
    workspace = tmp_path / "project"
    done = install("vscode", str(SERVER), "--workspace", str(workspace), home=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "first_server" in json.loads((workspace / ".vscode/mcp.json").read_text())["servers"]


def test_the_locations_on_each_platform(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(Path, "home", lambda: tmp_path)
    monkeypatch.setenv("APPDATA", str(tmp_path / "Roaming"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    where = {
        "darwin": (
            tmp_path / "Library/Application Support/Claude/claude_desktop_config.json",
            tmp_path / "Library/Application Support/Code/User/mcp.json",
        ),
        "win32": (
            tmp_path / "Roaming/Claude/claude_desktop_config.json",
            tmp_path / "Roaming/Code/User/mcp.json",
        ),
        "linux": (tmp_path / "xdg/Claude/claude_desktop_config.json", tmp_path / "xdg/Code/User/mcp.json"),
    }
    for platform, (claude, vscode) in where.items():
        monkeypatch.setattr(sys, "platform", platform)
        assert config_path("claude-desktop") == claude
        assert config_path("vscode") == vscode
        assert config_path("cursor") == tmp_path / ".cursor/mcp.json"
        assert config_path("vscode", "ws") == Path("ws").absolute() / ".vscode/mcp.json"


async def test_the_entry_written_starts_the_server(tmp_path: Path) -> None:
    config = tmp_path / "claude.json"
    done = install(
        "claude-desktop", str(SERVER), "--config", str(config), "--env", "GREETING=hi", home=tmp_path
    )
    assert done.returncode == 0, done.stderr
    server = json.loads(config.read_text())["mcpServers"]["first_server"]
    assert server["env"] == {"GREETING": "hi"}
    environment = {**os.environ, **server["env"]}
    async with connect_stdio(server["command"], *server["args"], env=environment, cwd="/") as client:
        assert [tool.name for tool in (await client.list_tools()).tools] == ["add"]
        result = await client.call_tool("add", {"a": 2, "b": 3})
    assert result.structuredContent == {"result": 5}


def test_merging_keeps_other_servers_and_refuses_a_same_named_entry(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    other = {"command": "npx", "args": ["-y", "other"], "env": {"TOKEN": "keep-me"}}
    config.write_text(json.dumps({"mcpServers": {"other": other}, "theme": "dark"}))
    config.chmod(0o640)
    done = install("cursor", f"{SERVER}:server", "--config", str(config), "--name", "calc", home=tmp_path)
    assert done.returncode == 0, done.stderr
    written = json.loads(config.read_text())
    assert written["theme"] == "dark" and written["mcpServers"]["other"] == other
    assert written["mcpServers"]["calc"]["args"][-1] == f"{SERVER}:server"
    assert stat.S_IMODE(config.stat().st_mode) == 0o640  # (its mode kept)
    again = install("cursor", f"{SERVER}:server", "--config", str(config), "--name", "calc", home=tmp_path)
    assert again.returncode == 0 and "already in" in again.stdout and "nothing to do" in again.stdout
    clash = install("cursor", str(SERVER), "--config", str(config), "--name", "other", home=tmp_path)
    assert clash.returncode == 2
    assert f"{config} already has a server named 'other': --force replaces it" in clash.stderr
    assert json.loads(config.read_text()) == written  # untouched
    forced = install(
        "cursor", str(SERVER), "--config", str(config), "--name", "other", "--force", home=tmp_path
    )
    assert forced.returncode == 0, forced.stderr
    assert json.loads(config.read_text())["mcpServers"]["other"]["args"][-1] == str(SERVER)


def test_dry_run_writes_nothing_and_redacts_the_environment(tmp_path: Path) -> None:
    config = tmp_path / "sub" / "mcp.json"
    done = install(
        "vscode", str(SERVER), "--config", str(config), "--env", "API_KEY=s3cret", "--dry-run", home=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert not config.parent.exists()
    printed = json.loads(done.stdout)
    assert printed["servers"]["first_server"]["env"] == {"API_KEY": "<redacted>"}
    assert "s3cret" not in done.stdout + done.stderr
    assert f"{config} would be written as above (environment values redacted)" in done.stderr
    # written for real: the secret is in the file only, which only its owner may read
    done = install("vscode", str(SERVER), "--config", str(config), "--env", "API_KEY=s3cret", home=tmp_path)
    assert done.returncode == 0 and "s3cret" not in done.stdout + done.stderr
    assert json.loads(config.read_text())["servers"]["first_server"]["env"] == {"API_KEY": "s3cret"}
    assert stat.S_IMODE(config.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{\n  // a comment\n}", "is not plain JSON"),
        ("[1]", "holds a JSON list, not an object"),
        ('{"mcpServers": []}', "'mcpServers' is a JSON list, not an object"),
    ],
)
def test_a_file_it_cannot_merge_into_is_left_alone(tmp_path: Path, content: str, message: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(content)
    done = install("cursor", str(SERVER), "--config", str(config), home=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert config.read_text() == content


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["cursor", "nosuch.py"], "no such file: nosuch.py (give the server's Python file)"),
        (["cursor", str(SERVER), "--env", "NOEQUALS"], "--env takes KEY=VALUE, not 'NOEQUALS'"),
        (["cursor", str(SERVER), "--workspace", "."], "--workspace is for vscode only"),
        (["cursor", str(SERVER), "--name", ""], "--name must not be empty"),
        (["zed", str(SERVER)], "invalid choice: 'zed'"),
    ],
)
def test_usage_errors_exit_2(tmp_path: Path, argv: list[str], message: str) -> None:
    done = install(*argv, "--config", str(tmp_path / "c.json"), home=tmp_path)
    assert done.returncode == 2 and message in done.stderr
    assert not (tmp_path / "c.json").exists()


def test_env_file_with_env_over_it(tmp_path: Path) -> None:
    secrets = tmp_path / ".env"
    secrets.write_text("# for the server\nexport API_KEY='s3cret'\n\nREGION = eu\nMODE=\"a b\"\n")
    config = tmp_path / "c.json"
    argv = ["cursor", str(SERVER), "--config", str(config), "--env-file", str(secrets), "--env", "MODE=x"]
    done = install(*argv, home=tmp_path)
    assert done.returncode == 0, done.stderr
    env = json.loads(config.read_text())["mcpServers"]["first_server"]["env"]
    assert env == {"API_KEY": "s3cret", "REGION": "eu", "MODE": "x"}
    secrets.write_text("API_KEY=fine\nthis line leaks nothing\n")
    done = install(
        "cursor", str(SERVER), "--config", str(tmp_path / "d.json"), "--env-file", str(secrets), home=tmp_path
    )
    assert done.returncode == 2 and f"--env-file: {secrets}, line 2: not KEY=VALUE" in done.stderr
    assert "leaks" not in done.stderr and not (tmp_path / "d.json").exists()
    done = install("cursor", str(SERVER), "--env-file", str(tmp_path / "none"), home=tmp_path)
    assert done.returncode == 2 and "--env-file: cannot read" in done.stderr
