"""`vazao bench` under faults and hostile input: SIGTERM and Ctrl-C (once and twice) keep what was
measured, several runs in one records file are never summarized as one, existing files are not
overwritten without --force, unbounded server-sent event lines are refused, and bad options are one
line and exit 2, checked before any request is sent.

Waits are event-driven (the records file is polled for what the test needs, with generous limits), so
the tests hold on a loaded 2-core machine."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.errors import VazaoError
from vazao.loadgen import h1
from vazao.loadgen.client import Prompt, StreamClient, Target
from vazao.loadgen.records import RUNS_DIR_ENV, RecordLog, default_records_name, read_log
from vazao.results import RequestRecord
from vazao.testing.fake_server import FakeConfig, spawn

runner = CliRunner()
CLI = [sys.executable, "-c", "from vazao.cli import main; main()"]
WAIT_S = 120  # for a loaded machine: the waits end as soon as what they wait for is there


@pytest.fixture()
def wl(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text("name: small\narrival: {kind: concurrency, concurrency: 3}\nprompt: 16\noutput: 8\nrequests: 6\n")
    return str(p)


@pytest.fixture()
def long_wl(tmp_path):
    p = tmp_path / "long.yaml"
    p.write_text("name: long\narrival: {kind: concurrency, concurrency: 4}\nprompt: 8\noutput: 40\nrequests: 4000\n")
    return str(p)


def bench(*args: str, env: dict | None = None):
    return runner.invoke(app, ["bench", *args, "--no-progress"], env=env)


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


def _wait_for_records(path: Path, n: int, proc: subprocess.Popen) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"bench exited early with {proc.returncode}: {proc.stderr.read()[-2000:]}")
        if path.exists() and path.read_text().count('"kind": "record"') >= n:
            return
        time.sleep(0.05)
    proc.kill()
    pytest.fail(f"no {n} records in {WAIT_S} s")


# ---- interruption -------------------------------------------------------------------------------


@pytest.mark.parametrize("signals,code", [((signal.SIGTERM,), 143), ((signal.SIGINT,), 130),
                                          ((signal.SIGINT, signal.SIGINT), 130)],
                         ids=["sigterm", "sigint", "double-sigint"])
def test_interrupted_run_keeps_records_summary_and_result(tmp_path, long_wl, signals, code):
    records, out = tmp_path / "run.jsonl", tmp_path / "run.json"
    with spawn(FakeConfig(ttft=0.01, itl=0.01)) as url:
        proc = subprocess.Popen([*CLI, "bench", url, "-w", long_wl, "-o", str(out), "--records", str(records),
                                 "--no-progress", "--json"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_records(records, 8, proc)
        for sig in signals:
            proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == code, stderr
    assert "Traceback" not in stderr
    assert f"interrupted by {signal.Signals(signals[0]).name}" in stderr, stderr  # whole: a watchdog's traceback
    lines = _lines(records)
    kinds = [d["kind"] for d in lines]
    assert kinds[0] == "meta" and kinds[-1] == "end" and lines[-1]["interrupted"] is True
    recs = [d for d in lines if d["kind"] == "record"]
    cancelled = [d for d in recs if (d["error"] or "").startswith("cancelled")]
    assert 1 <= len(cancelled) <= 4  # the requests in flight (concurrency 4), each with its record
    printed = json.loads(stdout)
    written = json.loads(out.read_text())
    assert printed == written
    assert written["run"]["interrupted"] is True
    assert written["summary"]["requests"] == len(recs) >= 8
    assert written["errors"].get("cancelled") == len(cancelled)
    assert written["run"]["run_id"] == lines[0]["run_id"]


def test_signals_spaced_out_never_hang_or_kill_by_default_action(tmp_path, long_wl):
    """Three presses, each landing in a different phase (loop, clean-up, exit): the process ends with
    128+SIGINT, never by the default action (-2), and every line of the records file is whole."""
    records = tmp_path / "run.jsonl"
    with spawn(FakeConfig(ttft=0.01, itl=0.01)) as url:
        proc = subprocess.Popen([*CLI, "bench", url, "-w", long_wl, "--records", str(records), "--no-progress"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        _wait_for_records(records, 8, proc)
        for _ in range(3):
            proc.send_signal(signal.SIGINT)
            time.sleep(0.04)
        _, stderr = proc.communicate(timeout=WAIT_S)
    assert proc.returncode == 130, stderr
    assert "Traceback" not in stderr
    lines = _lines(records)  # raises on a cut line
    assert lines[0]["kind"] == "meta" and sum(d["kind"] == "record" for d in lines) >= 8


def test_clean_up_that_hangs_is_ended_by_the_watchdog():
    """However the clean-up goes, the process ends soon after the first signal: here it hangs on
    purpose, and the watchdog says where it stood and exits 128+signal."""
    script = (
        "import signal, time\n"
        "import vazao.cli.interrupt as it\n"
        "it.GRACE_S = 0.5\n"
        "s = it.Interrupts()\n"
        "s.install()\n"
        "try:\n"
        "    signal.raise_signal(signal.SIGTERM)\n"
        "except it.Interrupted:\n"
        "    pass\n"
        "while True:\n"
        "    time.sleep(0.05)  # a clean-up that never ends\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S)
    assert proc.returncode == 128 + signal.SIGTERM, proc.stderr
    assert "took over 0.5 s" in proc.stderr and "time.sleep" not in proc.stderr.split("quitting")[0]
    assert 'File "<string>"' in proc.stderr  # the traceback of where it stood


# ---- one run per file -----------------------------------------------------------------------------


def test_every_line_carries_the_run_id_and_mixed_files_are_refused(fake_llm, wl, tmp_path):
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert bench(fake_llm.url, "-w", wl, "--records", str(a)).exit_code == 0
    assert bench(fake_llm.url, "-w", wl, "--records", str(b)).exit_code == 0
    ids = []
    for p in (a, b):
        lines = _lines(p)
        run_ids = {d["run_id"] for d in lines}
        assert len(run_ids) == 1 and lines[0]["kind"] == "meta"
        ids.append(run_ids.pop())
    assert ids[0] != ids[1]
    both = tmp_path / "both.jsonl"
    both.write_text(a.read_text() + b.read_text())
    r = runner.invoke(app, ["summarize", str(both)])
    assert r.exit_code == 2 and ids[0] in r.stderr and ids[1] in r.stderr and "--run" in r.stderr
    r = runner.invoke(app, ["summarize", str(both), "--run", ids[1], "--json"])
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["summary"]["requests"] == 6 and data["run"]["run_id"] == ids[1]
    r = runner.invoke(app, ["summarize", str(both), "--run", "nope"])
    assert r.exit_code == 2 and "no run 'nope'" in r.stderr
    r = runner.invoke(app, ["compare", str(both)])
    assert r.exit_code == 2 and ids[0] in r.stderr
    r = runner.invoke(app, ["compare", str(both), "--run", ids[0], "--run", ids[1], "--json"])
    assert r.exit_code == 0, r.output
    names = [x["name"] for x in json.loads(r.stdout)["runs"]]
    assert names == [f"both.jsonl#{ids[0]}", f"both.jsonl#{ids[1]}"]


def test_old_files_without_run_ids_are_split_by_their_meta_lines(tmp_path):
    p = tmp_path / "old.jsonl"
    rec = {"kind": "record", "request_id": "0", "source": "measured", "arrival_s": 0.0, "prompt_tokens": 4,
           "output_tokens": 2, "first_token_s": 0.1, "end_s": 0.2, "itl_s": [0.1]}
    p.write_text("\n".join(json.dumps(x) for x in ({"kind": "meta"}, rec, {"kind": "meta"}, rec)) + "\n")
    with pytest.raises(VazaoError, match="2 runs"):
        read_log(p)
    assert len(read_log(p, "#2").records) == 1


def test_summarize_with_no_records_exits_2(tmp_path):
    p = tmp_path / "empty.jsonl"
    with RecordLog(p, {"url": "http://x/v1"}):
        pass
    r = runner.invoke(app, ["summarize", str(p)])
    assert r.exit_code == 2 and "nothing to summarize" in r.stderr
    warm = tmp_path / "warm.jsonl"
    with RecordLog(warm, {}) as log:
        log.record(RequestRecord("w", "measured", 0.0, 5, 3, 0.1, 0.3, (0.1, 0.1)), kind="warmup")
    r = runner.invoke(app, ["summarize", str(warm)])
    assert r.exit_code == 2 and "warm-up requests only" in r.stderr
    r = runner.invoke(app, ["compare", str(p)])
    assert r.exit_code == 2


def test_existing_files_are_refused_unless_force(fake_llm, wl, tmp_path):
    records, out = tmp_path / "r.jsonl", tmp_path / "r.json"
    assert bench(fake_llm.url, "-w", wl, "-o", str(out)).exit_code == 0
    before = (records.read_text(), out.read_text())
    for args in (["-o", str(out)], ["--records", str(records)], ["-o", str(tmp_path / "new.json"),
                                                                  "--records", str(records)]):
        r = bench(fake_llm.url, "-w", wl, *args)
        assert r.exit_code == 2 and "exists; pass --force" in r.stderr, r.output
    assert (records.read_text(), out.read_text()) == before  # untouched, no request sent
    r = bench(fake_llm.url, "-w", wl, "-o", str(out), "--force")
    assert r.exit_code == 0, r.output
    assert len({d["run_id"] for d in _lines(records)}) == 1  # overwritten, not appended to
    assert RecordLog  # the writer itself refuses an existing file too
    with pytest.raises(VazaoError, match="exists"):
        RecordLog(records, {})


def test_default_records_names_are_unique(fake_llm, wl, tmp_path, monkeypatch):
    names = {default_records_name() for _ in range(200)}
    assert len(names) == 200
    runs = tmp_path / "runs"
    monkeypatch.setenv(RUNS_DIR_ENV, str(runs))
    for _ in range(2):  # two runs within the same second
        assert bench(fake_llm.url, "-w", wl).exit_code == 0
    files = sorted(runs.glob("vazao-bench-*.jsonl"))
    assert len(files) == 2
    assert all(len({d["run_id"] for d in _lines(f)}) == 1 for f in files)


# ---- unbounded server-sent events ---------------------------------------------------------------------


async def _raw_server(body: bytes, endless: bool) -> tuple[asyncio.AbstractServer, str]:
    """An HTTP/1.1 server that answers every request with an event stream: `body` (with
    Content-Length), or, when `endless`, one data: line that never ends."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await reader.readuntil(b"\r\n\r\n")
            if endless:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
                             b"data: {\"x\": \"")
                chunk = b"a" * 65536
                while not writer.is_closing():
                    writer.write(chunk)
                    await writer.drain()
            else:
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}/v1"


