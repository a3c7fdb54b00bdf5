"""The shared input layer: every hostile family refused with one VazaoError, nothing else escapes."""

from __future__ import annotations

import contextlib
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from vazao import inputs
from vazao.errors import VazaoError

BOMB = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]\n" for p, c in zip("abcdefgh", "bcdefghi", strict=True))


def err(fn, *args, **kw) -> str:
    with pytest.raises(VazaoError) as exc:
        fn(*args, **kw)
    msg = str(exc.value)
    assert "\n" not in msg
    return msg


def test_yaml_alias_bomb_refused_before_it_is_built():
    assert "expands to more than" in err(inputs.loads_yaml, BOMB, "workload w.yaml")


def test_yaml_small_aliases_still_work():
    assert inputs.loads_yaml("a: &x [1, 2]\nb: *x\n", "w") == {"a": [1, 2], "b": [1, 2]}


@pytest.mark.parametrize("text", ["[" * 5000, "a:\n" + "".join("  " * i + "- \n" for i in range(200))])
def test_yaml_deep_nesting(text):
    assert "deeper than 64" in err(inputs.loads_yaml, text, "w")


def test_yaml_recursive_alias_and_non_finite():
    assert "refers to itself" in err(inputs.loads_yaml, "a: &x [*x]\n", "w")
    assert "non-finite" in err(inputs.loads_yaml, "rate: .inf\n", "w")
    assert "line 2" in err(inputs.loads_yaml, "a: [1, 2\n", "w")


@pytest.mark.parametrize("text,needle", [
    ("[" * 100_000, "deeper"), ("[" * 65 + "]" * 65, "deeper"), ("[NaN]", "NaN"), ("[1e400]", "out of range"),
    ("{", "not valid JSON"), ("1" * 5000, "not valid JSON"),
])
def test_json_hostile(text, needle):
    assert needle in err(inputs.loads_json, text, "config.json")


def test_json_depth_64_is_fine():
    assert inputs.loads_json("[" * 64 + "]" * 64, "x") is not None


def test_files(tmp_path):
    assert "is a folder" in err(inputs.read_text, tmp_path, "workload")
    assert "does not exist" in err(inputs.read_text, tmp_path / "nope.yaml", "workload")
    assert "not a regular file" in err(inputs.input_file, "/dev/null", "workload")
    assert "too long" in err(inputs.read_text, "x" * 10_000, "model")
    bad = tmp_path / "bad.yaml"
    bad.write_bytes(b"name: \xff\xfe\n")
    assert "not UTF-8" in err(inputs.read_text, bad, "workload")
    big = tmp_path / "big.yaml"
    big.write_bytes(b"x" * 2000)
    assert "larger than" in err(inputs.read_text, big, "workload", max_bytes=1000)


def test_dev_zero_is_bounded():
    assert "larger than" in err(inputs.read_bytes, "/dev/zero", "workload", max_bytes=1 << 20)


