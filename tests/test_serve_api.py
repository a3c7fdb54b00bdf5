"""`vazao serve`'s HTTP API without a browser: each endpoint answers the library's result for the same
inputs, and a hostile pass over every endpoint and field (the values bench/hostile_sweep.py throws at
the CLI, plus wrong types, deep nesting, oversized bodies, foreign Host and Origin headers) gets one
JSON line with status 400 (403 for a refused origin), never a 500, a traceback or a secret."""

from __future__ import annotations

import http.client
import json
import os
import threading
import time

import pytest

from _jobs import ended
from vazao.serve.server import make_server

SECRET = "vazao-test-secret-7f3a9c"
BAD_NUMBERS = ("nan", "inf", "-inf", "-1", "0", "1e400", "1.5", "99999999999999999999999", "1e12", "abc", "0x10",
               " ", None, True, [], {}, [1], {"a": 1}, -1, 0, 1e308, 2**70, "1" * 5000)
BAD_TEXT = ("/etc/passwd", "../../etc/passwd", "~/.ssh/id_rsa", "x" * 5000, "", " ", 1, True, [], {"a": 1},
            "llama\x00", "h100-sxm,l4" * 500, "$(rm -rf /)", "<script>alert(1)</script>")


@pytest.fixture(scope="module")
def server():
    os.environ["VAZAO_SERVE_TEST_SECRET"] = SECRET
    srv = make_server(0)
    t = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.1}, daemon=True)
    t.start()
    yield srv
    srv.shutdown()
    srv.app.jobs.close()
    srv.server_close()
    os.environ.pop("VAZAO_SERVE_TEST_SECRET", None)


def request(srv, method: str, path: str, body=None, headers: dict | None = None, raw: bytes | None = None):
    conn = http.client.HTTPConnection("127.0.0.1", srv.app.port, timeout=120)
    h = {"Host": f"127.0.0.1:{srv.app.port}"}
    data = raw
    if body is not None:
        data = json.dumps(body).encode()
        h["Content-Type"] = "application/json"
    h.update(headers or {})
    conn.request(method, path, body=data, headers=h)
    r = conn.getresponse()
    out = r.status, r.getheader("Content-Type") or "", r.read()
    conn.close()
    return out


def checked_error(status: int, ctype: str, data: bytes, want: int = 400) -> str:
    """One JSON line {"error": …} with the expected status; no traceback, no secret."""
    text = data.decode()
    assert status == want, (status, text[:300])
    assert ctype == "application/json" and "\n" not in text.strip(), text[:300]
    doc = json.loads(text)
    assert list(doc) == ["error"] and doc["error"]
    assert "Traceback" not in text and SECRET not in text and "File \"" not in text
    return doc["error"]


def test_explore_is_the_librarys_estimate(server):
    from vazao.analytic import estimate
    from vazao.physics.deployment import make_deployment
    from vazao.resultfiles import json_document

    body = {"model": "llama-3.1-70b", "gpu": "h100-sxm", "count": 8, "batch": 64, "input": 2048, "output": 128}
    status, ctype, data = request(server, "POST", "/api/explore", body)
    assert status == 200 and ctype == "application/json"
    got = json.loads(data)
    dep = make_deployment("llama-3.1-70b", "h100-sxm", count=8)
    est = json_document(estimate(dep, [64], 2048, 128))
    assert got["row"] == est["rows"][0]
    assert got["estimate"]["crossover_batch"] == est["crossover_batch"]
    assert got["estimate"]["fit"] == est["fit"]
    assert got["verdict"]["status"] == "native" and got["deployment"] == dep.label()


def test_an_unsupported_format_is_refused_with_its_reason(server):
    from vazao.physics.deployment import make_deployment

    status, _, data = request(server, "POST", "/api/explore", {"model": "llama-3.1-8b", "gpu": "v100", "format": "fp8",
                                                              "engine": "trtllm"})
    got = json.loads(data)
    if status == 400:  # the engine itself refuses the GPU
        assert got["error"]
    else:
        dep = make_deployment("llama-3.1-8b", "v100", "fp8", engine="trtllm", strict=False)
        assert got["verdict"]["status"] == dep.support.status == "unsupported"
        assert dep.support.reason in got["refused"] and "estimate" not in got


