"""The Vega side of the charts, shared by the file writers (export) and the HTML pages (html): vl-convert,
the Vega-Lite version altair writes, the inlined JavaScript bundle and a chart's spec. Kept apart so that
export and html both import it and neither imports the other. vl-convert is imported on first use (the
`report` extra)."""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path
from typing import Any

from vazao.errors import VazaoError
from vazao.report.plots import EXTRA, altair


def vl_convert():
    try:
        import vl_convert as vlc
    except ImportError:
        raise VazaoError(EXTRA) from None
    return vlc


def vl_version() -> str:
    """The Vega-Lite version altair writes ('6.4'), the one the inlined libraries must match."""
    return altair().SCHEMA_VERSION.lstrip("v").rsplit(".", 1)[0]


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "vazao"


_BUNDLE: dict[str, str] = {}


def javascript_bundle() -> str:
    """Vega, Vega-Lite and vega-embed in one script (about 0.9 MB). vl-convert takes ~2.5 s to bundle
    it, so it is kept in memory and in the user's cache, keyed by the vl-convert and Vega-Lite versions."""
    vlc = vl_convert()
    key = f"{vlc.__version__}-{vl_version()}"
    if key in _BUNDLE:
        return _BUNDLE[key]
    path = _cache_dir() / f"vega-bundle-{key}.js"
    text = None
    with contextlib.suppress(OSError):
        text = path.read_text(encoding="utf-8")
    if not text:
        text = vlc.javascript_bundle(vl_version=vl_version())
        try:  # a read-only home only costs the next run the 2.5 s again
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(f".{hashlib.sha1(text.encode()).hexdigest()[:8]}.tmp")
            tmp.write_text(text, encoding="utf-8")
            tmp.replace(path)
        except OSError:
            pass
    _BUNDLE[key] = text
    return text


def spec(chart: Any) -> dict:
    """The chart's Vega-Lite spec with its data inlined."""
    return chart.to_dict()
