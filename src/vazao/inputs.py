"""The one layer every reader of user input goes through: files (size, encoding, nesting depth,
YAML aliases), output paths, and numbers and lists given on the command line or in files.

Every failure is a VazaoError whose message names the input and the problem in one line; the CLI
turns it into exit code 2. Limits are checked before any work starts, so a hostile input costs
at most what the limit allows (memory bounded by `max_bytes`, time by the parse of that much)."""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import yaml

from vazao import limits
from vazao.errors import VazaoError


def _show(path: Path | str) -> str:
    s = str(path)
    return s if len(s) <= 120 else s[:60] + "…" + s[-40:]


# ---- paths -------------------------------------------------------------------------------------


_PARAMETER = re.compile(r"[a-z_][a-z0-9_]*(?= \(|$)")


def _bad(what: str, message: str) -> VazaoError:
    """A refusal of the value `what` names. When `what` is a parameter's name (`count`, or `count
    (accelerators)`), the error carries it, so the CLI can name the flag instead (VazaoError.parameter)."""
    m = _PARAMETER.match(what)
    return VazaoError(message, parameter=m.group(0) if m else None)


def input_file(path: Path | str, what: str = "input file", *, allow_special: bool = False) -> Path:
    """A path a user named to be read: it exists and is a regular file (or, with allow_special,
    a pipe or character device such as /dev/stdin). Folders, missing files, over-long names and
    unreadable files are refused with a message that says which."""
    p = Path(path)
    try:
        st = p.stat()
    except FileNotFoundError:
        raise VazaoError(f"{what} {_show(p)} does not exist") from None
    except NotADirectoryError:
        raise VazaoError(f"{what} {_show(p)}: a part of the path is not a folder") from None
    except OSError as exc:
        raise VazaoError(f"{what} {_show(p)} cannot be read: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise VazaoError(f"{what} {_show(p)} is a folder, not a file")
    if not stat.S_ISREG(st.st_mode) and not allow_special:
        raise VazaoError(f"{what} {_show(p)} is not a regular file")
    if not os.access(p, os.R_OK):
        raise VazaoError(f"{what} {_show(p)} is not readable")
    return p


class OutputExists(VazaoError):
    """An output file already there, where the caller asked not to replace one (force=False)."""

    def __init__(self, what: str, shown: str):
        self.what, self.shown = what, shown
        super().__init__(f"{what} {shown} exists; refusing to overwrite it (force=False)")


def _stat_for_write(path: Path | str, what: str) -> tuple[Path, os.stat_result | None]:
    """The path and its stat (None: nothing there yet); any other failure to look is one line."""
    p = Path(path)
    try:
        return p, p.stat()
    except FileNotFoundError:
        return p, None
    except OSError as exc:
        raise VazaoError(f"{what} {_show(p)} cannot be written: {exc.strerror or exc}") from None


def output_folder(path: Path | str, what: str = "output folder", *, force: bool = False) -> Path:
    """A folder a user named to be written into, checked before any work: a new one (its parent exists and
    is writable), an empty one, or (force) one with files in it, whose files of the same names are replaced."""
    p, st = _stat_for_write(path, what)
    if st is None:
        parent = p.parent if str(p.parent) else Path(".")
        if not parent.is_dir():
            raise VazaoError(f"{what} {_show(p)}: folder {_show(parent)} does not exist")
        if not os.access(parent, os.W_OK):
            raise VazaoError(f"{what} {_show(p)} cannot be created: {_show(parent)} is not writable")
        return p
    if not stat.S_ISDIR(st.st_mode):
        raise VazaoError(f"{what} {_show(p)} is a file; name a folder")
    if not os.access(p, os.W_OK):
        raise VazaoError(f"{what} {_show(p)} is not writable")
    if not force and any(p.iterdir()):
        raise OutputExists(what, _show(p))
    return p


def output_file(path: Path | str, what: str = "output file", *, force: bool = True) -> Path:
    """A path a user named to be written, checked before any work: its folder exists and is a
    folder, it is not itself a folder, and (unless force) it does not already exist."""
    p, st = _stat_for_write(path, what)
    if st is not None:
        if stat.S_ISDIR(st.st_mode):
            raise VazaoError(f"{what} {_show(p)} is a folder; name a file")
        if stat.S_ISREG(st.st_mode) and not force:
            raise OutputExists(what, _show(p))
    parent = p.parent if str(p.parent) else Path(".")
    if not parent.is_dir():
        raise VazaoError(f"{what} {_show(p)}: folder {_show(parent)} does not exist")
    if not os.access(parent if st is None else p, os.W_OK):
        raise VazaoError(f"{what} {_show(p)} is not writable")
    return p


def write_text(path: Path | str, text: str, what: str = "output file") -> None:
    """Write a whole file. Regular files go through a temporary name and a rename, so an
    interrupted write never leaves half a result; devices (/dev/stdout, /dev/full) are written
    in place. A full disk or a vanished folder is a VazaoError, not a traceback."""
    p = Path(path)
    try:
        special = p.exists() and not p.is_file()
        if special:
            with open(p, "w", encoding="utf-8") as fh:
                fh.write(text)
            return
        tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, p)
        finally:
            if tmp.exists():
                tmp.unlink()
    except OSError as exc:
        raise VazaoError(f"cannot write {what} {_show(p)}: {exc.strerror or exc}") from None