def _event(text: str) -> bytes:
    return b"data: " + json.dumps({"id": "x", "choices": [{"index": 0, "delta": {"content": text}}]}).encode()


async def _send(body: bytes = b"", endless: bool = False, max_line: int | None = None):
    server, url = await _raw_server(body, endless)
    try:
        async with StreamClient(Target(url, model="m", api_key_env=None), request_timeout_s=60) as client:
            if max_line is not None:
                client.max_event_bytes = max_line
            rec, _ = await client.send("0", Prompt(8, text="hi"))
    finally:
        server.close()
    return rec


def test_a_big_event_under_the_cap_is_read():
    big = "y" * (3 * 2**20)  # 3 MiB of content in one event, arriving in many reads
    body = _event(big) + b"\n\n" + _event("z") + b"\n\n" + b"data: [DONE]\n\n"
    rec = asyncio.run(_send(body))
    assert rec.error is None and rec.output_tokens == 2


def test_an_event_over_the_cap_is_refused_with_its_own_error():
    body = _event("y" * (9 * 2**20)) + b"\n\ndata: [DONE]\n\n"  # 9 MiB: over the 8 MiB default
    rec = asyncio.run(_send(body))
    assert rec.error.startswith("sse_line_too_long:"), rec.error


def test_an_endless_line_stops_at_the_cap():
    rec = asyncio.run(_send(endless=True, max_line=2**20))
    assert rec.error.startswith("sse_line_too_long:"), rec.error


