"""A value being tried in a fit holds on the release it is fitted for: the release's shipped values
(calibration.yaml `versions` entries, applied by `at_version`) must not replace it. Before this held,
`vazao calibrate` searched TensorRT-LLM 0.17 parameters that no prediction used and wrote them out."""

from vazao.physics.profiles import get_engine
from vazao.validate.run import _profiles


def test_overrides_hold_on_every_release():
    shipped = get_engine("trtllm")
    releases = [tuple(e["min_version"]) for e in shipped.versions]
    assert releases, "trtllm ships per-release values (calibration.yaml)"
    assert any("memory_efficiency" in e for e in shipped.versions)
    profiles = _profiles(None, (("trtllm", (("memory_efficiency", 0.3123), ("host_overlap", 0.25))),))
    for v in releases:
        eng = get_engine("trtllm", profiles).at_version(v)
        assert eng.memory_efficiency == 0.3123 and eng.host_overlap == 0.25, v
        # what is not overridden keeps the release's shipped value
        assert eng.compute_efficiency == shipped.at_version(v).compute_efficiency
