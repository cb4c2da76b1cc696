"""Every sentence a fuzzing rule cites is in the document it names, in the revision it is cited
for: the pinned specification text in tests/fuzzing/spec (see its README for the matching)."""

from __future__ import annotations

import hashlib
import re
import tomllib
from pathlib import Path

import pytest

from mcp_trio.fuzzing import RULES
from mcp_trio.fuzzing._rules import JSONRPC, rule_for
from mcp_trio.types import _versions

SPEC = Path(__file__).parent / "spec"
PINS = tomllib.loads((SPEC / "pins.toml").read_text())
PREFIX = "docs/specification/"

#: Where JSON-RPC 2.0 says what the rules quote of it: the first words of a fragment -> section.
JSONRPC_SECTIONS = {
    "When a rpc call is made, the Server MUST reply with a Response": "5",  # Response object
    "error: This member is REQUIRED on error": "5",
    "id: This member is REQUIRED": "5",
    "If there was an error in detecting the id in the Request object": "5",
    "result: This member MUST NOT exist if there was an error invoking the method": "5",
    "-32700 Parse error": "5.1",  # Error object
    "-32600 Invalid Request": "5.1",
    "The Server MUST NOT reply to a Notification": "4.1",  # Notification
}


def normalise(text: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # [text](url)
    text = re.sub(r"\[([^\]]*)\]\[[^\]]*\]", r"\1", text)  # [text][ref]
    text = re.sub(r"^\s*(?:[-*+]|\d+\.|>|#+)\s+", "", text, flags=re.MULTILINE)
    text = text.replace("**", "").replace("`", "")
    text = re.sub(r"\s+", " ", text)
    return re.sub(r"(?<![\w_])_([^_]+?)_(?![\w_])", r"\1", text).strip()


def fragments(text: str) -> list[str]:
    """The quoted parts of a citation: what the [...] and [notes] leave."""
    return [f.strip() for f in re.split(r"\[[^\]]*\]", text) if f.strip()]


CITATIONS = sorted(
    {
        (rule.id, revision, cite["document"], cite["text"])
        for rule in RULES.values()
        for revision in _versions.SUPPORTED_VERSIONS
        for cite in [rule.cite(revision)]
    }
)


def test_every_kept_file_is_pinned_and_has_its_sha256() -> None:
    kept = {p.relative_to(SPEC).as_posix() for p in SPEC.rglob("*.mdx")}
    assert kept == set(PINS["files"]), "pins.toml and the files kept differ"
    commit = PINS["upstream"]["commit"]
    for path, pin in PINS["files"].items():
        assert pin["url"] == PINS["upstream"]["url_template"].format(commit=commit, path=path)
        assert hashlib.sha256((SPEC / path).read_bytes()).hexdigest() == pin["sha256"], path


def test_every_kept_file_is_cited() -> None:
    cited = {doc.removeprefix(PREFIX) for _, _, doc, _ in CITATIONS if doc.startswith(PREFIX)}
    assert cited == set(PINS["files"])


@pytest.mark.parametrize(("rule", "revision", "document", "text"), CITATIONS)
def test_every_cited_sentence_is_in_its_revision(rule: str, revision: str, document: str, text: str) -> None:
    if document.startswith(JSONRPC):
        section = document.removeprefix(f"{JSONRPC}, section ")
        for fragment in fragments(text):
            known = [s for start, s in JSONRPC_SECTIONS.items() if fragment.startswith(start)]
            assert known, f"{rule} ({revision}): no section known for {fragment!r}"
            assert known[0] == section, f"{rule} ({revision}) names section {section}: {fragment!r}"
        return
    assert document.startswith(PREFIX), document
    path = document.removeprefix(PREFIX)
    assert path in PINS["files"], f"{rule} ({revision}) cites {document}, which is not kept"
    cited_revision = path.split("/")[0]
    notes = " ".join(re.findall(r"\[([^\]]*)\]", text))
    assert cited_revision == revision or cited_revision in notes, (
        f"{rule} ({revision}) cites {cited_revision}'s {path} without a note naming it"
    )
    body = normalise((SPEC / path).read_text())
    for fragment in fragments(text):
        quoted = normalise(fragment)
        assert quoted in body or quoted.removesuffix(".") in body, (
            f"{rule} ({revision}): not in {document}: {fragment!r}"
        )


def test_the_findings_of_the_issue_cite_what_their_revisions_say() -> None:
    """The citations #41 found wrong: the JSON-RPC response rule is section 5, the 2026-07-28
    rules cite files of that revision, and a 2025-03-26 session is not held to a header of
    2025-06-18."""
    assert RULES["reply"].cite("2025-11-25")["document"] == f"{JSONRPC}, section 5"
    assert RULES["ping"].cite("2026-07-28")["document"] == f"{JSONRPC}, section 5"
    for rule in RULES.values():
        document = rule.cite("2026-07-28")["document"]
        assert document.startswith((JSONRPC, "docs/specification/2026-07-28/")), (rule.id, document)
    old = RULES["http-protocol-version"].cite("2025-03-26")
    assert old["document"] == "docs/specification/2025-06-18/basic/transports.mdx"
    assert "earlier revisions do not have it" in old["text"]
    assert rule_for("http-session", "unknown-session-id") == "http-unknown-session"
