"""Reading a user's text input with errors that name the file and the problem."""

from __future__ import annotations

from pathlib import Path

from ..system import InputError


def read_text_input(path, what: str = "input") -> str:
    """The text of ``path`` (UTF-8); :class:`InputError` naming the file for a missing or unreadable
    file, a binary file, or bytes that are not UTF-8 (with the line they are on)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except IsADirectoryError:
        raise InputError(f"{what} {path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{what} {path}: {exc.strerror or exc}") from None
    if b"\x00" in data:
        raise InputError(f"{what} {path}: a binary file (NUL bytes), not a text input")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[:exc.start].count(b"\n") + 1
        raise InputError(f"{what} {path}:{line}: byte 0x{data[exc.start]:02x} is not UTF-8 text; "
                         f"is this the right file?") from None
