"""Base units and the parsing/formatting of human quantities.

Inside vazao every quantity is in base units: seconds, bytes, FLOP, FLOP/s,
bytes/s, USD. Decimal (GB = 1e9) and binary (GiB = 2**30) prefixes are kept apart.
"""

from __future__ import annotations

import math
import re

from vazao.errors import VazaoError
from vazao.limits import MAX_DURATION_S

KB = 1e3
MB = 1e6
GB = 1e9
TB = 1e12
KiB = 2**10
MiB = 2**20
GiB = 2**30
TiB = 2**40

TFLOPS = 1e12
MS = 1e-3
US = 1e-6

_BYTE_UNITS = {
    "": 1.0, "b": 1.0,
    "kb": KB, "mb": MB, "gb": GB, "tb": TB,
    "kib": KiB, "mib": MiB, "gib": GiB, "tib": TiB,
}
_TIME_UNITS = {"": 1.0, "s": 1.0, "ms": MS, "us": US, "µs": US, "m": 60.0, "min": 60.0, "h": 3600.0}
_COUNT_SUFFIX = {"": 1.0, "k": 1e3, "m": 1e6, "b": 1e9, "t": 1e12}
_NUM = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"


def _split(text: str, what: str) -> tuple[float, str]:
    m = re.fullmatch(rf"\s*{_NUM}\s*([a-zA-Zµ/]*)\s*", str(text)[:200])
    if not m:
        raise VazaoError(f"cannot read {what} from {str(text)[:60]!r}")
    return _finite(float(m.group(1)), what, text), m.group(2).lower()


def _finite(value: float, what: str, text) -> float:
    """A quantity is a finite number: 1e400 (inf once read) is out of range, not infinite."""
    if not math.isfinite(value):
        raise VazaoError(f"{what} {str(text)[:60]!r} is out of range")
    return float(value)


def parse_bandwidth(text: str | float | int) -> float:
    """'3.35TB/s' -> 3.35e12 bytes/s."""
    if isinstance(text, (int, float)):
        return _finite(float(text), "bandwidth", text)
    value, unit = _split(text, "a bandwidth")
    unit = unit.removesuffix("/s").removesuffix("ps")
    if unit not in _BYTE_UNITS:
        raise VazaoError(f"unknown bandwidth unit in {text!r} (use e.g. 3.35TB/s, 900GB/s)")
    return _finite(value * _BYTE_UNITS[unit], "bandwidth", text)


def parse_duration(text: str | float | int) -> float:
    """'500ms' -> 0.5, '2m' -> 120, a bare number is seconds."""
    if isinstance(text, (int, float)):
        seconds = _finite(float(text), "duration", text)
    else:
        value, unit = _split(text, "a duration")
        if unit not in _TIME_UNITS:
            raise VazaoError(f"unknown time unit {unit!r} in {str(text)[:60]!r} (use s, ms, us, m, h)")
        seconds = value * _TIME_UNITS[unit]
    if seconds > MAX_DURATION_S:
        raise VazaoError(f"duration {str(text)[:60]!r} is longer than {MAX_DURATION_S:g} s (about 31 years)")
    return seconds


def parse_count(text: str | float | int) -> float:
    """'7B' -> 7e9, '1T' -> 1e12, '128k' -> 128000, '1e12' -> 1e12."""
    if isinstance(text, (int, float)):
        return _finite(float(text), "count", text)
    value, unit = _split(text, "a count")
    if unit not in _COUNT_SUFFIX:
        raise VazaoError(f"unknown count suffix {unit!r} in {str(text)[:60]!r} (use k, M, B, T)")
    return _finite(value * _COUNT_SUFFIX[unit], "count", text)


def fmt_bytes(n: float, binary: bool = False) -> str:
    if n is None or (isinstance(n, float) and math.isnan(n)):
        return "-"
    steps = (("TiB", TiB), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)) if binary else (
        ("TB", TB), ("GB", GB), ("MB", MB), ("kB", KB))
    for name, size in steps:
        if abs(n) >= size:
            return f"{n / size:.3g} {name}" if abs(n) / size < 100 else f"{n / size:,.0f} {name}"
    return f"{n:.0f} B"


def fmt_seconds(s: float | None) -> str:
    if s is None or math.isinf(s):
        return "-"
    if s >= 1:
        return f"{s:.3g} s" if s < 100 else f"{s:,.0f} s"
    if s >= MS:
        return f"{s / MS:.3g} ms"
    return f"{s / US:.3g} µs"


def fmt_rate(x: float | None, unit: str = "") -> str:
    if x is None:
        return "-"
    text = f"{x:,.0f}" if x >= 100 else f"{x:.3g}"
    return f"{text} {unit}".strip()
