"""Tell text from binary, guess a binary file's type, format sizes: for short refusal messages."""
from __future__ import annotations

import mimetypes

SNIFF_BYTES = 8192

_MAGIC: list[tuple[int, bytes, str]] = [
    (0, b"\x89PNG\r\n\x1a\n", "PNG image"),
    (0, b"\xff\xd8\xff", "JPEG image"),
    (0, b"GIF8", "GIF image"),
    (0, b"%PDF", "PDF document"),
    (0, b"PK\x03\x04", "ZIP archive (or docx/jar/wheel)"),
    (0, b"\x1f\x8b", "gzip archive"),
    (0, b"BZh", "bzip2 archive"),
    (0, b"\xfd7zXZ\x00", "xz archive"),
    (0, b"7z\xbc\xaf\x27\x1c", "7z archive"),
    (0, b"\x7fELF", "ELF executable/library"),
    (0, b"MZ", "Windows executable"),
    (0, b"\xcf\xfa\xed\xfe", "Mach-O executable"),
    (0, b"SQLite format 3\x00", "SQLite database"),
    (0, b"GGUF", "GGUF model file"),
    (0, b"\x00asm", "WebAssembly module"),
    (0, b"ID3", "MP3 audio"),
    (0, b"OggS", "Ogg media"),
    (0, b"\x93NUMPY", "NumPy array"),
    (257, b"ustar", "tar archive"),
]


def is_binary(sample: bytes) -> bool:
    if b"\x00" in sample:
        return True
    if not sample:
        return False
    # Control bytes other than common whitespace/escape are rare in text.
    controls = sum(1 for b in sample if b < 32 and b not in (9, 10, 12, 13, 8, 27))
    return controls / len(sample) > 0.3


def guess_type(name: str, sample: bytes) -> str:
    if sample[:4] == b"RIFF" and sample[8:12] in (b"WEBP", b"WAVE", b"AVI "):
        return {b"WEBP": "WebP image", b"WAVE": "WAV audio", b"AVI ": "AVI video"}[sample[8:12]]
    for offset, magic, label in _MAGIC:
        if sample[offset:offset + len(magic)] == magic:
            return label
    mime, _ = mimetypes.guess_type(name)
    return mime or "unknown binary data"


def human_size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{int(size)} B" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{n} B"
