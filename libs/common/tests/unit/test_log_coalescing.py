"""The stderr handler writes a busy moment's lines in one write, in order, and never holds a warning."""

from __future__ import annotations

import asyncio
import io
import logging
import threading

from common.logging import CoalescingStreamHandler
from devstack.testing import eventually


class CountingStream(io.StringIO):
    """A text stream that counts its writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, text: str) -> int:
        self.writes += 1
        return super().write(text)


async def written(stream: CountingStream, ending: str = "") -> str | None:
    """What the stream holds, once it holds something ending with ``ending``."""
    text = stream.getvalue()
    return text if text and text.endswith(ending) else None


def logger_on(stream: CountingStream, delay: float = 0.05, max_lines: int = 512) -> logging.Logger:
    handler = CoalescingStreamHandler(stream, delay=delay, max_lines=max_lines)
    handler.setFormatter(logging.Formatter("%(message)s"))
    logger = logging.getLogger(f"coalescing.{id(stream)}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger


async def test_lines_on_the_loop_wait_for_the_timer_and_go_out_in_one_write() -> None:
    stream = CountingStream()
    log = logger_on(stream)
    for n in range(20):
        log.info("line %d", n)
    assert stream.getvalue() == ""  # held
    assert await eventually(lambda: written(stream)) == "".join(f"line {n}\n" for n in range(20))
    assert stream.writes == 1
    log.info("later")  # a new timer for the next batch
    assert (await eventually(lambda: written(stream, "later\n"))).endswith("line 19\nlater\n")
    assert stream.writes == 2


async def test_a_warning_writes_at_once_with_the_lines_before_it() -> None:
    stream = CountingStream()
    log = logger_on(stream)
    log.info("first")
    log.warning("trouble")
    assert stream.getvalue() == "first\ntrouble\n"
    assert stream.writes == 1


async def test_a_full_buffer_writes_at_once() -> None:
    stream = CountingStream()
    log = logger_on(stream, max_lines=3)
    for n in range(3):
        log.info("n%d", n)
    assert stream.getvalue() == "n0\nn1\nn2\n"


def test_without_a_running_loop_every_line_is_written_at_once() -> None:
    stream = CountingStream()
    log = logger_on(stream)
    log.info("plain")
    assert stream.getvalue() == "plain\n"
    done = threading.Event()

    def other_thread() -> None:
        log.info("from a thread")
        done.set()

    threading.Thread(target=other_thread).start()
    assert done.wait(5)
    assert stream.getvalue() == "plain\nfrom a thread\n"


def test_lines_held_by_a_loop_that_ended_go_out_with_the_next_loops_timer_or_at_flush() -> None:
    stream = CountingStream()
    log = logger_on(stream, delay=30)

    async def log_one(text: str) -> None:
        log.info(text)

    asyncio.run(log_one("from the first loop"))  # its loop ends long before the timer
    assert stream.getvalue() == ""
    asyncio.run(log_one("from the second loop"))
    assert stream.getvalue() == ""
    log.handlers[0].flush()  # what logging.shutdown does at exit
    assert stream.getvalue() == "from the first loop\nfrom the second loop\n"


async def test_a_broken_stream_drops_the_lines_and_raises_nothing() -> None:
    stream = CountingStream()
    log = logger_on(stream)
    log.info("lost")
    stream.close()
    log.handlers[0].flush()
    log.warning("also lost")  # no exception reaches the caller


async def test_the_server_writes_held_lines_before_it_raises_a_stop_signal_again() -> None:
    """uvicorn ends a process by raising the stop signal it caught once shutdown is complete: no exit hook
    runs after that, so the last lines ("Application shutdown complete") are written before it."""
    import uvicorn

    from common.server import QuietServer

    stream = CountingStream()
    handler = CoalescingStreamHandler(stream, delay=30)
    handler.setFormatter(logging.Formatter("%(message)s"))
    root = logging.getLogger()
    kept, level = root.handlers[:], root.level
    root.handlers[:] = [handler]
    root.setLevel(logging.INFO)
    try:
        server = QuietServer(uvicorn.Config(app=None, log_config=None))
        with server.capture_signals():
            logging.getLogger("uvicorn.error").info("Application shutdown complete.")
            assert stream.getvalue() == ""  # held: its timer is 30 s away
        assert stream.getvalue() == "Application shutdown complete.\n"
    finally:
        root.handlers[:] = kept
        root.setLevel(level)
