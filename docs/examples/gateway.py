"""A gateway: first_server.py twice behind one endpoint, under the prefixes "math" and "notes",
from a configuration file (the one ``mcp-trio serve gateway.toml`` would serve).

"math" offers only its tool ``add``, with a timeout of 10 s per request; "notes" offers no tool
at all, only its resources.  Each backend runs as a subprocess, reached over one session.
"""

import json
import sys
import tempfile
from pathlib import Path

import trio

from mcp_trio import McpError
from mcp_trio.client import connect
from mcp_trio.proxy import load_gateway

HERE = json.dumps(str(Path(__file__).resolve().parent))  # (where first_server.py is)
PYTHON = json.dumps(sys.executable)

CONFIG = f"""
[gateway]
name = "front"

[servers.math]
command = {PYTHON}
args = ["first_server.py"]
cwd = {HERE}
tools = ["add"]
timeout = 10

[servers.notes]
command = {PYTHON}
args = ["first_server.py"]
cwd = {HERE}
tools = []
"""


async def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        config = Path(folder) / "gateway.toml"
        config.write_text(CONFIG)
        front = load_gateway(config)
        async with connect(front) as client:
            print("server:", client.server_info["name"], "speaking", client.protocol_version)
            print("tools:", [t.name for t in await client.list_all_tools()])
            templates = await client.list_all_resource_templates()
            print("templates:", [t.uriTemplate for t in templates])
            print("math_add:", (await client.call_tool("math_add", {"a": 2, "b": 3})).structuredContent)
            try:
                await client.call_tool("notes_add", {"a": 2, "b": 3})
            except McpError as error:  # (not among the tools "notes" offers)
                print("notes_add:", error.code, error.message)
            greeting = await client.read_resource("greeting://notes/Ada")
            print(greeting.contents[0].uri, "->", greeting.contents[0].text)  # type: ignore[union-attr]


trio.run(main)
