"""What the official conformance suite expects of the everything example's fixtures (names,
texts, content types), written out independently of the example, and checks of its media."""

from __future__ import annotations

import base64
import io
import struct
import wave
import zlib

TOOLS = {
    "test_simple_text",
    "test_image_content",
    "test_audio_content",
    "test_embedded_resource",
    "test_multiple_content_types",
    "test_tool_with_logging",
    "test_tool_with_progress",
    "test_error_handling",
    "test_sampling",
    "test_elicitation",
    "test_elicitation_sep1034_defaults",
    "test_elicitation_sep1330_enums",
    "json_schema_2020_12_tool",
    "test_reconnection",
    # multi-round-trip input (SEP-2322)
    "test_input_required_result_elicitation",
    "test_input_required_result_sampling",
    "test_input_required_result_list_roots",
    "test_input_required_result_request_state",
    "test_input_required_result_multiple_inputs",
    "test_input_required_result_multi_round",
    "test_input_required_result_tampered_state",
    "test_input_required_result_capabilities",
    # tasks (SEP-2663)
    "greet",
    "slow_compute",
    "failing_job",
    "protocol_error_job",
    "confirm_delete",
    "multi_input",
    "test_tool_with_task",
    # HTTP request headers (SEP-2243)
    "test_custom_headers",
    # stateless diagnostics (SEP-2575)
    "test_missing_capability",
    "test_streaming_elicitation",
    "test_logging_tool",
    # list changes on demand (subscriptions/listen, SEP-2575)
    "test_trigger_tool_change",
    "test_trigger_prompt_change",
}


PROMPTS = {
    "test_simple_prompt",
    "test_prompt_with_arguments",
    "test_prompt_with_embedded_resource",
    "test_prompt_with_image",
    "test_input_required_result_prompt",
}


def check_png(data: str) -> None:
    """``data`` is base64 of a valid 1x1 PNG (signature, IHDR, pixel data, CRCs)."""
    raw = base64.b64decode(data, validate=True)
    assert raw[:8] == b"\x89PNG\r\n\x1a\n"
    pos, chunks = 8, {}
    while pos < len(raw):
        (length,) = struct.unpack(">I", raw[pos : pos + 4])
        kind, body = raw[pos + 4 : pos + 8], raw[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", raw[pos + 8 + length : pos + 12 + length])
        assert zlib.crc32(kind + body) & 0xFFFFFFFF == crc, kind
        chunks[kind] = body
        pos += 12 + length
    assert list(chunks) == [b"IHDR", b"IDAT", b"IEND"]
    width, height, depth, colour = struct.unpack(">IIBB", chunks[b"IHDR"][:10])
    assert (width, height, depth) == (1, 1, 8)
    pixel = zlib.decompress(chunks[b"IDAT"])
    assert len(pixel) == 1 + {6: 4, 2: 3}[colour]  # filter byte + one RGB(A) pixel


def check_wav(data: str) -> None:
    """``data`` is base64 of a readable PCM WAV file."""
    with wave.open(io.BytesIO(base64.b64decode(data, validate=True))) as audio:
        assert audio.getnchannels() >= 1 and audio.getframerate() > 0
        assert len(audio.readframes(audio.getnframes())) == audio.getnframes() * audio.getsampwidth()
