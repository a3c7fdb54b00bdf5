"""Numbers a user's profile file gives the cost model are refused in one line when they are garbage, never
carried into a step's cost: custom_allreduce_gpus is compared against a tensor-parallel width,
attention_score_bytes multiplied into every step's attention traffic (a string, a list and 1e300 reached it as a
TypeError before it was bounded)."""

from __future__ import annotations

import pytest

from vazao.errors import VazaoError
from vazao.physics.profiles import load_profiles

CASES = [
    ("vllm", "custom_allreduce_gpus", value, "custom_allreduce_gpus must be a whole number from 0 to 72", 4)
    for value in ('"x"', "1e9", "true", "-1", "73")
] + [
    ("llama.cpp", "attention_score_bytes", value, "attention_score_bytes must be from 0 to 64", 24)
    for value in ('"x"', "1e300", "true", "-1", "[16]")
]


@pytest.mark.parametrize("engine,key,value,message,good", CASES)
def test_a_profile_files_value_is_refused_in_one_line(tmp_path, engine, key, value, message, good):
    bad = tmp_path / "p.yaml"
    bad.write_text(f"engines:\n  {engine}:\n    {key}: {value}\n")
    with pytest.raises(VazaoError, match=message):
        load_profiles(bad)
    bad.write_text(f"engines:\n  {engine}:\n    {key}: {good}\n")
    assert getattr(load_profiles(bad)[engine], key) == good
