"""Reading a ``multipart/form-data`` import upload as a stream (docs/api-guide.md, section 13).

The body is fed chunk by chunk to python-multipart's push parser; the ``file`` part goes straight into a
spooled temporary file (memory up to 1 MiB, then disk), never whole into memory. Limits: at most
``MAX_PARTS`` parts, ``MAX_PART_HEADERS`` headers of at most ``MAX_HEADER_BYTES`` each per part, a
``format`` part of at most 64 bytes, a ``file`` part of at most ``max_file_bytes``.
"""

from __future__ import annotations

import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import IO, Final

from python_multipart.exceptions import MultipartParseError
from python_multipart.multipart import MultipartParser, parse_options_header

from bookmarks.imports.formats.model import FORMATS
from common.errors import InvalidRequest, PayloadTooLarge

MAX_PARTS: Final = 4
MAX_PART_HEADERS: Final = 8
MAX_HEADER_BYTES: Final = 4096
MAX_FORMAT_BYTES: Final = 64
SPOOL_BYTES: Final = 1024 * 1024
FORMAT_CHOICES: Final = ("auto", *FORMATS)


@dataclass
class Upload:
    """The parts that matter once the body is read: the file (rewound) and the requested format."""

    file: IO[bytes]
    size: int
    format: str


@dataclass
class _State:
    max_file_bytes: int
    file: IO[bytes] = field(default_factory=lambda: tempfile.SpooledTemporaryFile(max_size=SPOOL_BYTES))
    parts: int = 0
    header_field: bytearray = field(default_factory=bytearray)
    header_value: bytearray = field(default_factory=bytearray)
    current: str | None = None  # name of the part being read
    seen_file: bool = False
    size: int = 0
    format_raw: bytearray | None = None
    ended: bool = False

    def part_begin(self) -> None:
        self.parts += 1
        self.current = None
        if self.parts > MAX_PARTS:
            raise InvalidRequest(f"At most {MAX_PARTS} form parts are accepted.")

    def header_end(self) -> None:
        if bytes(self.header_field).lower() == b"content-disposition":
            _, options = parse_options_header(bytes(self.header_value))
            self.current = options.get(b"name", b"").decode("latin-1")
        self.header_field.clear()
        self.header_value.clear()

    def headers_finished(self) -> None:
        if self.current == "file":
            if self.seen_file:
                raise InvalidRequest("Send exactly one file part.")
            self.seen_file = True
        elif self.current == "format":
            self.format_raw = bytearray()

    def data(self, chunk: bytes) -> None:
        if self.current == "file":
            self.size += len(chunk)
            if self.size > self.max_file_bytes:
                raise PayloadTooLarge.over(self.max_file_bytes)
            self.file.write(chunk)
        elif self.current == "format" and self.format_raw is not None:
            self.format_raw += chunk
            if len(self.format_raw) > MAX_FORMAT_BYTES:
                raise InvalidRequest(f"format must be one of {', '.join(FORMAT_CHOICES)}.")


def _boundary(content_type: str | None) -> bytes:
    kind, options = parse_options_header(content_type or "")
    boundary = options.get(b"boundary", b"")
    if kind != b"multipart/form-data" or not boundary or len(boundary) > 200:
        raise InvalidRequest("Send the file as multipart/form-data with a `file` part.")
    return boundary


def _parser(state: _State, boundary: bytes) -> MultipartParser:
    callbacks = {
        "on_part_begin": state.part_begin,
        "on_header_field": lambda d, s, e: state.header_field.extend(d[s:e]),
        "on_header_value": lambda d, s, e: state.header_value.extend(d[s:e]),
        "on_header_end": state.header_end,
        "on_headers_finished": state.headers_finished,
        "on_part_data": lambda d, s, e: state.data(bytes(d[s:e])),
        "on_end": lambda: setattr(state, "ended", True),
    }
    return MultipartParser(
        boundary,
        callbacks,  # type: ignore[arg-type]
        max_header_count=MAX_PART_HEADERS,
        max_header_size=MAX_HEADER_BYTES,
    )


async def read_upload(content_type: str | None, body: AsyncIterator[bytes], *, max_file_bytes: int) -> Upload:
    """The upload of ``body``; ``InvalidRequest`` (400) for anything malformed, ``PayloadTooLarge`` (413)."""
    state = _State(max_file_bytes=max_file_bytes)
    try:
        parser = _parser(state, _boundary(content_type))
        async for chunk in body:
            if chunk:
                parser.write(chunk)
        parser.finalize()
        return _finish(state)
    except MultipartParseError as exc:
        state.file.close()
        raise InvalidRequest("The multipart body is malformed.") from exc
    except BaseException:
        state.file.close()
        raise


def _finish(state: _State) -> Upload:
    if not state.ended:
        raise InvalidRequest("The multipart body is malformed: it ends before its closing boundary.")
    if not state.seen_file:
        raise InvalidRequest("The `file` part is missing.")
    fmt = "auto"
    if state.format_raw is not None:
        fmt = state.format_raw.decode("utf-8", errors="replace").strip() or "auto"
    if fmt not in FORMAT_CHOICES:
        raise InvalidRequest(f"format must be one of {', '.join(FORMAT_CHOICES)}.")
    state.file.seek(0)
    return Upload(file=state.file, size=state.size, format=fmt)