def test_the_line_buffer_never_exceeds_the_cap():
    """Feed a line in small reads: the buffer grows in place and is refused past the cap, its
    size then at most the cap plus one read."""

    async def go():
        ex = h1.Exchange(8, True, False, max_line=10_000)
        ex.phase, ex.sse, ex.feed_body = h1.BODY, True, ex._until_eof
        peak = 0
        for _ in range(1000):
            ex.feed(b"data: " + b"q" * 100)
            peak = max(peak, len(ex.sbuf))
            if ex.abort is not None:
                break
        return ex, peak

    ex, peak = asyncio.run(go())
    assert ex.abort is not None and ex.abort.kind == "sse_line_too_long"
    assert peak <= 10_000


# ---- bad input: one line, exit 2, before any request ------------------------------------------------


BAD_OPTIONS = [
    (["--requests", "1000000000000"], "--requests must be at most 10,000,000"),
    (["--requests", "0"], "--requests must be at least 1"),
    (["--requests", "1.5"], "whole number"),
    (["--warmup", "-1"], "--warmup must be at least 0"),
    (["--max-connections", "0"], "--max-connections must be at least 1"),
    (["--concurrency", ""], "--concurrency is empty"),
    (["--concurrency", "1,,2"], "empty item"),
    (["--rate", ""], "--rate is empty"),
    (["--rate", "nan"], "finite"),
    (["--timeout", "0s"], "--timeout must be greater than 0"),
    (["--timeout", "-5s"], "--timeout"),
    (["--timeout", "1e400s"], "--timeout"),
    (["--stall-timeout", "0"], "--stall-timeout must be greater than 0"),
    (["--max-time", "0s"], "--max-time must be greater than 0"),
    (["--duration", "0s"], "--duration must be greater than 0"),
    (["--extra-body", "[" * 100000], "--extra-body nests deeper than 64"),
    (["--extra-body", "[1]"], "must be a JSON object"),
    (["--tokenizer", "/no/such/tokenizer.json"], "--tokenizer file /no/such/tokenizer.json does not exist"),
    (["--dataset", "/no/such/data.jsonl"], "does not exist"),
    (["-H", "\x01: y"], "not a valid HTTP header name"),
    (["-H", "X-A: b\x07c"], "control character"),
    (["-H", "no-colon"], "must look like 'Name: value'"),
]


