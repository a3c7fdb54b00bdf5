"""Secrets never leave a bench run: a server that echoes the API key, the -H headers and the URL's
credentials back in its 401 and 400 bodies gets them masked in stdout, stderr, the records and the
result file; setup requests never follow a redirect to another host with the credentials."""

from __future__ import annotations

import json
from base64 import b64encode

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.loadgen import redact
from vazao.testing.fake_server import FakeConfig, serve_in_thread

runner = CliRunner()
KEY = "sk-vazao-ECHOED-KEY-0123456789"
HEADER_SECRET = "hdr-ECHOED-SECRET-456"
USER, PASSWORD = "benchuser", "pw-ECHOED-789"


@pytest.fixture()
def wl(tmp_path):
    p = tmp_path / "small.yaml"
    p.write_text("name: small\narrival: {kind: concurrency, concurrency: 2}\nprompt: 8\noutput: 4\nrequests: 4\n")
    return str(p)


def bench(*args: str, env: dict | None = None):
    return runner.invoke(app, ["bench", *args, "--no-progress"], env=env)


def _everything(r, tmp_path) -> list[str]:
    texts = [r.stdout, r.stderr]
    texts += [p.read_text() for p in tmp_path.iterdir() if p.suffix in (".json", ".jsonl")]
    return texts


def _assert_clean(texts: list[str], *secrets: str) -> None:
    for t in texts:
        for s in secrets:
            assert s not in t, f"{s!r} leaked: …{t[max(0, t.find(s) - 80):t.find(s) + 80]}…"


def test_a_401_that_echoes_the_key_and_headers(wl, tmp_path):
    with serve_in_thread(FakeConfig(ttft=0.005, itl=0.001, api_key="the-right-key", echo_headers=True)) as server:
        r = bench(server.url, "-w", wl, "--records", str(tmp_path / "a.jsonl"), "--api-key-env", "VZ_KEY",
                  "-H", f"X-Token: {HEADER_SECRET}", env={"VZ_KEY": KEY})
    assert r.exit_code == 2 and "was refused" in r.stderr
    assert "Incorrect API key provided" in r.stderr  # the server's words are kept, less the secrets
    texts = _everything(r, tmp_path)
    assert any(redact.MASK in t for t in texts)
    _assert_clean(texts, KEY, HEADER_SECRET)


@pytest.mark.parametrize("json_out", [False, True])
def test_a_400_on_every_request_that_echoes_everything(wl, tmp_path, json_out):
    """--no-probe: every request of the run gets the echoing 400, so every record carries it."""
    with serve_in_thread(FakeConfig(ttft=0.005, itl=0.001, status=400, echo_headers=True)) as server:
        host = server.url.removeprefix("http://")
        url = f"http://{USER}:{PASSWORD}@{host}"
        r = bench(url, "-w", wl, "--no-probe", "-o", str(tmp_path / "r.json"), "--api-key-env", "VZ_KEY",
                  "-H", f"X-Token: {HEADER_SECRET}", "-H", "X-Plain: 1", *(["--json"] if json_out else []),
                  env={"VZ_KEY": KEY})
        seen = [h for _, _, h in server.seen]
    # the server did get the credentials (so the echo had something to leak)
    assert any(h.get("Authorization") == f"Bearer {KEY}" and h.get("X-Token") == HEADER_SECRET for h in seen)
    assert r.exit_code == 1, r.output  # every request failed
    records = (tmp_path / "r.jsonl").read_text()
    assert records.count('"http_400') >= 4 and "request headers" in records
    basic = b64encode(f"{USER}:{PASSWORD}".encode()).decode()
    _assert_clean(_everything(r, tmp_path), KEY, HEADER_SECRET, PASSWORD, basic)


def test_redact_masks_every_form_of_a_secret():
    with redact.scope(["Bearer sk-abc-123456", 'we"ird\\secret', "1", *redact.url_secrets("http://u:p%40ss@h/v1")]):
        assert redact.redact("x sk-abc-123456 y") == f"x {redact.MASK} y"
        assert redact.redact('{"m": "we\\"ird\\\\secret"}') == '{"m": "' + redact.MASK + '"}'  # JSON-escaped
        assert "p@ss" not in redact.redact("password p@ss") and "1" in redact.redact("1")
        assert redact.redact_obj({"a": ["sk-abc-123456"]}) == {"a": [redact.MASK]}
    assert redact.redact("sk-abc-123456") == "sk-abc-123456"  # the scope ended


def test_setup_requests_do_not_follow_a_redirect_to_another_host(wl, tmp_path):
    """/v1/models, /metrics and tokenize on the first server redirect to a second one (another
    port: another origin). Nothing reaches the second one; the run says so in one line."""
    with serve_in_thread(FakeConfig(ttft=0.005, itl=0.001)) as other, \
            serve_in_thread(FakeConfig(ttft=0.005, itl=0.001, usage=False)) as first:
        url = first.url.replace("/v1", f"/cfg/redirect_port={other.port}/v1")
        r = bench(url, "-w", wl, "--records", str(tmp_path / "r.jsonl"), "--api-key-env", "VZ_KEY",
                  "-H", f"x-api-key: {HEADER_SECRET}", env={"VZ_KEY": KEY})
        reached = list(other.seen)
        redirected = [p for _, p, _ in first.seen if not p.endswith("/completions")]
    assert r.exit_code == 0, r.output
    assert redirected  # the first server was asked, and answered with redirects
    assert reached == []
    notes = [line for line in r.stdout.splitlines() if "not followed" in line]
    assert len(notes) == 1 and f"127.0.0.1:{other.port}" in notes[0]
    server = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()
              if '"kind": "server"' in x][0]
    assert server["redirects_refused"]


def test_descriptive_headers_are_not_secrets():
    got = redact.header_secrets({"Content-Type": "application/json", "X-Api-Key": "k-123456", "accept": "text/x"})
    assert got == ["k-123456"]
