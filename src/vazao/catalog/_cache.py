"""A per-user cache of the parsed catalogs: start-up reads each YAML file's data back with marshal
(~0.1 ms) instead of parsing it again (libyaml's safe loader builds Python objects at ~35 ms for all
the catalogs, a tenth of a one-shot command's CPU).

Keyed by the file's content and the interpreter (marshal's format is per Python version), so an
edited catalog or another Python never reads stale data. marshal, not pickle: it can only rebuild
plain values, never run code, and the catalogs hold only dicts, lists, strings, numbers, booleans
and None. Any failure (no home, a read-only or full disk, a damaged file) only costs the parse."""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

# Part of the file name: bumped when what is stored for a file changes shape.
FORMAT = 1


def cache_dir() -> Path:
    """The user's cache folder for vazao (the same place the report's script bundle is kept)."""
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "vazao"


def _file_name(stem: str, digest: str) -> str:
    return f"catalog-{stem}-{digest}-{sys.implementation.cache_tag}-v{FORMAT}.marshal"


def cache_path(name: str, text: str) -> Path:
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()
    return cache_dir() / _file_name(name.removesuffix(".yaml"), digest)


def _read(path: Path) -> tuple[bool, Any]:
    try:
        blob = path.read_bytes()
    except OSError:
        return False, None
    try:
        return True, marshal.loads(blob)
    except (EOFError, ValueError, TypeError):
        return False, None


def _write(path: Path, name: str, data: Any) -> None:
    try:
        blob = marshal.dumps(data)
    except ValueError:  # a value marshal cannot hold: no cache for this file, and no error
        return
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(blob)
        tmp.replace(path)  # atomic: a concurrent reader sees the old file or the whole new one
        _prune(path, name)


def _prune(kept: Path, name: str) -> None:
    """Drop this catalog's entries for earlier texts (an upgrade or an edit leaves one behind);
    another Python's entries stay, so two interpreters sharing the folder do not evict each other."""
    for old in kept.parent.glob(_file_name(name.removesuffix(".yaml"), "*")):
        if old != kept:
            with contextlib.suppress(OSError):
                old.unlink()


def cached_parse(name: str, text: str, parse: Callable[[str], Any]) -> Any:
    """parse(text), or the data a previous process parsed from the same text."""
    try:
        path = cache_path(name, text)
    except RuntimeError:  # no home folder to put a cache in
        return parse(text)
    found, data = _read(path)
    if found:
        return data
    data = parse(text)
    _write(path, name, data)
    return data
