"""Read-your-writes view of a user's consent and plan: asked from auth's internal API.

Consent changed a moment ago must already count (docs/api-guide.md, section 9), which an event projection cannot
promise; so every enqueue asks auth, with a short timeout. When auth cannot answer, the projection fed by
``user.updated`` is the fallback: slightly stale beats refusing every enqueue during an auth outage.
"""

from __future__ import annotations

import logging
import uuid

import httpx

from common.context import request_id_var
from common.tracing import inject_http_headers
from enrichment.domain.model import Entitlements

log = logging.getLogger("enrichment.entitlements")


class EntitlementsClient:
    def __init__(self, *, auth_url: str, timeout_seconds: float, http: httpx.AsyncClient | None = None) -> None:
        self.base_url = auth_url.rstrip("/")
        self.timeout_seconds = timeout_seconds
        self._http = http or httpx.AsyncClient(timeout=timeout_seconds, trust_env=False)
        self._owns_http = http is None

    async def aclose(self) -> None:
        if self._owns_http:
            await self._http.aclose()

    async def fetch(self, user_id: uuid.UUID) -> Entitlements | None:
        """Auth's answer, or None when auth is unreachable, slow or broken (caller falls back)."""
        headers: dict[str, str] = {}
        inject_http_headers(headers)
        request_id = request_id_var.get()
        if request_id:
            headers["X-Request-Id"] = request_id
        url = f"{self.base_url}/internal/users/{user_id}/entitlements"
        try:
            response = await self._http.get(url, headers=headers, timeout=self.timeout_seconds)
        except httpx.HTTPError as exc:
            log.warning("auth entitlements unreachable, using the projection: %s", exc or type(exc).__name__)
            return None
        if response.status_code == 404:
            return Entitlements(exists=False, use_ai=False, is_pro=False)
        if response.status_code != 200:
            log.warning("auth entitlements answered %s, using the projection", response.status_code)
            return None
        try:
            body = response.json()
            return Entitlements(
                exists=bool(body.get("exists", True)),
                use_ai=bool(body["useAi"]) if body.get("exists", True) else False,
                is_pro=bool(body["isPro"]) if body.get("exists", True) else False,
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            log.warning("auth entitlements answer malformed, using the projection: %s", exc)
            return None
