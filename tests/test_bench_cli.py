"""`vazao bench | summarize | compare` end to end against the fake server: the JSON contract,
bad input (each one clear line and a non-zero exit, with what was measured kept on disk), faults
counted and shown, the API key never written anywhere, and a run killed mid-way still summarized."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest
from typer.testing import CliRunner

from vazao.cli import app

runner = CliRunner()
SUMMARY_KEYS = {"requests", "errors", "duration_s", "ttft_s", "itl_s", "tpot_s", "e2e_s",
                "request_throughput_per_s", "output_tokens_per_s", "total_tokens_per_s"}


@pytest.fixture()
def wl(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text("name: small\narrival: {kind: concurrency, concurrency: 3}\nprompt: 16\noutput: 8\nrequests: 9\n")
    return str(p)



def bench(*args: str, env: dict | None = None):
    return runner.invoke(app, ["bench", *args, "--no-progress"], env=env)


def test_json_contract_single_run(fake_llm, wl, tmp_path):
    out = tmp_path / "run.json"
    r = bench(fake_llm.url, "-w", wl, "--json", "-o", str(out), "--slo", "ttft_p95=1s")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert set(data["summary"]) >= SUMMARY_KEYS and data["summary"]["requests"] == 9
    assert data["summary"]["goodput_requests_per_s"] > 0
    assert "points" not in data
    assert data["run"]["workload"] == "small" and data["run"]["model"] == "fake-model"
    assert data["errors"] == {} and data["tokens"]["output"] == {"usage": 9}
    assert data["server"]["engine"] == "vllm"  # the fake server speaks vLLM's /metrics
    assert data["server"]["server_vs_client"]["generation_tokens_total"] == {"server": 9 * 8 + 8, "client": 80}
    assert data["client"]["us_per_chunk"] > 0 and 0 < data["client"]["share_of_core"] < 2
    assert data["client"]["event_loop"] in ("asyncio", "uvloop")
    assert "guidellm" in data["definitions"]["peers"]
    assert json.loads(out.read_text())["summary"] == data["summary"]
    assert (tmp_path / "run.jsonl").is_file()


def test_json_contract_sweep(fake_llm, wl, tmp_path):
    r = bench(fake_llm.url, "-w", wl, "--json", "--records", str(tmp_path / "s.jsonl"), "-c", "1,3")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert [p["concurrency"] for p in data["points"]] == [1, 3]
    assert all(set(p["summary"]) >= SUMMARY_KEYS for p in data["points"])
    assert data["summary"] == data["points"][-1]["summary"]
    r = runner.invoke(app, ["summarize", str(tmp_path / "s.jsonl"), "--json"])
    assert r.exit_code == 0, r.output
    again = json.loads(r.stdout)
    assert [p["concurrency"] for p in again["points"]] == [1, 3]
    assert again["points"][1]["summary"]["requests"] == data["points"][1]["summary"]["requests"]


def test_find_max_rate_json(fake_llm, tmp_path):
    p = tmp_path / "r.yaml"
    p.write_text("name: r\narrival: {kind: poisson, rate: 1}\nprompt: 8\noutput: 10\nrequests: 16\n")
    url = fake_llm.configured("slots=1,ttft=10ms,itl=2ms")
    r = bench(url, "-w", str(p), "--json", "--records", str(tmp_path / "f.jsonl"), "--find-max",
              "--rate", "10", "--slo", "ttft_p95=60ms")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["search"] == "rate" and [pt["rate"] for pt in data["points"]][:2] == [10.0, 20.0]
    assert data["max_rate"] is None or data["max_rate"] >= 10


def test_console_output(fake_llm, wl, tmp_path):
    r = bench(fake_llm.configured("error_every=4"), "-w", wl, "--records", str(tmp_path / "c.jsonl"))
    assert r.exit_code == 0, r.output
    assert "TTFT" in r.stdout and "TPOT" in r.stdout and "client CPU" in r.stdout
    assert "http_500 ×2" in r.stdout  # requests 4 and 8 of the run (the probes come first)


@pytest.mark.parametrize("overrides,kind", [
    ("error_every=3", "http_500"),
    ("disconnect_every=3", "disconnected"),
    ("malformed_every=3", "malformed_sse"),
    ("stall_every=3,stall_s=3", "stall"),
])
def test_faults_are_counted_and_shown(fake_llm, wl, tmp_path, overrides, kind):
    r = bench(fake_llm.configured(overrides), "-w", wl, "--json", "--records", str(tmp_path / "f.jsonl"),
              "--stall-timeout", "300ms", "--no-probe")
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["errors"] == {kind: 3}
    assert data["summary"]["errors"] == 3 and data["summary"]["requests"] == 9
    assert any(f"{kind} ×3" in w for w in data["warnings"])
    recs = [json.loads(line) for line in (tmp_path / "f.jsonl").read_text().splitlines()]
    assert sum(1 for d in recs if d["kind"] == "record" and d["error"]) == 3


BAD = [
    ("unreachable", "http://127.0.0.1:9/v1", "cannot reach"),
    ("wrong path", "{root}/v2", "wrong path"),
    ("401", "{cfg}api_key=sekrit/v1", "no API key was sent"),
    ("not streaming", "{cfg}no_stream=1/v1", "does not stream"),
    ("ignores max_tokens", "{cfg}ignore_max_tokens=400/v1", "ignores max_tokens"),
]


@pytest.mark.parametrize("name,url,message", BAD, ids=[b[0] for b in BAD])
def test_bad_input_is_one_clear_error(fake_llm, wl, tmp_path, name, url, message):
    root = fake_llm.url.removesuffix("/v1")
    url = url.format(root=root, cfg=root + "/cfg/")
    records = tmp_path / "bad.jsonl"
    r = bench(url, "-w", wl, "--records", str(records), env={"OPENAI_API_KEY": ""})
    assert r.exit_code == 2, r.output
    assert message in r.stderr and "Traceback" not in r.output
    assert len(r.stderr.strip().splitlines()) <= 3
    if name == "unreachable":  # nothing reached the server: no records file left behind
        assert not records.exists() and "records so far" not in r.stderr
        return
    kinds = [json.loads(line)["kind"] for line in records.read_text().splitlines()]
    assert kinds[0] == "meta" and "probe" in kinds  # what was measured is kept


def test_bad_workload(fake_llm, tmp_path):
    r = bench(fake_llm.url, "-w", "no-such-workload", "--records", str(tmp_path / "x.jsonl"))
    assert r.exit_code == 2 and "unknown workload" in r.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("arrival: {kind: poisson, rate: -1}\nprompt: 8\noutput: 8\nrequests: 3\n")
    r = bench(fake_llm.url, "-w", str(bad), "--records", str(tmp_path / "x.jsonl"))
    assert r.exit_code == 2 and "rate" in r.stderr


def test_runtime_fatal_errors_exit_nonzero(fake_llm, wl, tmp_path):
    # the probe passes (4 tokens asked, none over), then every request overruns max_tokens
    r = bench(fake_llm.configured("output_tokens=12"), "-w", wl, "--records", str(tmp_path / "m.jsonl"),
              "--no-probe")
    assert r.exit_code == 1
    assert "ignored_max_tokens" in r.stderr


def test_api_key_never_written(wl, tmp_path):
    from vazao.testing.fake_server import FakeConfig, serve_in_thread

    secret, header_secret = "sk-vazao-TOPSECRET-123", "hdr-SECRET-456"
    out = tmp_path / "k.json"
    with serve_in_thread(FakeConfig(ttft=0.01, itl=0.002, api_key=secret)) as server:
        r = bench(server.url, "-w", wl, "-o", str(out), "--api-key-env", "VZ_KEY",
                  "-H", f"X-Extra: {header_secret}", env={"VZ_KEY": secret})
        assert r.exit_code == 0, r.output
        r2 = bench(server.url, "-w", wl, "-o", str(tmp_path / "k2.json"), "--api-key-env", "VZ_KEY", "--json",
                   env={"VZ_KEY": secret})
        assert r2.exit_code == 0, r2.output
        assert json.loads(r2.stdout)["summary"]["errors"] == 0
        wrong = bench(server.url, "-w", wl, "--records", str(tmp_path / "w.jsonl"), "--api-key-env", "VZ_KEY",
                      env={"VZ_KEY": "sk-wrong-KEY-789"})
    assert wrong.exit_code == 2 and "was refused" in wrong.stderr
    texts = [r.output, r2.output, wrong.output]
    texts += [p.read_text() for p in tmp_path.iterdir() if p.suffix in (".json", ".jsonl")]
    assert len(texts) == 3 + 5
    for t in texts:
        assert secret not in t and header_secret not in t and "sk-wrong-KEY-789" not in t


WAIT_S = 120  # generous for a loaded machine: each wait ends as soon as what it waits for is there


def _wait_for_records(path, n: int, proc: subprocess.Popen) -> None:
    """Until the records file holds n records (polled, not a fixed sleep) or the run ends."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"bench exited early with {proc.returncode}")
        if path.exists() and path.read_text().count('"kind": "record"') >= n:
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"fewer than {n} records after {WAIT_S} s")


