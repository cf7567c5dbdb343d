"""FastAPI dependencies as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Query, Request

from common.auth import Principal, current_principal
from common.db import SessionFactory
from enrichment.api.schemas import CLIENT_BOOKMARK_ID_PATTERN
from enrichment.domain.model import Clock
from enrichment.entitlements import EntitlementsClient
from enrichment.settings import Settings


async def _sessions(request: Request) -> SessionFactory:
    sessions: SessionFactory = request.app.state.sessions
    return sessions


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


async def _clock(request: Request) -> Clock:
    clock: Clock = request.app.state.clock
    return clock


async def _entitlements(request: Request) -> EntitlementsClient:
    client: EntitlementsClient = request.app.state.entitlements
    return client


CurrentUser = Annotated[Principal, Depends(current_principal)]
Sessions = Annotated[SessionFactory, Depends(_sessions)]
AppSettings = Annotated[Settings, Depends(_settings)]
AppClock = Annotated[Clock, Depends(_clock)]
Entitlements = Annotated[EntitlementsClient, Depends(_entitlements)]
ClientBookmarkIdQuery = Annotated[
    str, Query(pattern=CLIENT_BOOKMARK_ID_PATTERN, description="Client-generated bookmark id.")
]
