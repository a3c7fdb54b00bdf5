"""The catalogs are read with libyaml's safe loader when PyYAML has it (start-up: a tenth of the
pure-Python loader's time); both must give the same data for every shipped file."""

from __future__ import annotations

from importlib import resources

import yaml

from vazao.catalog._load import SAFE_LOADER


def test_c_and_python_loaders_agree_on_every_catalog():
    data = resources.files("vazao.catalog").joinpath("data")
    names = [f.name for f in data.iterdir() if f.name.endswith(".yaml")]
    assert "hardware.yaml" in names and len(names) >= 7
    for name in names:
        text = data.joinpath(name).read_text(encoding="utf-8")
        assert yaml.load(text, Loader=SAFE_LOADER) == yaml.load(text, Loader=yaml.SafeLoader), name  # noqa: S506
