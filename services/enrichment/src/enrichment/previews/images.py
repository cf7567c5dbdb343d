"""Preview images: a fetched picture decoded within bounds and re-encoded, so nothing the site sent is served.

Only raster formats are opened (JPEG, PNG, GIF, WebP, BMP, ICO; never SVG), the pixel count is checked
from the header before any pixel is decoded, the first frame alone is kept, and the result is a fresh
WebP of at most ``max_side`` pixels per side with no metadata. A polyglot file (an image that is also
HTML or a script) comes out as plain pixels; anything that does not decode is no image at all.
Pure and CPU-bound: async callers run it in a thread.
"""

from __future__ import annotations

import hashlib
import io
import warnings
from dataclasses import dataclass
from typing import Final

from PIL import Image, ImageOps, UnidentifiedImageError

__all__ = ["ICON_SIDE", "IMAGE_CONTENT_TYPE", "PICTURE_SIDE", "EncodedImage", "image_path", "is_image_id", "reencode"]

IMAGE_CONTENT_TYPE: Final = "image/webp"
PICTURE_SIDE: Final = 800
"""Longest side of a preview picture: sharp on a list row and a details pane at 2x, small to store."""
ICON_SIDE: Final = 64
_FORMATS: Final = ("JPEG", "PNG", "GIF", "WEBP", "BMP", "ICO")
_QUALITY: Final = 80
_ID_LENGTH: Final = 64
_PATH_PREFIX: Final = "/v1/previews/images/"


@dataclass(frozen=True, slots=True)
class EncodedImage:
    id: str
    """Hex SHA-256 of ``data``: the same picture is stored once, whoever's page pointed at it."""
    data: bytes
    width: int
    height: int

    @property
    def path(self) -> str:
        return image_path(self.id)


def image_path(image_id: str) -> str:
    """Where the platform serves an image: a path on its own origin, never the site's address."""
    return f"{_PATH_PREFIX}{image_id}.webp"


def is_image_id(value: str) -> bool:
    return len(value) == _ID_LENGTH and all(char in "0123456789abcdef" for char in value)


def reencode(data: bytes, *, max_side: int, max_pixels: int) -> EncodedImage | None:
    """``data`` as a fresh WebP of at most ``max_side`` per side; None when it is not a usable raster image."""
    try:
        with warnings.catch_warnings():
            # Pillow warns (and at twice its own cap raises) on huge images; our cap comes first.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data), formats=_FORMATS) as opened:
                return _encode(opened, max_side=max_side, max_pixels=max_pixels)
    except (UnidentifiedImageError, Image.DecompressionBombError, OSError, ValueError, SyntaxError, EOFError):
        return None


def _encode(opened: Image.Image, *, max_side: int, max_pixels: int) -> EncodedImage | None:
    width, height = opened.size
    if width <= 0 or height <= 0 or width * height > max_pixels:
        return None
    opened.draft("RGB", (max_side, max_side))  # JPEG decodes at a reduced scale: less work, same result
    image = ImageOps.exif_transpose(opened) or opened
    image = image.convert("RGBA" if _has_alpha(image) else "RGB")
    image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    out = io.BytesIO()
    image.save(out, "WEBP", quality=_QUALITY, method=4)
    encoded = out.getvalue()
    return EncodedImage(id=hashlib.sha256(encoded).hexdigest(), data=encoded, width=image.width, height=image.height)


def _has_alpha(image: Image.Image) -> bool:
    return image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