# ---- whole files ---------------------------------------------------------------------------------


def read_bytes(path: Path | str, what: str = "input file", *, max_bytes: int = limits.MAX_FILE_BYTES) -> bytes:
    """At most max_bytes of a file; a larger one is refused without reading it all."""
    p = input_file(path, what, allow_special=True)
    try:
        with open(p, "rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise VazaoError(f"{what} {_show(p)} cannot be read: {exc.strerror or exc}") from None
    if len(data) > max_bytes:
        raise VazaoError(f"{what} {_show(p)} is larger than {max_bytes // 2**20} MiB")
    return data


def decode(data: bytes, what: str) -> str:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise VazaoError(f"{what} is not UTF-8 text (byte {exc.start})") from None
    return text.removeprefix("\ufeff")


def read_text(path: Path | str, what: str = "input file", *, max_bytes: int = limits.MAX_FILE_BYTES) -> str:
    return decode(read_bytes(path, what, max_bytes=max_bytes), f"{what} {_show(path)}")


# ---- JSON ----------------------------------------------------------------------------------------


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    v = float(text)
    if math.isinf(v):
        raise ValueError(f"number {text[:40]} is out of range")
    return v


def _depth(obj: Any, limit: int) -> int:
    """Nesting depth of containers, walked without recursion."""
    deepest = 0
    stack = [(obj, 1)]
    while stack:
        node, d = stack.pop()
        if isinstance(node, dict):
            children = node.values()
        elif isinstance(node, list):
            children = node
        else:
            continue
        deepest = max(deepest, d)
        if deepest > limit:
            return deepest
        stack.extend((c, d + 1) for c in children if isinstance(c, (dict, list)))
    return deepest


def loads_json(text: str, what: str, *, max_depth: int = limits.MAX_DEPTH) -> Any:
    """Strict JSON: no NaN/Infinity, no out-of-range floats, nesting at most max_depth."""
    try:
        obj = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except RecursionError:
        raise VazaoError(f"{what} nests deeper than {max_depth} levels") from None
    except ValueError as exc:  # JSONDecodeError is a ValueError; so are int strings over 4300 digits
        raise VazaoError(f"{what} is not valid JSON: {str(exc)[:160]}") from None
    if _depth(obj, max_depth) > max_depth:
        raise VazaoError(f"{what} nests deeper than {max_depth} levels")
    return obj


def read_json(path: Path | str, what: str = "JSON file", *, max_bytes: int = limits.MAX_FILE_BYTES) -> Any:
    return loads_json(read_text(path, what, max_bytes=max_bytes), f"{what} {_show(path)}")


# ---- YAML ----------------------------------------------------------------------------------------


class GuardedLoader(yaml.SafeLoader):
    """SafeLoader whose constructors never leak an IndexError, KeyError or AttributeError: a tagged
    scalar PyYAML cannot build ('!!float' with no value, '!!bool', '!!timestamp x') becomes a
    ConstructorError, which loads_yaml reports as invalid YAML at that line. The default loader of
    loads_yaml/read_yaml; subclass it for a reader with constructors of its own."""

    def construct_object(self, node: yaml.Node, deep: bool = False) -> Any:
        try:
            return super().construct_object(node, deep)
        except (IndexError, KeyError, AttributeError):
            shown = repr(node.value) if isinstance(node, yaml.ScalarNode) else type(node).__name__
            raise yaml.constructor.ConstructorError(
                None, None, f"cannot build a {node.tag.rsplit(':', 1)[-1]} from {shown[:40]}", node.start_mark,
            ) from None


# YAML 1.1 (PyYAML) reads a number in exponent form as a float only with a dot and a signed exponent ("1.0e-05"):
# "1e-5", "5E3" and "2.5e3" stay strings, and a profile file's `per_sequence_overhead_s: 1e-5` would be refused as
# not a number. YAML 1.2 (and JSON) read them as floats; so do user files here, and what vazao writes quotes a
# string of that form (dump_yaml), for this reader and for the YAML 1.2 readers of its artefacts (Kubernetes,
# Compose). yaml.safe_dump writes floats themselves in the 1.1 form, which both read.
_EXPONENT_FLOAT = ("tag:yaml.org,2002:float",
                   re.compile(r"^[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9_]+)[eE][-+]?[0-9]+$"),
                   list("-+.0123456789"))  # tag, pattern, the characters such a scalar can start with
GuardedLoader.add_implicit_resolver(*_EXPONENT_FLOAT)


class _Dumper(yaml.SafeDumper):
    """SafeDumper that quotes a string GuardedLoader (or a YAML 1.2 reader) would read as a number."""


_Dumper.add_implicit_resolver(*_EXPONENT_FLOAT)


def dump_yaml(data: Any, **kwargs: Any) -> str:
    """yaml.safe_dump, with strings such as "1e5" quoted (see _EXPONENT_FLOAT)."""
    return yaml.dump(data, Dumper=_Dumper, **kwargs)


def dump_yaml_all(documents: list, **kwargs: Any) -> str:
    return yaml.dump_all(documents, Dumper=_Dumper, **kwargs)


def _check_tree(node: yaml.Node, what: str, max_depth: int, max_nodes: int) -> None:
    """Refuse deep nesting and alias bombs on the composed node graph, before anything is built:
    an alias is the same node object seen again, so the expanded size is counted per object."""
    sizes: dict[int, int] = {}
    # iterative post-order walk; depth is the path length, counted as we descend
    stack: list[tuple[yaml.Node, int, bool]] = [(node, 1, False)]
    on_path: set[int] = set()
    while stack:
        n, d, done = stack.pop()
        key = id(n)
        if done:
            on_path.discard(key)
            children = _children(n)
            total = 1 + sum(sizes[id(c)] for c in children)
            if total > max_nodes:
                raise VazaoError(f"{what} expands to more than {max_nodes:,} nodes (YAML aliases?)")
            sizes[key] = total
            continue
        if key in sizes:
            continue
        if key in on_path:
            raise VazaoError(f"{what} refers to itself (a recursive YAML alias)")
        if d > max_depth:
            raise VazaoError(f"{what} nests deeper than {max_depth} levels")
        children = _children(n)
        if not children:
            sizes[key] = 1
            continue
        on_path.add(key)
        stack.append((n, d, True))
        stack.extend((c, d + 1, False) for c in children if id(c) not in sizes)


def _children(n: yaml.Node) -> list[yaml.Node]:
    if isinstance(n, yaml.SequenceNode):
        return list(n.value)
    if isinstance(n, yaml.MappingNode):
        return [x for kv in n.value for x in kv]
    return []


def loads_yaml(text: str, what: str, *, loader: type | None = None, max_depth: int = limits.MAX_DEPTH,
               max_nodes: int = limits.MAX_YAML_NODES) -> Any:
    """Safe YAML, one document, with nesting and alias expansion bounded before construction.
    Non-finite floats (.inf, .nan) are refused: no count, size or price is infinite."""
    try:
        ld = (loader or GuardedLoader)(text)
        try:
            node = ld.get_single_node()
            if node is None:
                return None
            _check_tree(node, what, max_depth, max_nodes)
            data = ld.construct_document(node)
        finally:
            ld.dispose()
    except RecursionError:
        raise VazaoError(f"{what} nests deeper than {max_depth} levels") from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark else ""
        raise VazaoError(f"{what} is not valid YAML{where}: {exc.problem or exc}") from None
    except yaml.YAMLError as exc:
        raise VazaoError(f"{what} is not valid YAML: {str(exc)[:160]}") from None
    except (ValueError, TypeError, OverflowError) as exc:
        raise VazaoError(f"{what} holds a value YAML cannot build: {str(exc)[:160]}") from None
    bad = _first_non_finite(data)
    if bad is not None:
        raise VazaoError(f"{what} holds a non-finite number ({bad})")
    return data


def _first_non_finite(obj: Any) -> str | None:
    stack = [obj]
    while stack:
        x = stack.pop()
        if isinstance(x, float) and not math.isfinite(x):
            return repr(x)
        if isinstance(x, dict):
            stack.extend(x.values())
        elif isinstance(x, list):
            stack.extend(x)
    return None


def read_yaml(path: Path | str, what: str = "YAML file", *, loader: type | None = None,
              max_bytes: int = limits.MAX_FILE_BYTES) -> Any:
    return loads_yaml(read_text(path, what, max_bytes=max_bytes), f"{what} {_show(path)}", loader=loader)


# ---- line-oriented logs ----------------------------------------------------------------------------


def iter_lines(path: Path | str, what: str = "log", *, max_line_bytes: int = limits.MAX_LINE_BYTES,
               max_bytes: int = limits.MAX_LOG_BYTES) -> Iterator[tuple[int, str | None]]:
    """(line number, text) for each line of a UTF-8 log, read in bounded memory. A line that is
    not UTF-8 or longer than max_line_bytes yields None as its text (the caller counts it as
    malformed); more than max_bytes in all is a VazaoError."""
    p = input_file(path, what, allow_special=True)
    seen = 0
    try:
        with open(p, "rb") as fh:
            n = 0
            while True:
                raw = fh.readline(max_line_bytes + 1)
                if not raw:
                    return
                n += 1
                seen += len(raw)
                if seen > max_bytes:
                    raise VazaoError(f"{what} {_show(p)} is larger than {max_bytes // 2**30} GiB")
                if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):  # skip the rest of the over-long line
                        raw = fh.readline(max_line_bytes + 1)
                        seen += len(raw)
                        if seen > max_bytes:
                            raise VazaoError(f"{what} {_show(p)} is larger than {max_bytes // 2**30} GiB")
                    yield n, None
                    continue
                try:
                    yield n, raw.decode("utf-8").removeprefix("\ufeff")
                except UnicodeDecodeError:
                    yield n, None
    except OSError as exc:
        raise VazaoError(f"{what} {_show(p)} cannot be read: {exc.strerror or exc}") from None