def test_kill_mid_run_then_summarize(tmp_path):
    """SIGKILL in the middle of a run: every finished request is on disk and summarizes."""
    from vazao.testing.fake_server import FakeConfig, spawn

    p = tmp_path / "long.yaml"
    p.write_text("name: long\narrival: {kind: concurrency, concurrency: 4}\nprompt: 8\noutput: 20\nrequests: 4000\n")
    records = tmp_path / "killed.jsonl"
    with spawn(FakeConfig(ttft=0.01, itl=0.005)) as url:
        proc = subprocess.Popen([sys.executable, "-c", "from vazao.cli import main; main()", "bench", url, "-w",
                                 str(p), "--records", str(records), "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _wait_for_records(records, 20, proc)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(WAIT_S)
    r = runner.invoke(app, ["summarize", str(records), "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["complete"] is False
    assert data["summary"]["requests"] >= 20 and data["summary"]["errors"] == 0
    assert data["malformed_lines"] <= 1
    r = runner.invoke(app, ["summarize", str(records)])
    assert r.exit_code == 0 and "did not finish" in r.stdout


def test_ctrl_c_keeps_and_shows_what_was_measured(tmp_path):
    from vazao.testing.fake_server import FakeConfig, spawn

    p = tmp_path / "long.yaml"
    p.write_text("name: long\narrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 20\nrequests: 4000\n")
    records = tmp_path / "int.jsonl"
    with spawn(FakeConfig(ttft=0.01, itl=0.005)) as url:
        proc = subprocess.Popen([sys.executable, "-c", "from vazao.cli import main; main()", "bench", url, "-w",
                                 str(p), "--records", str(records), "--no-progress", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_records(records, 10, proc)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130, err
    data = json.loads(out)
    assert data["summary"]["requests"] >= 10
    assert "cancelled" in data["errors"] or data["summary"]["errors"] == 0
    assert "interrupted" in err


def test_compare_two_runs(fake_llm, wl, tmp_path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    assert bench(fake_llm.url, "-w", wl, "-o", str(a)).exit_code == 0
    assert bench(fake_llm.configured("itl=8ms"), "-w", wl, "-o", str(b)).exit_code == 0
    r = runner.invoke(app, ["compare", str(a), str(b)])
    assert r.exit_code == 0, r.output
    assert "ITL p50" in r.stdout and "a.json" in r.stdout and "b.json" in r.stdout
    r = runner.invoke(app, ["compare", str(a), str(b.with_suffix(".jsonl")), "--json"])
    runs = json.loads(r.stdout)["runs"]
    # means, not medians: on a loaded machine chunks arrive batched in one read (gaps of 0)
    assert runs[1]["summary"]["itl_s"]["mean"] > runs[0]["summary"]["itl_s"]["mean"]
    r = runner.invoke(app, ["compare", str(tmp_path / "missing.json")])
    assert r.exit_code == 2 and "does not exist" in r.stderr


def test_compare_measured_with_simulated(fake_llm, wl, tmp_path, gemma_gguf):
    a = tmp_path / "m.json"
    assert bench(fake_llm.url, "-w", wl, "-o", str(a)).exit_code == 0
    r = runner.invoke(app, ["compare", str(a), "--simulate", "--gpu", "h100-sxm", "--model", "llama-3.1-8b",
                            "--json"])
    assert r.exit_code == 0, r.output
    runs = json.loads(r.stdout)["runs"]
    assert runs[1]["name"].startswith("simulated") and runs[1]["summary"]["source"] == "simulated"
    # the same workload file, seed and level: the same requests and prompt tokens
    assert runs[1]["summary"]["requests"] == runs[0]["summary"]["requests"] == 9
    assert runs[1]["summary"]["prompt_tokens"] == 9 * 16
    # The issue's `--gpu local`: this host, probed, serving the GGUF the measured server would load.
    r = runner.invoke(app, ["compare", str(a), "--simulate", "--gpu", "local", "--model", str(gemma_gguf), "--json"])
    assert r.exit_code == 0, r.output
    local = json.loads(r.stdout)["runs"][1]["summary"]
    assert local["requests"] == 9 and local["ttft_s"]["p50"] > 0
    r = runner.invoke(app, ["compare", str(a), "--simulate"])
    assert r.exit_code == 2 and "--gpu" in r.stderr


def test_option_conflicts_name_the_options_before_any_traffic(wl, tmp_path):
    # the library says "find_max needs an SLO" / "concurrency or rate"; the command names its own options
    url = "http://127.0.0.1:9/v1"  # discard port: nothing may be sent
    r = bench(url, "-w", str(wl), "--records", str(tmp_path / "a.jsonl"), "--find-max")
    assert r.exit_code == 2 and "--find-max needs an --slo" in r.output, r.output
    r = bench(url, "-w", str(wl), "--records", str(tmp_path / "b.jsonl"), "--rate", "1", "--concurrency", "2")
    assert r.exit_code == 2 and "give --concurrency or --rate, not both" in r.output, r.output
    assert not (tmp_path / "a.jsonl").exists() and not (tmp_path / "b.jsonl").exists()
