"""One HTTP client for the bench: the setup requests (server facts, /metrics, tokenize) go through
h1 like the streams (bench/control.py), and a whole run works with aiohttp not importable."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap

import pytest

from vazao.loadgen import control, h1, server_facts

_BLOCK = "import sys; sys.modules['aiohttp'] = None\n"


def _python(code: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", _BLOCK + textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120)


def _calls(*calls):
    async def go():
        pool = h1.Pool(5.0)
        try:
            return [await control.call(pool, *c[:3], **(c[3] if len(c) > 3 else {})) for c in calls]
        finally:
            pool.close()
    return asyncio.run(go())


def test_a_bench_runs_without_aiohttp(fake_llm, tmp_path):
    """The bench modules and the CLI import, and a run (preflight, server facts, load, /metrics
    after) completes, in a process where importing aiohttp fails."""
    wl = tmp_path / "w.yaml"
    wl.write_text("name: w\narrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 4\nrequests: 4\n")
    out = _python(f"""
        import asyncio, json
        import vazao.cli, vazao.cli.bench
        from vazao.loadgen.client import Target
        from vazao.loadgen.session import BenchConfig, run_bench
        cfg = BenchConfig(Target({fake_llm.url!r}), workload={str(wl)!r},
                          records_path=__import__('pathlib').Path({str(tmp_path / 'r.jsonl')!r}), progress=False)
        res = asyncio.run(run_bench(cfg))
        facts = res.preflight.facts
        print(json.dumps({{"n": res.levels[0].summary.requests, "errors": res.levels[0].summary.errors,
                          "models": [m["id"] for m in facts.get("models", [])],
                          "metrics": bool(facts.get("metrics_before"))}}))
        """)
    assert out.returncode == 0, out.stderr[-3000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["n"] == 4 and got["errors"] == 0
    assert got["models"] and got["metrics"]


def test_the_fake_server_says_what_it_needs_without_aiohttp():
    out = _python("import vazao.testing\nimport vazao.testing.fake_server\n")
    assert out.returncode != 0
    assert "vazao.testing.fake_server needs aiohttp" in out.stderr


def test_control_call_get_json_and_post_body(fake_llm):
    models, tok = _calls(("GET", fake_llm.url + "/models", {}),
                         ("POST", fake_llm.url[:-3] + "/tokenize", {}, {"json": {"content": "a b c"}}))
    assert models.status == 200 and "json" in models.headers["content-type"]
    assert json.loads(models.body)["data"]
    assert tok.status == 200 and json.loads(tok.body)["count"] == 3  # the fake server counts words


def test_control_call_keeps_a_redirect_unfollowed(fake_llm):
    url = fake_llm.url.replace("/v1", "/cfg/redirect_port=9/v1") + "/models"
    (reply,) = _calls(("GET", url, {"Authorization": "Bearer k"}))
    assert reply.status == 307 and reply.location.startswith("http://127.0.0.1:9/")
    redirects: list = []
    status, body, _ = asyncio.run(_fetch(url, redirects))
    assert (status, body) == (307, None) and redirects == [(url, reply.location)]


async def _fetch(url: str, redirects: list):
    pool = h1.Pool(5.0)
    try:
        return await server_facts.fetch(pool, "GET", url, {}, redirects=redirects)
    finally:
        pool.close()


def test_control_call_refuses_a_body_over_the_limit(fake_llm):
    small, whole = _calls(("GET", fake_llm.url + "/models", {}, {"max_body": 10}),
                          ("GET", fake_llm.url + "/models", {}))
    assert small.status == 200 and small.body is None
    assert whole.body is not None and len(whole.body) > 10


def test_control_call_errors_are_exceptions_and_fetch_answers_none():
    with pytest.raises(OSError):
        _calls(("GET", "http://127.0.0.1:9/v1/models", {}))
    status, body, kept = asyncio.run(_fetch("http://127.0.0.1:9/v1/models", []))
    assert (status, body, kept) == (None, None, {})


def test_only_vazao_testing_imports_aiohttp():
    import pathlib
    import re

    import vazao
    root = pathlib.Path(vazao.__file__).parent
    found = [str(p.relative_to(root)) for p in root.rglob("*.py")
             if re.search(r"^\s*(import|from)\s+aiohttp\b", p.read_text(), re.M) and p.parent.name != "testing"]
    assert found == []
