"""Request and response models of the auth API (field names exactly as the spec writes them)."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, StrictBool

from auth.domain.model import Entitlements, IssuedPairingCode, IssuedSession, User
from auth.domain.pairing import MAX_CLAIM_LENGTH
from common.handlers import error_responses
from common.validation import StrictText


class _Body(BaseModel):
    # Unknown fields are ignored: older and newer clients send what they know.
    model_config = ConfigDict(extra="ignore")


class IdpASignIn(_Body):
    idToken: StrictText
    link: StrictBool | None = None


class IdpBSignIn(_Body):
    identityToken: StrictText
    # Accepted and ignored: no code-exchange endpoint is configured (docs/api-guide.md §2).
    authorizationCode: StrictText | None = None
    link: StrictBool | None = None


class RefreshRequest(_Body):
    refreshToken: StrictText


class LogoutRequest(_Body):
    refreshToken: StrictText


class PairingClaim(_Body):
    code: StrictText = Field(
        max_length=MAX_CLAIM_LENGTH, description="The code as shown (XXXX-XXXX); dash, spaces and case are ignored."
    )


class SettingsPatch(_Body):
    useAi: StrictBool


class SubscriptionUpdate(_Body):
    isPro: StrictBool


class UserOut(BaseModel):
    id: str
    isAnonymous: bool
    displayName: str | None
    email: str | None
    photoUrl: str | None
    isPro: bool

    @classmethod
    def of(cls, user: User) -> UserOut:
        return cls.model_validate(user.to_api())


class SessionOut(BaseModel):
    accessToken: str
    refreshToken: str
    user: UserOut

    @classmethod
    def of(cls, issued: IssuedSession) -> SessionOut:
        return cls(accessToken=issued.access_token, refreshToken=issued.refresh_token, user=UserOut.of(issued.user))


class PairingCodeOut(BaseModel):
    code: str = Field(description="8 characters shown as XXXX-XXXX; single use.")
    expiresAt: datetime


class PairingCodeEnvelope(BaseModel):
    data: PairingCodeOut

    @classmethod
    def of(cls, issued: IssuedPairingCode) -> PairingCodeEnvelope:
        return cls(data=PairingCodeOut(code=issued.code, expiresAt=issued.expires_at))


class SettingsOut(BaseModel):
    useAi: bool


class EntitlementsOut(BaseModel):
    exists: bool
    useAi: bool
    isPro: bool

    @classmethod
    def of(cls, entitlements: Entitlements) -> EntitlementsOut:
        return cls(exists=entitlements.exists, useAi=entitlements.use_ai, isPro=entitlements.is_pro)


class Jwks(BaseModel):
    keys: list[dict[str, str]]


ERROR_RESPONSES = error_responses(400, 401, 404, 409, 413, 429, 500, 503)