# ---- numbers and lists -----------------------------------------------------------------------------


def number(value: Any, what: str, *, minimum: float | None = None, maximum: float | None = None,
           integer: bool = False, exclusive_min: bool = False) -> float | int:
    """A finite number within bounds, from a str, int or float. With integer=True the value must
    be whole (1.5 is refused, '1e3' is 1000); bools are not numbers."""
    if isinstance(value, bool) or value is None:
        raise _bad(what, f"{what} must be a number, got {value!r}")
    if isinstance(value, str):
        s = value.strip().replace("_", "")
        if not s or len(s) > 64:
            raise _bad(what, f"{what} must be a number, got {value[:40]!r}")
        try:
            v: float | int = int(s)
        except ValueError:
            try:
                v = float(s)
            except ValueError:
                raise _bad(what, f"{what} must be a number, got {value[:40]!r}") from None
    elif isinstance(value, (int, float)):
        v = value
    else:
        raise _bad(what, f"{what} must be a number, got {type(value).__name__}")
    if isinstance(v, float) and not math.isfinite(v):
        raise _bad(what, f"{what} must be a finite number, got {value!r}")
    if integer:
        if isinstance(v, float):
            if not v.is_integer():
                raise _bad(what, f"{what} must be a whole number, got {value!r}")
            if abs(v) > limits.MAX_INT:
                raise _bad(what, f"{what} is out of range: {value!r}")
            v = int(v)
        if abs(v) > limits.MAX_INT:
            raise _bad(what, f"{what} is out of range: {str(value)[:40]}")
    elif isinstance(v, int) and abs(v) > 1e300:
        raise _bad(what, f"{what} is out of range: {str(value)[:40]}")
    if minimum is not None and (v < minimum or (exclusive_min and v == minimum)):
        rel = "greater than" if exclusive_min else "at least"
        raise _bad(what, f"{what} must be {rel} {_fmt(minimum)}, got {_fmt(v)}")
    if maximum is not None and v > maximum:
        raise _bad(what, f"{what} must be at most {_fmt(maximum)}, got {_fmt(v)}")
    return v