@pytest.mark.parametrize("args,message", BAD_OPTIONS, ids=[" ".join(a)[:40] for a, _ in BAD_OPTIONS])
def test_bad_options_are_one_line_before_any_request(wl, tmp_path, args, message):
    records = tmp_path / "x.jsonl"
    r = bench("http://127.0.0.1:9/v1", "-w", wl, "--records", str(records), *args)
    assert r.exit_code == 2, r.output
    assert message in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert not records.exists()


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999/v1", "ftp://x/v1", "http:///v1",
                                 "http://127.0.0.1/v 1", "http://u:p@[::1/v1"])
def test_bad_urls_are_one_line(wl, tmp_path, url):
    r = bench(url, "-w", wl, "--records", str(tmp_path / "x.jsonl"))
    assert r.exit_code == 2, r.output
    assert len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.output
    assert "u:p" not in r.stderr


def test_dataset_lines_go_through_the_input_layer(fake_llm, wl, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"prompt": "ok"}\n{"prompt": "\xff\xfe"}\n')
    r = bench(fake_llm.url, "-w", wl, "--records", str(tmp_path / "a.jsonl"), "--dataset", str(bad))
    assert r.exit_code == 2 and "bad.jsonl:2:" in r.stderr and "UTF-8" in r.stderr, r.stderr
    deep = tmp_path / "deep.jsonl"
    deep.write_text('{"prompt": ' + "[" * 200 + "]" * 200 + "}\n")
    r = bench(fake_llm.url, "-w", wl, "--records", str(tmp_path / "b.jsonl"), "--dataset", str(deep))
    assert r.exit_code == 2 and "nests deeper" in r.stderr, r.stderr


def test_a_huge_request_count_is_lazy_and_max_time_ends_it(fake_llm, tmp_path):
    """10 million planned requests: the plan is generated as it is sent, so the run starts at once,
    and --max-time ends it (memory stays flat: nothing holds the whole plan)."""
    p = tmp_path / "many.yaml"
    p.write_text("name: many\narrival: {kind: concurrency, concurrency: 4}\nprompt: 8\noutput: 4\nrequests: 10\n")
    records = tmp_path / "many.jsonl"
    t0 = time.monotonic()
    r = bench(fake_llm.url, "-w", str(p), "--requests", "10000000", "--max-time", "3s", "--timeout", "2s",
              "--records", str(records), "--json")
    took = time.monotonic() - t0
    assert r.exit_code == 0, r.output
    data = json.loads(r.stdout)
    assert data["run"]["stopped"] == "max_time" and data["run"]["not_sent"] > 9_000_000
    assert data["summary"]["requests"] > 0
    # the whole plan: 10M requests × (20 ms TTFT + 3 × 2 ms) / 4 slots ≈ 65,000 s; --max-time (3 s, + a 2 s
    # drain) ended it: a margin of 100 on that plan holds on any machine that can run the test at all
    assert took < 10_000_000 * (0.020 + 3 * 0.002) / 4 / 100


