"""Numbers a user's profile file gives the cost model are refused in one line when they are garbage, never
carried into a step's cost: custom_allreduce_gpus is compared against a tensor-parallel width,
attention_score_bytes multiplied into every step's attention traffic (a string, a list and 1e300 reached it as a
TypeError before it was bounded), dequant_pass_tokens compared with every step's token count and
dequant_pass_generations with the GPU's generation; the eager floors and a MoE layer's fixed time multiplied by a
model's layers in every step."""

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
] + [
    ("llama.cpp", "dequant_pass_tokens", value, "dequant_pass_tokens must be a whole number from 0 to 65536", 0)
    for value in ('"x"', "32.5", "true", "-1", "1e9", "[32]")
] + [
    ("llama.cpp", "dequant_pass_generations", value, "dequant_pass_generations must be a list of hardware "
     "generation names", ("ada",))
    for value in ('"ada"', "3", "[1, 2]", "{ada: 1}", '["' + "x" * 41 + '"]')
] + [
    ("llama.cpp", "dequant_pass_generations", "[adaa]", "unknown hardware generation 'adaa'", ("ada",)),
] + [
    # a prompt step's eager floors and a MoE layer's fixed time (physics/profiles.py CALIBRATED), charged per
    # layer in every step
    ("trtllm", key, value, f"{key} must be a number" if value in ('"x"', "true") else f"{key} must be from 0 to {top}",
     good)
    for key, top, good in (("eager_step_layer_s", "0.01", 0.002), ("eager_moe_layer_s", "0.01", 0.002),
                           ("moe_layer_overhead_s", "0.001", 0.0005))
    for value in ('"x"', "true", "-1", "0.5")
]


def test_a_misspelt_generation_in_a_profiles_overrides_is_refused(tmp_path):
    """An override for a generation the catalog does not have would never apply: refused in one line."""
    bad = tmp_path / "p.yaml"
    bad.write_text("engines:\n  llama.cpp:\n    generations:\n      hoper: {compute_efficiency: 0.5}\n")
    with pytest.raises(VazaoError, match="generations: unknown hardware generation 'hoper'"):
        load_profiles(bad)


@pytest.mark.parametrize("engine,key,value,message,good", CASES)
def test_a_profile_files_value_is_refused_in_one_line(tmp_path, engine, key, value, message, good):
    bad = tmp_path / "p.yaml"
    bad.write_text(f"engines:\n  {engine}:\n    {key}: {value}\n")
    with pytest.raises(VazaoError, match=message):
        load_profiles(bad)
    bad.write_text(f"engines:\n  {engine}:\n    {key}: {list(good) if isinstance(good, tuple) else good}\n")
    assert getattr(load_profiles(bad)[engine], key) == good
