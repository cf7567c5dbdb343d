"""BrowserRenderer behaviour that needs no Chromium: mode handling, discovery and the request filter."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from enrichment.fetch import FetchError
from enrichment.pipeline import BrowserRenderer, find_chromium


async def test_mode_off_gives_no_renderer() -> None:
    assert await BrowserRenderer.create(mode="off", allow_private_networks=False) is None


async def test_auto_without_chromium_gives_no_renderer(tmp_path: Path) -> None:
    missing = str(tmp_path / "no-chromium")
    assert await BrowserRenderer.create(mode="auto", allow_private_networks=False, executable_path=missing) is None


async def test_required_without_chromium_fails_loudly(tmp_path: Path) -> None:
    with pytest.raises(RuntimeError, match="ENRICHMENT_BROWSER=required"):
        await BrowserRenderer.create(
            mode="required", allow_private_networks=False, executable_path=str(tmp_path / "no-chromium")
        )


async def test_unknown_mode_is_rejected() -> None:
    with pytest.raises(ValueError, match="auto, off or required"):
        await BrowserRenderer.create(mode="sometimes", allow_private_networks=False)  # type: ignore[arg-type]


async def test_auto_with_a_broken_chromium_gives_no_renderer(tmp_path: Path) -> None:
    fake = tmp_path / "chromium"
    fake.write_text("#!/bin/sh\nexit 1\n")
    fake.chmod(0o755)
    assert await BrowserRenderer.create(mode="auto", allow_private_networks=False, executable_path=str(fake)) is None
    with pytest.raises(RuntimeError, match="did not start"):
        await BrowserRenderer.create(mode="required", allow_private_networks=False, executable_path=str(fake))


def test_find_chromium_honours_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    fake = tmp_path / "my-chromium"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("ENRICHMENT_CHROMIUM_PATH", str(fake))
    assert find_chromium() == str(fake)
    # A configured path that does not exist means "not found", not "search elsewhere".
    monkeypatch.setenv("ENRICHMENT_CHROMIUM_PATH", str(tmp_path / "missing"))
    assert find_chromium() is None
    # An explicit argument beats the environment.
    assert find_chromium(str(fake)) == str(fake)


async def test_blocked_main_url_fails_before_any_browser_work() -> None:
    renderer = BrowserRenderer(executable_path="/nonexistent", allow_private_networks=False)
    with pytest.raises(FetchError) as caught:
        await renderer.render("http://169.254.169.254/latest/meta-data/")
    assert caught.value.code == "blocked-host"
    with pytest.raises(FetchError) as caught:
        await renderer.render("file:///etc/passwd")
    assert caught.value.code == "invalid-url"
    await renderer.close()


async def test_render_after_close_is_an_error() -> None:
    renderer = BrowserRenderer(executable_path="/nonexistent", allow_private_networks=True)
    await renderer.close()
    with pytest.raises(RuntimeError, match="closed"):
        await renderer.render("http://127.0.0.1:9/")


@dataclass
class FakeRequest:
    url: str
    resource_type: str = "image"


@dataclass
class FakeRoute:
    actions: list[str] = field(default_factory=list)

    async def continue_(self) -> None:
        self.actions.append("continue")

    async def abort(self, error_code: str | None = None) -> None:
        self.actions.append(f"abort:{error_code}")


async def _filtered(renderer: BrowserRenderer, url: str, resource_type: str = "image") -> list[str]:
    route = FakeRoute()
    await renderer._filter(route, FakeRequest(url, resource_type))  # type: ignore[arg-type]
    return route.actions


async def test_request_filter() -> None:
    async def checker(url: str) -> None:
        if "evil" in url:
            raise FetchError("blocked-host", "blocked")
        if "broken" in url:
            raise RuntimeError("checker bug")

    renderer = BrowserRenderer(executable_path="/nonexistent", allow_private_networks=False, url_checker=checker)
    assert await _filtered(renderer, "https://example.com/a.png") == ["continue"]
    assert await _filtered(renderer, "data:image/png;base64,AAAA") == ["continue"]
    assert await _filtered(renderer, "blob:https://example.com/123") == ["continue"]
    assert await _filtered(renderer, "https://evil.example/x.png") == ["abort:blockedbyclient"]
    assert await _filtered(renderer, "https://broken.example/x.png") == ["abort:blockedbyclient"]  # fails closed
    assert await _filtered(renderer, "ftp://example.com/file") == ["abort:blockedbyclient"]
    assert await _filtered(renderer, "file:///etc/passwd", "document") == ["abort:blockedbyclient"]
    assert await _filtered(renderer, "https://example.com/video.mp4", "media") == ["abort:blockedbyclient"]
    assert list(renderer.blocked_requests) == [
        "https://evil.example/x.png",
        "https://broken.example/x.png",
        "ftp://example.com/file",
        "file:///etc/passwd",
    ]
    assert renderer.blocked_count == 4
    await renderer.close()


async def test_default_filter_uses_the_address_policy() -> None:
    renderer = BrowserRenderer(executable_path="/nonexistent", allow_private_networks=False)
    assert await _filtered(renderer, "http://10.255.255.1/x.png") == ["abort:blockedbyclient"]
    assert await _filtered(renderer, "http://[::1]/x.png") == ["abort:blockedbyclient"]
    assert await _filtered(renderer, "http://93.184.215.14/x.png") == ["continue"]
    await renderer.close()