def test_an_uploaded_config_json_is_the_librarys_reading(server):
    from vazao.catalog.models import from_hf_config

    config = {"architectures": ["LlamaForCausalLM"], "hidden_size": 2048, "intermediate_size": 8192,
              "num_attention_heads": 32, "num_key_value_heads": 8, "num_hidden_layers": 16, "vocab_size": 128256,
              "max_position_embeddings": 131072, "torch_dtype": "bfloat16"}
    status, _, data = request(server, "POST", "/api/model", {"name": "tiny", "config": config})
    assert status == 200, data
    up = json.loads(data)
    assert up["arch"]["num_hidden_layers" if "num_hidden_layers" in up["arch"] else "num_layers"] == 16
    assert up["arch"]["name"] == from_hf_config(config, name="tiny").name
    status, _, data = request(server, "POST", "/api/explore", {"model_file": up, "gpu": "l4", "batch": 4})
    assert status == 200, data
    assert json.loads(data)["deployment"].startswith("tiny bf16 on 1× l4")


def test_origin_host_and_method_are_refused(server):
    port = server.app.port
    for headers in ({"Host": "evil.example:80"}, {"Host": f"evil.example:{port}"}, {"Host": "127.0.0.1"},
                    {"Origin": "http://evil.example"}, {"Origin": f"http://127.0.0.1.evil:{port}"},
                    {"Sec-Fetch-Site": "cross-site"}):
        for method, path, body in (("GET", "/api/catalog", None), ("POST", "/api/explore", {}), ("GET", "/", None)):
            checked_error(*request(server, method, path, body, headers=headers), want=403)
    checked_error(*request(server, "DELETE", "/api/catalog"), want=405)
    checked_error(*request(server, "GET", "/api/nothing"), want=404)
    checked_error(*request(server, "GET", "/static/../../pyproject.toml"), want=404)
    checked_error(*request(server, "GET", "/api/jobs/sim1-00000000"), want=404)
    ok = request(server, "GET", "/api/catalog", headers={"Origin": f"http://localhost:{port}",
                                                         "Host": f"localhost:{port}"})
    assert ok[0] == 200


def test_bodies_are_bounded(server):
    from vazao import limits

    as_json = {"Content-Type": "application/json"}
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
        checked_error(*request(server, "POST", "/api/explore", raw=b"{}", headers={"Content-Type": ctype}))
    deep = b"[" * 100 + b"]" * 100
    for raw in (b"not json", b"[1]", b'{"batch": NaN}', b"\xff\xfe", b'{"a": ' + deep + b"}", b""):
        checked_error(*request(server, "POST", "/api/explore", raw=raw, headers=as_json))
    # a declared length above the bound is refused before a byte of the body is read
    conn = http.client.HTTPConnection("127.0.0.1", server.app.port, timeout=30)
    conn.putrequest("POST", "/api/explore", skip_host=True)
    conn.putheader("Host", f"127.0.0.1:{server.app.port}")
    conn.putheader("Content-Type", "application/json")
    conn.putheader("Content-Length", str(limits.MAX_SERVE_BODY_BYTES + 1))
    conn.endheaders()
    r = conn.getresponse()
    checked_error(r.status, r.getheader("Content-Type"), r.read())
    conn.close()


def test_a_workload_naming_a_file_is_refused(server):
    msg = checked_error(*request(server, "POST", "/api/simulate", {
        "model": "llama-3.1-8b", "gpu": "h100-sxm", "rates": "5",
        "workload_yaml": "arrival: {kind: poisson, rate: 1}\n"
                         "prompt: {dist: empirical, file: /etc/passwd}\noutput: 10\n"}))
    assert "names a file" in msg
    pairs = zip("abcdefgh", "bcdefghi", strict=True)
    bomb = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(f"{c}: &{c} [" + ", ".join([f"*{p}"] * 9) + "]\n"
                                                          for p, c in pairs)
    checked_error(*request(server, "POST", "/api/simulate", {"model": "llama-3.1-8b", "gpu": "h100-sxm",
                                                            "workload_yaml": bomb}))
    checked_error(*request(server, "POST", "/api/model?name=x.gguf", raw=b"GGUF" + b"\xff" * 64,
                           headers={"Content-Type": "application/octet-stream"}))


