"""``mcp-trio list | call | inspect``: real subprocesses against the everything server."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import partial
from pathlib import Path

import pytest
import trio

from examples.everything import RED_PIXEL_PNG
from mcp_trio.server import Server
from tests._support.cli import serving_everything_over_http
from tests._support.http_client import _certificates
from tests._support.paths import ROOT

EVERYTHING = f"{sys.executable} examples/everything.py"


def cli(*argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """``python -m mcp_trio *argv`` in the repository, output captured."""
    command = [sys.executable, "-m", "mcp_trio", *argv]
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=timeout)


def test_list_over_stdio_as_text_and_json() -> None:
    text = cli("list", EVERYTHING)
    assert text.returncode == 0, text.stderr
    assert "Tools (" in text.stdout and "  greet(name: string)  - Greets by name" in text.stdout
    assert "test://static-text  static-text (text/plain)" in text.stdout
    assert "Resource templates (1):\n  test://template/{id}/data" in text.stdout
    assert "test_prompt_with_arguments(arg1, arg2)" in text.stdout
    listing = json.loads(cli("list", "--json", "--", sys.executable, "examples/everything.py").stdout)
    assert set(listing) == {"tools", "resources", "resourceTemplates", "prompts"}
    greet = next(tool for tool in listing["tools"] if tool["name"] == "greet")
    assert greet["inputSchema"]["properties"]["name"]["type"] == "string"
    assert [t["uriTemplate"] for t in listing["resourceTemplates"]] == ["test://template/{id}/data"]
    assert "test_simple_prompt" in [p["name"] for p in listing["prompts"]]


def test_call_converts_arguments_by_the_schema() -> None:
    # "42" stays a string for a string property; "3" becomes a number for an integer one
    done = cli("call", EVERYTHING, "greet", "name=42")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"content": [{"type": "text", "text": "Hello, 42!"}]}
    done = cli(
        "call", "test_custom_headers", "region=eu", "priority=3", "--json", '{"query": "q", "region": "x"}',
        "--", sys.executable, "examples/everything.py",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["content"][0]["text"] == "region=eu, priority=3, query=q"


def test_call_a_failing_tool_exits_1_with_the_result() -> None:
    done = cli("call", EVERYTHING, "test_error_handling")
    assert done.returncode == 1
    result = json.loads(done.stdout)
    assert result["isError"] is True and "intentionally returns an error" in result["content"][0]["text"]
    assert "the tool 'test_error_handling' reported an error (isError)" in done.stderr


def test_call_an_unknown_tool_exits_1_with_the_json_rpc_error() -> None:
    done = cli("call", EVERYTHING, "no_such_tool", "a=1")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == -32602
    assert "the server answered with error -32602" in done.stderr and "no_such_tool" in done.stderr


def test_inspect_over_stdio() -> None:
    done = cli("inspect", EVERYTHING)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Server: mcp-trio everything server 0.1.0\nProtocol revision: ")
    assert "  tools (listChanged=true)" in done.stdout and "Instructions:\n  Fixture server" in done.stdout
    info = json.loads(cli("inspect", "--json", EVERYTHING).stdout)
    assert info["serverInfo"]["name"] == "mcp-trio-everything"
    assert info["protocolVersion"] and "tools" in info["capabilities"]
    assert info["instructions"].startswith("Fixture server")


def test_every_command_over_streamable_http() -> None:
    with serving_everything_over_http() as url:
        listing = cli("list", "--json", url, "--header", "X-Trace: 1")
        assert listing.returncode == 0, listing.stderr
        assert "greet" in [tool["name"] for tool in json.loads(listing.stdout)["tools"]]
        done = cli("call", url, "greet", "name=web")
        assert done.returncode == 0 and "Hello, web!" in done.stdout, done.stderr
        failed = cli("call", url, "test_error_handling")
        assert failed.returncode == 1 and json.loads(failed.stdout)["isError"] is True
        unknown = cli("call", url, "no_such_tool")
        assert unknown.returncode == 1 and json.loads(unknown.stdout)["error"]["code"] == -32602
        inspected = cli("inspect", url)
        assert inspected.returncode == 0 and "Server: mcp-trio everything server" in inspected.stdout


async def test_list_and_call_over_websocket() -> None:
    server = Server("ws-target", "1")

    @server.tool
    async def shout(text: str) -> str:
        return text.upper()

    async with trio.open_nursery() as nursery:
        urls = await nursery.start(partial(server.serve_websocket, "127.0.0.1", 0, front_door="wsproto"))
        command = [sys.executable, "-m", "mcp_trio", "list", urls[0]]
        with trio.fail_after(30):
            listed = await trio.run_process(command, cwd=ROOT, capture_stdout=True, capture_stderr=True)
            command[3:] = ["call", urls[0], "shout", "text=hey"]
            called = await trio.run_process(command, cwd=ROOT, capture_stdout=True, capture_stderr=True)
        assert listed.stdout.decode().startswith("Tools (1):\n  shout(text: string)\n")
        assert json.loads(called.stdout)["content"] == [{"type": "text", "text": "HEY"}]
        nursery.cancel_scope.cancel()


def test_a_target_that_cannot_start_exits_2() -> None:
    done = cli("list", f"{sys.executable} nosuch.py")
    assert done.returncode == 2
    assert f"cannot start '{sys.executable} nosuch.py': exited with code 2 before initialize" in done.stderr
    done = cli("inspect", "--", "no-such-program-here", "x")
    assert done.returncode == 2
    assert "cannot start 'no-such-program-here x': No such file or directory" in done.stderr
    done = cli("list", "examples/everything.py")  # a Python file is not a program
    assert done.returncode == 2
    assert "(to run a Python file: 'python examples/everything.py')" in done.stderr


def test_an_unreachable_url_exits_2() -> None:
    with serving_everything_over_http() as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
    # the server is gone: nothing listens on its port any more
    for scheme in ("http", "ws"):
        target = f"{scheme}://127.0.0.1:{port}/mcp"
        done = cli("list", target)
        assert done.returncode == 2
        assert f"mcp-trio list: {target}: cannot connect to 127.0.0.1:{port}" in done.stderr
        assert done.stdout == ""


def test_timeout_exits_2() -> None:
    done = cli(
        "list", "--timeout", "1", "--", sys.executable, "-c", "import time; time.sleep(30)", timeout=20
    )
    assert done.returncode == 2
    assert "no answer within 1 s (--timeout)" in done.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["list"], "give a TARGET"),
        (["call", EVERYTHING], "give the name of the tool to call"),
        (["call", EVERYTHING, "greet", "name"], "tool arguments are KEY=VALUE, not 'name'"),
        (["call", EVERYTHING, "greet", "--json", "[1]"], "--json takes a JSON object, not list"),
        (["call", EVERYTHING, "greet", "--json", "{"], "--json is not valid JSON"),
        (["list", EVERYTHING, "extra"], "unexpected arguments: extra"),
        (["list", "--header", "NoColon", "http://127.0.0.1:1/mcp"], "--header takes 'NAME: VALUE'"),
        (["list", "--header", "A: b", EVERYTHING], "--header applies to URL targets only"),
        (["list", "--timeout", "0", EVERYTHING], "--timeout must be positive"),
        (["inspect", "--"], "give the command to start after '--'"),
    ],
)
def test_usage_errors_exit_2(argv: list[str], message: str) -> None:
    done = cli(*argv)
    assert done.returncode == 2
    assert message in done.stderr and "usage: mcp-trio" in done.stderr


RAW_SERVER = """
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                  "serverInfo": {"name": "raw", "version": "0"}}
    elif msg["method"] == "tools/list":
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        result = {"tools": [{"name": "count", "inputSchema": {"type": "object"}, "outputSchema": schema}]}
    else:
        result = {"content": [{"type": "text", "text": "many"}], "structuredContent": {"n": "many"}}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_a_result_that_breaks_its_output_schema_exits_1(tmp_path: Path) -> None:
    pytest.importorskip("jsonschema_rs")
    (tmp_path / "raw.py").write_text(RAW_SERVER)
    done = cli("call", "count", "--", sys.executable, str(tmp_path / "raw.py"))
    assert done.returncode == 1
    assert json.loads(done.stdout)["structuredContent"] == {"n": "many"}  # shown all the same
    assert "the server's answer is invalid: the structured content of tool count" in done.stderr


