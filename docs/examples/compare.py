"""Call the comparison server with mcp-trio's client: python compare.py [SERVER_FILE [PYTHON]].

The same calls, and the same output, whichever of trio_server.py, sdk_server.py or
fastmcp_server.py is given (trio_server.py by default), run by PYTHON (by default this
interpreter; the other libraries may live in an environment of their own).
"""

import sys

import trio

from mcp_trio.client import connect_stdio


async def main(server_file: str, python: str) -> None:
    async with connect_stdio(python, server_file) as client:
        print("tools:", sorted(tool.name for tool in await client.list_all_tools()))
        result = await client.call_tool("add", {"a": 2, "b": 3})
        print("add:", result.content[0].text, result.structuredContent)
        result = await client.call_tool("add", {"a": 2, "b": "three"})
        print("add with a string: isError", result.isError)

        steps = []

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            steps.append(int(progress))

        result = await client.call_tool("count", {"n": 3}, on_progress=on_progress)
        print("count:", result.content[0].text, "progress", steps)

        templates = await client.list_all_resource_templates()
        print("templates:", [t.uriTemplate for t in templates])
        read = await client.read_resource("greeting://Ada")
        print("read:", read.contents[0].text)

        prompt = await client.get_prompt("review", {"code": "x = 1"})
        print("prompt:", prompt.messages[0].role, repr(prompt.messages[0].content.text))


server_file = sys.argv[1] if len(sys.argv) > 1 else "trio_server.py"
python = sys.argv[2] if len(sys.argv) > 2 else sys.executable
trio.run(main, server_file, python)