ENDPOINTS = {
    "/api/explore": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "count": 1, "batch": 8, "input": 128, "output": 16,
                     "tp": 1, "pp": 1, "format": "bf16", "kv": "fp16", "engine": "vllm", "api_price": "gpt-5-mini",
                     "ideal": False},
    "/api/explore/report": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "batch": 8},
    "/api/simulate": {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "chat", "rates": "5", "requests": 20,
                      "seed": 1, "slo": "ttft_p95=1s"},
    "/api/plan": {"models": "llama-3.1-8b", "gpus": "h100-sxm", "formats": "bf16", "traffic": "5/s",
                  "requests": 20, "simulate_top": 1, "max_gpus": 1, "curves": 0, "against_api": "gpt-5-mini"},
    "/api/compare": {"measured": {"completed": 1}},
    "/api/model": {"name": "x", "config": {"hidden_size": 64}},
}


def test_the_hostile_sweep(server):
    """Every field of every endpoint with every hostile value: 200/202 (a value the field takes) or one
    400 line; a job a value started is cancelled at once."""
    seen = {200: 0, 202: 0, 400: 0}
    t0 = time.monotonic()
    for path, good in ENDPOINTS.items():
        for key in good:
            for bad in (*BAD_NUMBERS, *BAD_TEXT):
                status, ctype, data = request(server, "POST", path, {**good, key: bad})
                assert status in seen, (path, key, bad, status, data[:300])
                seen[status] += 1
                text = data.decode(errors="replace")
                assert SECRET not in text and "Traceback" not in text
                if status == 400:
                    checked_error(status, ctype, data)
                elif status == 202:
                    job = json.loads(data)["id"]
                    request(server, "POST", f"/api/jobs/{job}/cancel", {})
    assert seen[400] > 500 and seen[200] > 0
    assert time.monotonic() - t0 < 600


def test_a_job_runs_streams_and_is_cancelled(server):
    status, _, data = request(server, "POST", "/api/simulate", {"model": "llama-3.1-8b", "gpu": "h100-sxm",
                                                               "workload": "chat", "rates": "50",
                                                               "requests": 5_000_000})
    assert status == 202, data
    job = json.loads(data)["id"]
    # the explorer still answers while the simulation runs
    t = time.monotonic()
    assert request(server, "POST", "/api/explore", {"model": "llama-3.1-8b", "gpu": "h100-sxm"})[0] == 200
    assert time.monotonic() - t < 30
    conn = http.client.HTTPConnection("127.0.0.1", server.app.port, timeout=120)
    conn.request("GET", f"/api/jobs/{job}/events", headers={"Host": f"127.0.0.1:{server.app.port}"})
    r = conn.getresponse()
    assert r.getheader("Content-Type") == "text/event-stream"
    line = r.fp.readline()
    while not line.startswith(b"event: progress"):
        line = r.fp.readline()
    assert request(server, "POST", f"/api/jobs/{job}/cancel", {})[0] == 200
    rest = b""
    while b"event: end" not in rest:
        rest += r.fp.readline()
    conn.close()
    got = json.loads(request(server, "GET", f"/api/jobs/{job}")[2])
    assert got["state"] == "cancelled"
    j = server.app.jobs.get(job)
    assert ended(j.proc)
    checked_error(*request(server, "GET", f"/api/jobs/{job}/report"))


def test_at_most_a_few_jobs_run_at_once(server):
    from vazao import limits

    ids = []
    body = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "workload": "chat", "rates": "50", "requests": 5_000_000}
    try:
        for _ in range(limits.MAX_SERVE_JOBS):
            status, _, data = request(server, "POST", "/api/simulate", body)
            assert status == 202
            ids.append(json.loads(data)["id"])
        assert "running" in checked_error(*request(server, "POST", "/api/simulate", body))
    finally:
        for job in ids:
            request(server, "POST", f"/api/jobs/{job}/cancel", {})


def test_the_command_prints_its_address_serves_and_stops(tmp_path):
    import signal
    import subprocess
    import sys
    import urllib.request

    from typer.testing import CliRunner

    from vazao.cli import app

    r = CliRunner().invoke(app, ["serve", "--port", "70000"])
    assert r.exit_code == 2 and "--port" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    proc = subprocess.Popen([sys.executable, "-m", "vazao", "serve"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"})
    try:
        line = proc.stdout.readline()
        assert line.startswith("vazao serve: http://127.0.0.1:"), line
        url = line.split()[2]
        with urllib.request.urlopen(url, timeout=60) as page:
            assert b'<script type="module" src="/static/app.js">' in page.read()
    finally:
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "Traceback" not in err
