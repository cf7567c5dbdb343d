"""Preview pictures are decoded within bounds and re-encoded; anything else is no picture."""

from __future__ import annotations

import hashlib
import io

import pytest
from PIL import Image

from enrichment.previews.images import ICON_SIDE, PICTURE_SIDE, image_path, is_image_id, reencode

PIXELS = 16_777_216


def encoded(image: Image.Image, fmt: str, **options: object) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def opened(data: bytes) -> Image.Image:
    return Image.open(io.BytesIO(data))


@pytest.mark.parametrize("fmt", ["PNG", "JPEG", "GIF", "WEBP", "BMP"])
def test_each_raster_format_becomes_a_webp_named_by_its_hash(fmt: str) -> None:
    result = reencode(
        encoded(Image.new("RGB", (120, 90), (200, 30, 30)), fmt), max_side=PICTURE_SIDE, max_pixels=PIXELS
    )
    assert result is not None
    assert opened(result.data).format == "WEBP"
    assert (result.width, result.height) == (120, 90)
    assert result.id == hashlib.sha256(result.data).hexdigest()
    assert result.path == f"/v1/previews/images/{result.id}.webp" == image_path(result.id)
    assert is_image_id(result.id)


def test_a_large_picture_is_scaled_to_the_longest_side() -> None:
    result = reencode(encoded(Image.new("RGB", (3000, 1500)), "JPEG"), max_side=PICTURE_SIDE, max_pixels=PIXELS)
    assert result is not None and (result.width, result.height) == (800, 400)


def test_an_icon_is_at_most_the_icon_side_and_keeps_its_transparency() -> None:
    icon = Image.new("RGBA", (128, 128), (0, 0, 0, 0))
    result = reencode(encoded(icon, "ICO", sizes=[(128, 128), (32, 32)]), max_side=ICON_SIDE, max_pixels=PIXELS)
    assert result is not None and max(result.width, result.height) <= ICON_SIDE
    assert opened(result.data).mode == "RGBA"


def test_more_pixels_than_allowed_is_no_picture_and_is_not_decoded() -> None:
    data = encoded(Image.new("1", (5000, 5000)), "PNG")
    assert reencode(data, max_side=PICTURE_SIDE, max_pixels=5000 * 5000 - 1) is None
    assert reencode(data, max_side=PICTURE_SIDE, max_pixels=5000 * 5000) is not None


def test_the_exif_orientation_is_applied_and_metadata_dropped() -> None:
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90° clockwise to display
    exif[0x010E] = "secret description"
    data = encoded(Image.new("RGB", (200, 100)), "JPEG", exif=exif.tobytes())
    result = reencode(data, max_side=PICTURE_SIDE, max_pixels=PIXELS)
    assert result is not None and (result.width, result.height) == (100, 200)
    assert b"secret" not in result.data and not opened(result.data).getexif()


def test_an_animation_keeps_its_first_frame_only() -> None:
    frames = [Image.new("RGB", (40, 40), colour) for colour in ((255, 0, 0), (0, 0, 255))]
    data = encoded(frames[0], "GIF", save_all=True, append_images=frames[1:], duration=100, loop=0)
    result = reencode(data, max_side=PICTURE_SIDE, max_pixels=PIXELS)
    assert result is not None
    still = opened(result.data)
    assert getattr(still, "n_frames", 1) == 1
    red, _, blue = still.convert("RGB").getpixel((20, 20))  # type: ignore[misc]
    assert red > 200 and blue < 50


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"<svg xmlns='http://www.w3.org/2000/svg'><script>alert(1)</script></svg>",
        b"<html><script>alert(1)</script></html>",
        b"%PDF-1.7\n",
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)),  # a PNG signature and garbage
    ],
)
def test_what_is_not_a_raster_picture_is_no_picture(data: bytes) -> None:
    assert reencode(data, max_side=PICTURE_SIDE, max_pixels=PIXELS) is None


def test_a_truncated_picture_is_no_picture() -> None:
    data = encoded(Image.new("RGB", (300, 300), (1, 2, 3)), "PNG")
    assert reencode(data[: len(data) // 2], max_side=PICTURE_SIDE, max_pixels=PIXELS) is None


def test_image_ids_are_64_lowercase_hex() -> None:
    assert is_image_id("a" * 64)
    assert not is_image_id("A" * 64)
    assert not is_image_id("a" * 63)
    assert not is_image_id("../" + "a" * 61)
