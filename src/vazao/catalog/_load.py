"""Shared loading helpers for the catalog data files."""

from __future__ import annotations

import re
from functools import cache
from importlib import resources
from typing import Any

import yaml


@cache
def load_yaml(name: str) -> Any:
    """Parse one file of catalog/data once per process."""
    text = resources.files("vazao.catalog").joinpath("data", name).read_text(encoding="utf-8")
    return yaml.safe_load(text)


def norm(name: str) -> str:
    """Normalise a label for look-up: lower case, '_', ' ' and '.' treated like '-'."""
    s = name.strip().lower()
    s = re.sub(r"[\s_]+", "-", s)
    return re.sub(r"-+", "-", s).strip("-")
