"""Structured JSON logs with request id and trace id on every line, and no credentials in any of them.

Every line passes :func:`redact` after it is formatted, whoever logged it (our code, uvicorn's WebSocket
line with ``?access_token=``, a library's exception text): JWTs, ``Bearer`` credentials, token query
parameters, credential-named JSON fields, and the secrets a process registers (``register_secret``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace

from common.context import request_id_var, user_id_var

REDACTED = "[redacted]"
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]+")
_QUERY_TOKEN = re.compile(r"(?i)((?:access|refresh|id|identity|admin)?_?token=)[^&\s\"'\\]+")
_CREDENTIAL_FIELD = re.compile(
    r"(?i)(\\?\"(?:authorization|cookie|set-cookie|x-admin-token|(?:access|refresh|id|identity|admin)_?token)"
    r"\\?\"\s*:\s*\\?\")(?:[^\"\\]|\\[^\"])*"
)
_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """A value this process knows to be secret (e.g. ``ADMIN_TOKEN``): never written to a log line."""
    if value and len(value) >= 4:
        _secrets.add(value)


# Every pattern above needs one of these words (matched without case). For ASCII text (every line the
# formatter writes: JSON escapes the rest) "none of them occurs" is a cheap proof that nothing matches.
_TRIGGERS = ("eyj", "bearer", "token", "authorization", "cookie")


def _may_hold_credentials(text: str) -> bool:
    if not text.isascii():  # case folding beyond ASCII (e.g. U+212A KELVIN SIGN ~ k): no shortcut
        return True
    lowered = text.lower()
    return any(word in lowered for word in _TRIGGERS) or any(secret in text for secret in _secrets)


def redact(text: str) -> str:
    """``text`` without credentials (see the module doc); one pass per pattern, linear in its length."""
    if not _may_hold_credentials(text):
        return text
    text = _JWT.sub(REDACTED, text)
    text = _BEARER.sub(rf"\1{REDACTED}", text)
    text = _QUERY_TOKEN.sub(rf"\1{REDACTED}", text)
    text = _CREDENTIAL_FIELD.sub(rf"\1{REDACTED}", text)
    for secret in _secrets:
        text = text.replace(secret, REDACTED)
    return text


_RESERVED = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    def __init__(self, service: str) -> None:
        super().__init__()
        self.service = service
        self._second = -1
        self._second_text = ""

    def timestamp(self, created: float) -> str:
        """ISO 8601 UTC with milliseconds; the part up to the second is formatted once per second."""
        second = int(created)
        if second != self._second:
            self._second_text = datetime.fromtimestamp(second, UTC).strftime("%Y-%m-%dT%H:%M:%S")
            self._second = second
        return f"{self._second_text}.{int((created - second) * 1000):03d}+00:00"

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": self.timestamp(record.created),
            "level": record.levelname.lower(),
            "service": self.service,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        request_id = request_id_var.get()
        if request_id:
            entry["request_id"] = request_id
        user_id = user_id_var.get()
        if user_id:
            entry["user_id"] = user_id
        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid:
            entry["trace_id"] = format(span_context.trace_id, "032x")
            entry["span_id"] = format(span_context.span_id, "016x")
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                entry[key] = value
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return redact(json.dumps(entry, default=str))


class CoalescingStreamHandler(logging.StreamHandler[TextIO]):
    """A stream handler that writes the lines of a busy moment together, in order.

    A line below WARNING logged on a thread with a running event loop waits in memory for at most
    ``delay`` seconds, then it and every line after it go out in one write: under load one system call
    carries tens of access lines instead of one each. A WARNING or worse line, a line logged where no
    loop runs, a full buffer (``max_lines``) and :meth:`flush` (``logging.shutdown`` at exit) write
    everything pending at once. A timer exists only while lines wait: an idle process has none.
    A process killed outright loses at most ``delay`` of INFO lines."""

    def __init__(self, stream: TextIO, *, delay: float = 0.05, max_lines: int = 512) -> None:
        super().__init__(stream)
        self.delay = delay
        self.max_lines = max_lines
        self._pending: list[str] = []
        self._timer_loop: asyncio.AbstractEventLoop | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            self._pending.append(self.format(record) + self.terminator)
        except Exception:
            self.handleError(record)
            return
        if record.levelno >= logging.WARNING or len(self._pending) >= self.max_lines or not self._timer_set():
            self.flush()

    def _timer_set(self) -> bool:
        """Whether a flush is due on this thread's running loop (scheduled now if not yet)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        if self._timer_loop is not loop:  # none yet, or one on a loop that may be gone
            loop.call_later(self.delay, self._timer_fired, loop)
            self._timer_loop = loop
        return True

    def _timer_fired(self, loop: asyncio.AbstractEventLoop) -> None:
        self.acquire()
        try:
            if self._timer_loop is loop:
                self._timer_loop = None
            self.flush()
        finally:
            self.release()

    def flush(self) -> None:
        self.acquire()
        try:
            if self._pending:
                lines, self._pending = "".join(self._pending), []
                try:
                    self.stream.write(lines)
                except Exception:  # a closed or broken stream: the lines are dropped, never raised
                    return
            super().flush()
        finally:
            self.release()


def flush_logs() -> None:
    """Write every line the root logger's handlers hold (before a process ends by a signal)."""
    for handler in logging.getLogger().handlers:
        handler.flush()


def setup_logging(service: str, level: str = "INFO") -> None:
    """Route every logger (ours, uvicorn's, aiokafka's) through one JSON handler on stderr
    (:class:`CoalescingStreamHandler`)."""
    handler = CoalescingStreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter(service))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # No line shows the caller's file and line, thread or process: not collecting them per record saves
    # a stack walk per line (the logging module's documented switches).
    logging._srcfile = None
    logging.logThreads = False
    logging.logProcesses = False
    logging.logMultiprocessing = False
    for name in ("uvicorn", "uvicorn.error"):
        logging.getLogger(name).handlers[:] = []
        logging.getLogger(name).propagate = True
    # Our middleware writes one access line per request; uvicorn's would duplicate it without ids.
    logging.getLogger("uvicorn.access").disabled = True
    logging.getLogger("aiokafka").setLevel(logging.WARNING)
    logging.getLogger("sqlalchemy.engine").setLevel(logging.WARNING)