@pytest.mark.parametrize("event", [
    {"choices": {"0": {"delta": {"content": "x"}}}},  # choices an object
    {"choices": ["x"]},  # a choice that is not an object
    {"choices": [{"delta": {"content": 7}}]},  # content not a string
    {"choices": [{"delta": {"content": "x"}, "finish_reason": ["stop"]}]},
    {"choices": [], "usage": ["not", "an", "object"]},
], ids=["choices-object", "choice-string", "content-number", "finish-list", "usage-list"])
def test_events_of_the_wrong_shape_are_malformed_not_a_crash(event):
    body = _event("ok") + b"\n\n" + b"data: " + json.dumps(event).encode() + b"\n\ndata: [DONE]\n\n"
    rec = asyncio.run(_send(body))
    assert rec.error is not None and rec.error.startswith("malformed_sse:"), rec.error


def test_usage_that_is_not_a_count_is_ignored():
    usage = {"choices": [], "usage": {"completion_tokens": "many", "prompt_tokens": -3,
                                      "prompt_tokens_details": {"cached_tokens": 1e300}}}
    finish = {"choices": [{"delta": {}, "finish_reason": "stop"}]}
    body = b"\n\n".join([_event("a"), _event("b"), b"data: " + json.dumps(finish).encode(),
                         b"data: " + json.dumps(usage).encode(), b"data: [DONE]", b""])
    rec = asyncio.run(_send(body))
    assert rec.error is None and rec.output_tokens == 2 and rec.extra["tokens_from"] == "chunks"
    assert rec.cached_prompt_tokens == 0 and rec.extra["prompt_tokens_from"] == "planned"


def test_an_unreachable_url_without_the_probe_is_still_bad_input(wl, tmp_path):
    r = bench("http://127.0.0.1:9/v1", "-w", wl, "--no-probe", "--records", str(tmp_path / "x.jsonl"))
    assert r.exit_code == 2 and "cannot reach http://127.0.0.1:9/v1" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_a_cancellation_taken_back_is_given_again():
    """The first signal cancels the run's task; if something below takes the cancellation back
    (`uncancel()`) and waits on, the run is cancelled again within a second or two, not left to the
    60 s watchdog."""
    from vazao.cli.interrupt import NUDGE_S, Interrupts

    async def stubborn() -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            asyncio.current_task().uncancel()  # the fault: the cancellation is lost
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            return "cancelled again"
        return "ran on"

    async def main() -> tuple[str, float]:
        sig = Interrupts(say=lambda text: None)
        task = asyncio.get_running_loop().create_task(stubborn())
        sig.attach(task)
        try:
            await asyncio.sleep(0)
            t0 = time.monotonic()
            sig._in_loop(signal.SIGTERM)
            return await task, time.monotonic() - t0
        finally:
            for s in (signal.SIGINT, signal.SIGTERM):
                asyncio.get_running_loop().remove_signal_handler(s)
            sig.restore()

    outcome, waited = asyncio.run(main())
    assert outcome == "cancelled again"
    assert NUDGE_S <= waited < 20  # one nudge; the bound is loose for a loaded machine


def test_a_second_signal_outside_the_loop_writes_its_line_without_the_console(capfd):
    """A Python signal handler can land inside an import: the scratch suite's loaded run caught the second
    SIGINT while rich was importing its emoji table, and printing through rich there died with an
    ImportError (exit 1). Outside the loop the line goes straight to stderr's descriptor; in a loop
    callback, where any code may run, through `say`."""
    from vazao.cli.interrupt import Interrupts

    said: list[str] = []
    sig = Interrupts(say=said.append)
    try:
        assert sig._count(signal.SIGINT) == 1
        assert sig._count(signal.SIGINT) == 2  # as _early and _late call it: from a signal handler
        assert said == []
        assert "once more to quit at once" in capfd.readouterr().err
    finally:
        sig.restore()
    loop_sig = Interrupts(say=said.append)
    try:
        loop_sig._count(signal.SIGINT, in_loop=True)
        loop_sig._count(signal.SIGINT, in_loop=True)
        assert len(said) == 1 and "once more to quit" in said[0]
    finally:
        loop_sig.restore()
