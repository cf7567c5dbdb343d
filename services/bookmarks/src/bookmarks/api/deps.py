"""FastAPI dependencies as ``Annotated`` aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from bookmarks.settings import Settings
from common.auth import Principal, current_principal
from common.db import SessionFactory
from common.validation import CLIENT_ID_PATTERN


async def _sessions(request: Request) -> SessionFactory:
    sessions: SessionFactory = request.app.state.sessions
    return sessions


async def _settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


CurrentUser = Annotated[Principal, Depends(current_principal)]
Sessions = Annotated[SessionFactory, Depends(_sessions)]
AppSettings = Annotated[Settings, Depends(_settings)]
ClientBookmarkId = Annotated[str, Path(pattern=CLIENT_ID_PATTERN, description="Client-generated bookmark id.")]
CollectionId = Annotated[str, Path(pattern=CLIENT_ID_PATTERN, description="Client-generated collection id.")]
