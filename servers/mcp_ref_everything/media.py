"""Tiny but real media files, built with the standard library at import time.

The content helpers of ``mcp_ref`` (``image``, ``audio``, ``blob_resource``) take raw ``bytes`` and
do the base64 encoding themselves, so this module only has to produce valid file bytes:

* ``PNG_PIXEL``: a 1x1 red PNG (signature, IHDR, IDAT, IEND chunks, each with its CRC).
* ``WAV_TONE``: 50 ms of a 440 Hz sine tone, 16-bit mono PCM at 8 kHz, written by ``wave``.

Building them here (instead of shipping binary asset files) keeps the package installable
anywhere and shows exactly what the bytes are.
"""

from __future__ import annotations

import io
import math
import struct
import wave
import zlib


def _png_chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC-32 of type + data."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_pixel(red: int, green: int, blue: int) -> bytes:
    """A 1x1 truecolour PNG of one colour."""
    # width, height, bit depth 8, colour type 2 (RGB), compression 0, filter 0, no interlace
    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    scanline = bytes((0, red, green, blue))  # filter byte 0, then one RGB pixel
    return (
        b"\x89PNG\r\n\x1a\n"
        + _png_chunk(b"IHDR", header)
        + _png_chunk(b"IDAT", zlib.compress(scanline))
        + _png_chunk(b"IEND", b"")
    )


def wav_tone(frequency: float = 440.0, seconds: float = 0.05, rate: int = 8000) -> bytes:
    """A short sine tone as a 16-bit mono PCM WAV file."""
    count = int(rate * seconds)
    samples = [round(8000 * math.sin(2 * math.pi * frequency * i / rate)) for i in range(count)]
    buffer = io.BytesIO()
    with wave.open(buffer, "wb") as out:
        out.setnchannels(1)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(struct.pack(f"<{count}h", *samples))
    return buffer.getvalue()


PNG_PIXEL = png_pixel(255, 0, 0)
WAV_TONE = wav_tone()
