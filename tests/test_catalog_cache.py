"""The parsed-catalog cache (catalog/_cache.py): a hit gives the same data as parsing, an edited
text or a damaged, unwritable or missing cache only costs the parse."""

from __future__ import annotations

import os
import stat
from importlib import resources

import pytest

from vazao.catalog import _cache
from vazao.catalog._load import parse_yaml


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "vazao"


def _catalogs() -> list[tuple[str, str]]:
    data = resources.files("vazao.catalog").joinpath("data")
    return [(f.name, f.read_text(encoding="utf-8")) for f in data.iterdir() if f.name.endswith(".yaml")]


def _counting(calls: list[str]):
    def parse(text: str):
        calls.append(text)
        return parse_yaml(text)
    return parse


def test_every_catalog_reads_back_equal_to_its_parse(home):
    names = _catalogs()
    assert len(names) >= 7
    for name, text in names:
        calls: list[str] = []
        first = _cache.cached_parse(name, text, _counting(calls))
        second = _cache.cached_parse(name, text, _counting(calls))
        assert len(calls) == 1, name  # the second came from the cache
        assert first == second == parse_yaml(text), name
    assert len(list(home.glob("catalog-*.marshal"))) == len(names)


def test_an_edited_text_is_parsed_again_and_replaces_the_old_entry(home):
    calls: list[str] = []
    assert _cache.cached_parse("t.yaml", "a: 1\n", _counting(calls)) == {"a": 1}
    assert _cache.cached_parse("t.yaml", "a: 2\n", _counting(calls)) == {"a": 2}
    assert len(calls) == 2
    assert len(list(home.glob("catalog-t-*.marshal"))) == 1


def test_a_damaged_entry_is_parsed_again_and_rewritten(home):
    text = "a: [1, 2.5, null, true]\n"
    _cache.cached_parse("t.yaml", text, parse_yaml)
    path = _cache.cache_path("t.yaml", text)
    path.write_bytes(b"\xff not marshal")
    calls: list[str] = []
    assert _cache.cached_parse("t.yaml", text, _counting(calls)) == {"a": [1, 2.5, None, True]}
    assert len(calls) == 1
    assert _cache.cached_parse("t.yaml", text, _counting(calls)) == {"a": [1, 2.5, None, True]}
    assert len(calls) == 1


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes through a read-only mode")
def test_a_read_only_cache_folder_only_costs_the_parse(home):
    home.mkdir(parents=True)
    home.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        calls: list[str] = []
        for _ in range(2):
            assert _cache.cached_parse("t.yaml", "a: 1\n", _counting(calls)) == {"a": 1}
        assert len(calls) == 2
    finally:
        home.chmod(stat.S_IRWXU)


def test_a_cache_root_that_is_a_file_only_costs_the_parse(tmp_path, monkeypatch):
    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))
    assert _cache.cached_parse("t.yaml", "a: 1\n", parse_yaml) == {"a": 1}


def test_no_home_folder_only_costs_the_parse(monkeypatch):
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)

    def no_home():
        raise RuntimeError("Could not determine home directory.")

    monkeypatch.setattr(_cache.Path, "home", staticmethod(no_home))
    assert _cache.cached_parse("t.yaml", "a: 1\n", parse_yaml) == {"a": 1}