def test_a_reader_that_goes_away_gets_no_traceback() -> None:
    command = [sys.executable, "-m", "mcp_trio", "list", EVERYTHING]
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE) as proc:
        assert proc.stdout is not None and proc.stderr is not None
        proc.stdout.close()  # as `| head -0` would
        stderr = proc.stderr.read()
        assert proc.wait(timeout=60) == 1
    assert b"Traceback" not in stderr, stderr.decode()


HOSTILE = [sys.executable, "tests/programs/hostile_server.py"]


@pytest.mark.parametrize("as_json", [False, True])
def test_a_hostile_server_cannot_crash_list_or_reach_the_terminal(as_json: bool) -> None:
    """A schema that is not JSON Schema, escape sequences in names and texts, pages that never
    end: one line on stderr for the bound, the escapes written visibly, nothing raw."""
    flags = ["--json"] if as_json else []
    done = cli("list", "--max-items", "250", *flags, "--", *HOSTILE, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.strip() == "mcp-trio list: more tools than 250: the first 250 shown (--max-items)"
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout and "\u202e" not in done.stdout
    assert "\\u001b]52;c;aGVsbG8=\\u0007" in done.stdout  # (visible, as an escape)
    if as_json:
        tools = json.loads(done.stdout)["tools"]
        assert len(tools) == 250 and tools[0]["name"] == "tool0-0\x1b]52;c;aGVsbG8=\x07"  # (data kept)
    else:
        lines = done.stdout.splitlines()
        assert lines[0] == "Tools (250):" and len(lines) == 251
        assert lines[1].startswith("  tool0-0\\u001b]52;c;aGVsbG8=\\u0007(x?, y?)  - fine\\u202egnp.exe")


def test_inspect_shows_a_hostile_server_s_texts_visibly() -> None:
    done = cli("inspect", "--", *HOSTILE, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
    assert "Server: hostile\\u001b[2J 1" in done.stdout
    assert "  read me\\u001b]52;c;aGVsbG8=\\u0007\n  second line" in done.stdout


def test_an_error_message_from_a_hostile_server_is_shown_visibly() -> None:
    done = cli("call", "nope", "--", *HOSTILE, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "\x1b" not in done.stderr and "\x1b" not in done.stdout
    assert done.stderr.strip() == "mcp-trio call: the server answered with error -32601: no\\u001b[2J"
    assert json.loads(done.stdout)["error"]["message"] == "no\x1b[2J"  # (the JSON keeps the data)


def test_read_prints_texts_and_says_what_a_blob_is(tmp_path: Path) -> None:
    done = cli("read", EVERYTHING, "test://static-text")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "This is the content of the static text resource.\n"
    done = cli("read", EVERYTHING, "test://static-binary")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "[binary: 70 bytes (image/png); --output FILE writes it]\n"
    done = cli("read", EVERYTHING, "test://static-binary", "--output", str(tmp_path / "pixel.png"))
    assert done.returncode == 0 and done.stdout == ""
    assert (tmp_path / "pixel.png").read_bytes() == RED_PIXEL_PNG
    assert f"70 bytes written to {tmp_path / 'pixel.png'}" in done.stderr
    read = json.loads(cli("read", "--json", EVERYTHING, "test://template/42/data").stdout)
    assert read["contents"][0]["uri"] == "test://template/42/data"
    assert json.loads(read["contents"][0]["text"])["id"] == "42"


def test_read_an_unknown_resource_exits_1() -> None:
    done = cli("read", EVERYTHING, "test://nope")
    assert done.returncode == 1 and done.stdout == ""
    assert "the server answered with error -32602: Resource not found: test://nope" in done.stderr


def test_prompt_renders_messages_readably() -> None:
    done = cli("prompt", EVERYTHING, "test_prompt_with_arguments", "arg1=a b", "arg2=42")
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "Description: A prompt with required arguments (arg1 and arg2).\n\n"
        "[user]\nPrompt with arguments: arg1='a b', arg2='42'\n"
    )
    done = cli("prompt", EVERYTHING, "test_prompt_with_image")
    assert "[user]\n[image: 70 bytes, image/png]\n\n[user]\nPlease analyze the image above." in done.stdout
    done = cli("prompt", EVERYTHING, "test_prompt_with_embedded_resource", "resourceUri=test://x")
    assert "[user]\n[resource test://x]\n" in done.stdout
    got = json.loads(cli("prompt", "--json", EVERYTHING, "test_simple_prompt").stdout)
    assert got["messages"][0]["role"] == "user" and got["messages"][0]["content"]["type"] == "text"
    done = cli("prompt", EVERYTHING, "nope")
    assert done.returncode == 1 and "the server answered with error -32602" in done.stderr


def test_read_and_prompt_over_streamable_http() -> None:
    with serving_everything_over_http() as url:
        done = cli("read", url, "test://static-text")
        assert done.returncode == 0 and done.stdout.startswith("This is the content"), done.stderr
        done = cli("prompt", url, "test_simple_prompt")
        assert done.returncode == 0 and "[user]\nThis is a simple prompt" in done.stdout, done.stderr


@pytest.mark.parametrize("transport", ["--http", "--ws"])
def test_tls_targets_with_cacert_or_insecure(tmp_path: Path, transport: str) -> None:
    _certificates(tmp_path)  # ca.pem, cert.pem and key.pem for 127.0.0.1
    tls = ["--certfile", str(tmp_path / "cert.pem"), "--keyfile", str(tmp_path / "key.pem")]
    if transport == "--ws":
        tls += ["--front-door", "hypercorn"]
    with serving_everything_over_http(*tls, transport=transport) as url:
        assert url.startswith(("https://", "wss://"))
        untrusted = cli("list", url)
        assert untrusted.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in untrusted.stderr
        trusted = cli("call", "--cacert", str(tmp_path / "ca.pem"), url, "greet", "name=tls")
        assert trusted.returncode == 0 and "Hello, tls!" in trusted.stdout, trusted.stderr
        assert trusted.stderr == ""
        blind = cli("read", "--insecure", url, "test://static-text")
        assert blind.returncode == 0 and blind.stdout.startswith("This is the content"), blind.stderr
        assert "warning: --insecure: the server's TLS certificate is not verified" in blind.stderr
        other_ca = tmp_path / "other"
        other_ca.mkdir()
        _certificates(other_ca)
        wrong = cli("inspect", "--cacert", str(other_ca / "ca.pem"), url)
        assert wrong.returncode == 2 and "CERTIFICATE_VERIFY_FAILED" in wrong.stderr


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["list", "--cacert", "/no/such.pem", "https://127.0.0.1:1/mcp"],
            "--cacert: cannot load /no/such.pem",
        ),
        (["list", "--insecure", "--cacert", "x.pem", "https://h/mcp"], "--cacert and --insecure contradict"),
        (
            ["list", "--insecure", "http://127.0.0.1:1/mcp"],
            "--insecure applies to https:// and wss:// URLs only",
        ),
        (["list", "--insecure", EVERYTHING], "--insecure applies to https:// and wss:// URLs only, not to a"),
        (["read", EVERYTHING], "give the URI of the resource to read"),
        (["read", EVERYTHING, "a://b", "c"], "unexpected arguments: c"),
        (["prompt", EVERYTHING], "give the prompt's name"),
        (["prompt", EVERYTHING, "p", "novalue"], "prompt arguments are KEY=VALUE, not 'novalue'"),
    ],
)
def test_read_prompt_and_tls_usage_errors_exit_2(argv: list[str], message: str) -> None:
    done = cli(*argv)
    assert done.returncode == 2
    assert message in done.stderr and "usage: mcp-trio" in done.stderr