def positive(value: Any, what: str, *, maximum: float | None = None, integer: bool = False) -> float | int:
    return number(value, what, minimum=0, exclusive_min=True, maximum=maximum, integer=integer)


def _fmt(v: float | int) -> str:
    if isinstance(v, int) or (isinstance(v, float) and v.is_integer() and abs(v) < 1e15):
        return f"{int(v):,}"
    return f"{v:g}"


def months(value: Any, what: str, *, maximum: int = limits.MAX_SUPPORT_HORIZON_MONTHS) -> int:
    """A span in whole months: '24mo', '24m', '2y', '2yr' or a bare number of months ('18'), 0 to maximum."""
    text = str(value).strip().lower() if value is not None and not isinstance(value, bool) else ""
    factor = 1
    for suffix, f in (("months", 1), ("month", 1), ("mo", 1), ("m", 1), ("years", 12), ("year", 12),
                      ("yr", 12), ("y", 12)):
        if text.endswith(suffix) and text[:-len(suffix)].strip():
            text, factor = text[:-len(suffix)].strip(), f
            break
    if not text or len(text) > 12:
        raise _bad(what, f"{what}: a number of months or years, e.g. 24mo or 2y; got {str(value)[:40]!r}")
    n = int(number(text, what, minimum=0, integer=True)) * factor
    if n > maximum:
        raise _bad(what, f"{what} must be at most {maximum:,} months, got {n:,}")
    return n


