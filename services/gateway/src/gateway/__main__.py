"""`python -m gateway`: serve the public API on GATEWAY_HOST:GATEWAY_PORT."""

from __future__ import annotations

from common.process import run_process
from gateway.main import create_app
from gateway.settings import Settings


def main() -> None:
    settings = Settings()
    run_process(
        "gateway",
        settings,
        create_app,
        host=settings.host,
        port=settings.port,
        metrics_port=settings.metrics_port,
        # httpx logs every proxied request at INFO; the access log already has one line per request.
        quiet_loggers=["httpx"],
        # WebSocket pings (ASGI cannot send them; the server's protocol layer does) and dead-peer detection.
        ws_ping_interval=settings.ws_ping_seconds,
        ws_ping_timeout=settings.ws_ping_seconds,
        ws_max_size=64 * 1024,  # clients send nothing but control frames
        timeout_keep_alive=30,
    )


if __name__ == "__main__":
    main()
