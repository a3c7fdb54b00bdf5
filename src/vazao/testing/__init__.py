"""Test support shipped for users' own tests: `vazao.testing.fake_server`, an OpenAI-compatible server
with scripted faults (timeouts, 5xx, dropped streams, slow tokens) and exact token timings, the oracle of
the bench's accuracy tests. The library never imports this package."""