def split_list(text: str, what: str, *, max_items: int = 256) -> list[str]:
    """A comma-separated list: no empty items ('1,,2', '', ','), at most max_items."""
    if text is None or not str(text).strip():
        raise _bad(what, f"{what} is empty; give a comma-separated list")
    items = [x.strip() for x in str(text).split(",")]
    if any(not x for x in items):
        raise _bad(what, f"{what} has an empty item: {str(text)[:60]!r}")
    if len(items) > max_items:
        raise _bad(what, f"{what} has {len(items)} items; at most {max_items}")
    return items


def number_list(text: str, what: str, *, minimum: float | None = None, maximum: float | None = None,
                integer: bool = False, exclusive_min: bool = True, max_items: int = 256) -> list:
    """'1,2,4' -> [1, 2, 4]; each item through number() with the same bounds (positive by default)."""
    return [number(x, what, minimum=0 if minimum is None else minimum, maximum=maximum, integer=integer,
                   exclusive_min=exclusive_min if minimum is None else False)
            for x in split_list(text, what, max_items=max_items)]


def input_stream(path: Path | str, what: str = "log") -> Path:
    """A path a user named as a file to read: a regular file or a pipe (`<(zcat log.gz)`, /dev/stdin
    fed by a pipe). Devices are refused up front ("not a regular file"): /dev/null is no config and
    /dev/zero would otherwise be read up to the size bound. A pipe is still read within that bound."""
    p = Path(path)
    try:
        mode = p.stat().st_mode
    except OSError:
        return input_file(p, what)  # says which: missing, too long a name, unreadable
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return input_file(p, what, allow_special=True)
    return input_file(p, what)


def loads_json_line(text: str, n: int) -> Any:
    """One line of a JSONL log through loads_json; a bad line raises ValueError with the short
    reason ('invalid JSON', 'nests deeper than 64 levels'), for the caller to count or report."""
    try:
        return loads_json(text, f"line {n}")
    except VazaoError as exc:
        msg = str(exc)
        raise ValueError("invalid JSON" if "not valid JSON" in msg else msg.removeprefix(f"line {n} ")) from None