HOSTILE_CONTENTS = r"""
import json, sys
for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    if msg["method"] == "initialize":
        result = {"protocolVersion": "2025-06-18", "capabilities": {"resources": {}, "prompts": {}},
                  "serverInfo": {"name": "raw", "version": "0"}}
    elif msg["method"] == "resources/read":
        result = {"contents": [{"uri": "x://a\u001b[2J", "text": "one\ttwo\nclip\u001b]52;c;aGVsbG8=\u0007"},
                               {"uri": "x://b", "blob": "AAEC", "mimeType": "app/\u202ex"}]}
    else:
        result = {"description": "fine\u202egnp.exe",
                  "messages": [{"role": "user", "content": {"type": "text", "text": "hi\u001b[2J"}}]}
    print(json.dumps({"jsonrpc": "2.0", "id": msg["id"], "result": result}), flush=True)
"""


def test_read_and_prompt_show_a_hostile_server_s_texts_visibly(tmp_path: Path) -> None:
    (tmp_path / "raw.py").write_text(HOSTILE_CONTENTS)
    server = ["--", sys.executable, str(tmp_path / "raw.py")]
    done = cli("read", "x://a", *server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (
        "--- x://a\\u001b[2J\none\ttwo\nclip\\u001b]52;c;aGVsbG8=\\u0007\n"  # (tab and newline kept)
        "--- x://b (app/\\u202ex)\n[binary: 3 bytes (app/\\u202ex); --output FILE writes it]\n"
    )
    done = cli("read", "x://a", "--output", str(tmp_path / "out"), *server)
    assert done.returncode == 2 and "x://a has 2 contents: --output writes one" in done.stderr
    done = cli("prompt", "p", *server)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Description: fine\\u202egnp.exe\n\n[user]\nhi\\u001b[2J\n"
