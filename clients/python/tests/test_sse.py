"""The SSE reader alone (no server): line ends, comments, multi-line data, characters split across reads."""
from __future__ import annotations

import unittest
from typing import List

from toolshed.sse import SseMessage, read_sse


class Pieces:
    """A stream that hands out its bytes a few at a time, as a socket may."""

    def __init__(self, data: bytes, size: int) -> None:
        self.parts: List[bytes] = [data[i : i + size] for i in range(0, len(data), size)]

    def read1(self, n: int) -> bytes:
        return self.parts.pop(0) if self.parts else b""


STREAM = (
    ": keep-alive\r\n\r\n"
    "event: progress\r\ndata: {\"kind\":\"output\",\"text\":\"h\u00e9 \U0001f680\"}\r\n\r\n"
    "event: progress\rdata: line one\rdata: line two\r\r"
    "id: 7\nretry: 10\nevent: result\ndata:{\"ok\":true}\n\n"
    "event: result\ndata: unterminated"
).encode("utf-8")

EXPECTED = [
    SseMessage("progress", '{"kind":"output","text":"h\u00e9 \U0001f680"}'),
    SseMessage("progress", "line one\nline two"),
    SseMessage("result", '{"ok":true}'),
]


class ReadSse(unittest.TestCase):
    def test_every_split_of_the_stream(self) -> None:
        for size in (1, 2, 3, 5, 7, 64, len(STREAM)):
            self.assertEqual(list(read_sse(Pieces(STREAM, size))), EXPECTED, f"read {size} bytes at a time")  # type: ignore[arg-type]

    def test_event_without_a_name_is_a_message(self) -> None:
        self.assertEqual(list(read_sse(Pieces(b"data: x\n\n", 4))), [SseMessage("message", "x")])  # type: ignore[arg-type]
