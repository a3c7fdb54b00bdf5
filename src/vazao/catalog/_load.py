"""Shared loading helpers for the catalog data files."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import yaml

from vazao import limits
from vazao.catalog._cache import cached_parse
from vazao.errors import VazaoError

# libyaml's loader where PyYAML was built with it: the same data (the catalogs are plain YAML, and a test
# compares both loaders on every file) in a tenth of the time of the pure-Python one
SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@cache
def load_yaml(name: str) -> Any:
    """Parse one file of catalog/data once per process (and once per edit of it, see _cache)."""
    text = resources.files("vazao.catalog").joinpath("data", name).read_text(encoding="utf-8")
    return cached_parse(name, text, parse_yaml)


def parse_yaml(text: str) -> Any:
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)


def norm(name: str) -> str:
    """Normalise a label for look-up: lower case, '_', ' ' and '.' treated like '-'."""
    s = name.strip().lower()
    s = re.sub(r"[\s_]+", "-", s)
    return re.sub(r"-+", "-", s).strip("-")




def check_label(kind: str, name: object) -> str:
    """A label a user typed, before any look-up: a string of sane length (a 10,000-character
    'GPU' is refused in one short line, not echoed back whole)."""
    if not isinstance(name, str) or not name.strip():
        raise VazaoError(f"{kind}: give a name, got {name!r}"[:120])
    if len(name) > limits.MAX_LABEL:
        raise VazaoError(f"unknown {kind} {name[:40]!r}… ({len(name):,} characters)")
    return name