def test_iter_lines_marks_bad_lines(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_bytes(b'{"a": 1}\n\xff\n' + b"y" * 3000 + b"\n{}\n")
    got = list(inputs.iter_lines(p, "log", max_line_bytes=1000))
    assert got == [(1, '{"a": 1}\n'), (2, None), (3, None), (4, "{}\n")]


def test_output_paths(tmp_path):
    assert "is a folder" in err(inputs.output_file, tmp_path, "-o")
    assert "does not exist" in err(inputs.output_file, tmp_path / "no" / "x.json", "-o")
    f = tmp_path / "x.json"
    f.write_text("kept")
    refused = err(inputs.output_file, f, "-o", force=False)
    assert "exists; refusing to overwrite it (force=False)" in refused and "--force" not in refused
    assert inputs.output_file(f, "-o") == f
    inputs.write_text(f, "new")
    assert f.read_text() == "new" and os.listdir(tmp_path) == ["x.json"]


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
def test_write_to_full_device():
    assert "cannot write" in err(inputs.write_text, "/dev/full", "x" * 100_000, "-o")


@pytest.mark.parametrize("value,kw,needle", [
    ("1.5", {"integer": True}, "whole number"), ("nan", {}, "finite"), ("inf", {}, "finite"),
    ("1e400", {}, "finite"), ("99999999999999999999999", {"integer": True}, "out of range"),
    ("", {}, "must be a number"), ("7y", {}, "must be a number"), (True, {}, "must be a number"),
    ("-1", {"minimum": 0}, "at least 0"), ("0", {"minimum": 0, "exclusive_min": True}, "greater than 0"),
    ("2000", {"maximum": 1000}, "at most 1,000"),
])
def test_numbers(value, kw, needle):
    assert needle in err(inputs.number, value, "--batch", **kw)


def test_numbers_ok():
    assert inputs.number("1e3", "--n", integer=True) == 1000
    assert inputs.number(" 2_000 ", "--n", integer=True) == 2000
    assert inputs.positive("0.5", "--rate") == 0.5


@pytest.mark.parametrize("text", ["", " ", ",", "1,,2", "1,"])
def test_lists_without_holes(text):
    err(inputs.number_list, text, "--rate")


def test_list_ok_and_bounded():
    assert inputs.number_list("1, 2,4", "--batch", integer=True) == [1, 2, 4]
    assert "items" in err(inputs.number_list, ",".join(["1"] * 300), "--batch")


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_give_data_or_one_error(data):
    for parse in (inputs.loads_json, inputs.loads_yaml):
        with contextlib.suppress(VazaoError):
            parse(data.decode("utf-8", errors="replace"), "fuzz")


json_tree = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
                         | st.text(max_size=5), lambda kids: st.lists(kids, max_size=3)
                         | st.dictionaries(st.text(max_size=3), kids, max_size=3), max_leaves=30)


@settings(max_examples=150, deadline=None)
@given(json_tree)
def test_round_trip_of_valid_documents(obj):
    assert inputs.loads_json(json.dumps(obj), "x") == obj
    assert inputs.loads_yaml(inputs.dump_yaml(obj), "x") == obj


def test_a_number_in_exponent_form_is_a_number_as_in_yaml_1_2_and_json():
    """PyYAML (YAML 1.1) reads 1e-5 as the string '1e-5'; a profile file's `per_sequence_overhead_s: 1e-5` was then
    refused as not a number. User files read it as JSON and YAML 1.2 do."""
    doc = inputs.loads_yaml("a: 1e-5\nb: 5E+3\nc: -2.5e3\nd: 1.0e-05\ne: .5e2\nf: 1_000e3\n"
                            "g: 1e\nh: e5\ni: 1e-4x\nj: '1e-4'\nk: 0.14\nl: 12\n", "x")
    assert doc == {"a": 1e-5, "b": 5000.0, "c": -2500.0, "d": 1e-5, "e": 50.0, "f": 1e6,
                   "g": "1e", "h": "e5", "i": "1e-4x", "j": "1e-4", "k": 0.14, "l": 12}
    assert all(type(doc[k]) is float for k in "abcdef")
    # what vazao writes quotes such a string, so that it reads back (here and in a YAML 1.2 reader) as a string
    text = inputs.dump_yaml({"name": "1e5", "rate": 1e-5})
    assert "'1e5'" in text and inputs.loads_yaml(text, "x") == {"name": "1e5", "rate": 1e-5}


def test_a_profile_file_takes_an_exponent(tmp_path):
    from vazao.physics.profiles import load_profiles

    path = tmp_path / "p.yaml"
    path.write_text("engines:\n  vllm:\n    per_sequence_overhead_s: 2e-5\n    step_overhead_s: 1E-3\n")
    eng = load_profiles(path)["vllm"]
    assert (eng.per_sequence_overhead_s, eng.step_overhead_s) == (2e-5, 1e-3)
