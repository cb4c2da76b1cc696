"""Prompts and completions."""

import trio

from mcp_trio import open_memory_transport_pair
from mcp_trio.client import open_client
from mcp_trio.server import AssistantMessage, Message, Server, UserMessage

server = Server("prompts-demo", "1.0")
LANGUAGES = ["Python", "Pascal", "Perl", "Rust", "Ruby"]


@server.prompt
def review(code: str, language: str = "Python") -> str:
    """Review a piece of code."""
    return f"Review this {language} code for bugs and style:\n\n{code}"


@server.prompt(title="Explain, then quiz")
def teach(topic: str) -> list[Message]:
    """A conversation to start from: messages with roles."""
    return [
        UserMessage(f"Explain {topic} simply."),
        AssistantMessage("Gladly. A quiz after?"),
        UserMessage("Yes, three questions."),
    ]


@server.completion("review", "language")
def complete_language(value: str, context_arguments: dict) -> list[str]:
    """Suggestions for review's language argument, from what is typed so far."""
    return [name for name in LANGUAGES if name.lower().startswith(value.lower())]


@server.resource("docs://{language}/{page}")
def doc_page(language: str, page: str) -> str:
    return f"{page} in {language}"


@server.completion("docs://{language}/{page}", "page")
def complete_page(value: str, context_arguments: dict) -> list[str]:
    """Completions may use the arguments chosen already (2025-06-18 on)."""
    pages = {"Python": ["asyncio", "typing"], "Rust": ["traits", "tokio"]}
    return [p for p in pages.get(context_arguments.get("language"), []) if p.startswith(value)]


async def main() -> None:
    server_end, client_end = open_memory_transport_pair()
    async with trio.open_nursery() as nursery:
        await nursery.start(server.serve_session, server_end)
        async with open_client(client_end) as client:
            for prompt in await client.list_all_prompts():
                arguments = [(a.name, a.required is True) for a in prompt.arguments]
                print(f"{prompt.name}: {prompt.description} {arguments}")

            result = await client.get_prompt("review", {"code": "x = 1"})
            print(result.messages[0].role, repr(result.messages[0].content.text))
            result = await client.get_prompt("teach", {"topic": "structured concurrency"})
            print([message.role for message in result.messages])

            done = await client.complete("language", "p", prompt="review")
            print("language p...", done.completion.values)
            done = await client.complete(
                "page", "t", resource_template="docs://{language}/{page}", context={"language": "Rust"}
            )
            print("Rust pages t...", done.completion.values)


trio.run(main)
