"""`vazao quality`'s metrics on hand-made answers, its result read back, and its faults against vazao's fake
server (refusals, echoed secrets, mismatched models, bad input: one line, exit 2). The real comparison, two
llama.cpp servers on two quantizations of one GGUF, is tests/test_quality_llama.py."""

from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.plan.quality import read_rows
from vazao.quality.compare import Answer, compare, position_divergence
from vazao.quality.measure import parse_answer
from vazao.quality.result import QualityMeasurement


def run(*args: str):
    return CliRunner().invoke(app, ["quality", *args])


def test_position_divergence_is_the_truncated_kl():
    """KL(P‖Q) = Σ p(t) ln(p(t)/q(t)) (Kullback & Leibler 1951), over the reference's top-k; a token missing
    from the candidate's top-k takes the candidate's k-th log-probability (compare.py's docstring)."""
    ref = (("a", math.log(0.5)), ("b", math.log(0.3)))
    cand = (("a", math.log(0.4)), ("c", math.log(0.35)))
    overlap, kl = position_divergence(ref, cand)
    assert overlap == 0.5
    assert kl == pytest.approx(0.5 * math.log(0.5 / 0.4) + 0.3 * math.log(0.3 / 0.35))
    assert position_divergence(ref, ref) == (1.0, 0.0)


def test_agreement_is_the_common_prefix():
    top = ((("x", -0.1),),) * 4
    a = Answer("x y z w", ("x", "y", "z", "w"), top)
    b = Answer("x y q w", ("x", "y", "q", "w"), top)
    s = compare(a, b)
    # 'w' agrees again after the answers part, but on another context: only the prefix x y counts
    assert (s.exact, s.unit, s.reference_units, s.agreeing_units) == (False, "tokens", 4, 2)
    assert s.positions == 3  # the two shared positions and the one where they part
    words = compare(Answer("one two three"), Answer("one two three"))
    assert (words.exact, words.unit, words.agreeing_units, words.positions) == (True, "words", 3, 0)


def test_parse_answer_reads_both_apis():
    comp = {"choices": [{"text": " Paris", "logprobs": {"tokens": [" Paris"], "top_logprobs": [{" Paris": -0.1,
                                                                                                 " Lyon": -3.0}]}}],
            "usage": {"prompt_tokens": 6}}
    a = parse_answer(comp, "completions")
    assert a.tokens == (" Paris",) and a.top == (((" Paris", -0.1), (" Lyon", -3.0)),) and a.prompt_tokens == 6
    chat = {"choices": [{"message": {"content": "red"}, "logprobs": {"content": [
        {"token": "red", "logprob": -0.2, "top_logprobs": [{"token": "red", "logprob": -0.2}]}]}}]}
    c = parse_answer(chat, "chat")
    assert c.text == "red" and c.tokens == ("red",) and c.top == ((("red", -0.2),),) and c.prompt_tokens is None
    assert parse_answer({"choices": []}, "chat") is None


@pytest.fixture
def prompts(tmp_path):
    p = tmp_path / "prompts.txt"
    p.write_text("What is 2+2?\n\nName a colour.\nSay hi.\n")
    return p


def test_same_server_agrees_with_itself_and_feeds_plan(fake_llm, prompts, tmp_path):
    out = tmp_path / "row.yaml"
    r = run(fake_llm.url, fake_llm.url, "--prompts", str(prompts), "--model", "llama-3.1-8b", "--format",
            "int4-awq", "--max-tokens", "8", "--json", "-o", str(out))
    assert r.exit_code == 0, r.output
    doc = json.loads(r.stdout)
    assert doc["kind"] == "quality" and doc["exact_matches"] == 3 and doc["agreement"] == 1.0
    assert doc["logprobs"] is False and doc["kl_nats"] is None  # the fake server returns no logprobs
    m = QualityMeasurement.from_json(doc)
    assert m.to_json() == doc  # reads back
    (row,) = read_rows(out)
    assert (row.family, row.format, row.recovery, row.reference_format) == ("llama", "int4-awq", 1.0, "bf16")
    assert row.source.startswith("measured by vazao quality on ") and row.source.endswith("prompts.txt")
    assert dict(row.counts)["prompts"] == 3
    # plan: AWQ on Llama has no published figure (pruned as unknown under a floor); the measured row lets it in
    args = ["plan", "-m", "llama-3.1-8b", "-g", "l4", "-f", "int4-awq", "--traffic", "1/s", "--slo",
            "ttft_p95=2s,tpot_p95=150ms", "--quality-floor", "0.99", "--requests", "40", "--simulate-top", "2",
            "--workers", "1", "--no-disagg", "--json"]
    unknown = CliRunner().invoke(app, args)
    assert unknown.exit_code == 1 and "quality unknown" in unknown.output
    known = CliRunner().invoke(app, [*args, "--quality", str(out)])
    assert known.exit_code in (0, 1), known.output
    plan = json.loads(known.stdout)
    assert plan["candidates"] and all(c["quality"] == 1.0 for c in plan["candidates"])
    assert "measured by vazao quality" in plan["candidates"][0]["quality_source"]


def test_a_refusing_endpoint_is_one_line(fake_llm, prompts):
    r = run(fake_llm.url, fake_llm.configured("status=503"), "--prompts", str(prompts), "--family", "llama",
            "--format", "q4_0")
    assert r.exit_code == 2 and "candidate" in r.output and "HTTP 503" in r.output
    assert len(r.output.strip().splitlines()) == 1
    r = run(fake_llm.url, "http://127.0.0.1:9/v1", "--prompts", str(prompts), "--family", "llama", "--format",
            "q4_0")
    assert r.exit_code == 2 and "could not connect" in r.output


def test_secrets_never_reach_the_output(fake_llm, prompts, monkeypatch):
    monkeypatch.setenv("QUALITY_KEY", "sk-quality-secret-42")
    r = run(fake_llm.url, fake_llm.configured("status=500,echo_headers=true"), "--prompts", str(prompts),
            "--family", "llama", "--format", "q4_0", "--api-key-env", "QUALITY_KEY", "-H", "X-Team: hush-hush-99")
    assert r.exit_code == 2, r.output
    assert "sk-quality-secret-42" not in r.output and "hush-hush-99" not in r.output
    assert "[redacted]" in r.output  # the server echoed them; vazao masked them


def test_mismatched_models_are_refused(fake_llm, prompts):
    # a chat template that counts differently: another tokenizer, so not two formats of one model
    r = run(fake_llm.url, fake_llm.configured("chat_overhead=9"), "--prompts", str(prompts), "--family", "llama",
            "--format", "q4_0", "--api", "chat")
    assert r.exit_code == 2 and "mismatched models" in r.output
    r = run(fake_llm.url, fake_llm.url, "--prompts", str(prompts), "--family", "llama", "--format", "q4_0",
            "--candidate-model", "other-model")
    assert r.exit_code == 2 and "does not serve model 'other-model'" in r.output


@pytest.mark.parametrize("content, words", [("", "holds no prompt"), ("\n  \n", "holds no prompt"),
                                            ('{"prompt": ""}\n', "non-empty"), ('{"x": 1\n', "JSON")])
def test_bad_prompt_files(fake_llm, tmp_path, content, words):
    p = tmp_path / "p.jsonl"
    p.write_text(content)
    r = run(fake_llm.url, fake_llm.url, "--prompts", str(p), "--family", "llama", "--format", "q4_0")
    assert r.exit_code == 2 and words in r.output, r.output
    assert len(r.output.strip().splitlines()) == 1


def test_bad_options(fake_llm, prompts):
    for extra, words in ((["--format", "bf16"], "both bf16"), (["--format", "q9_9"], "q9_9"),
                         (["--format", "q4_0", "--metric", "vibes"], "metric"),
                         (["--format", "q4_0", "--top-logprobs", "50"], "top-logprobs")):
        r = run(fake_llm.url, fake_llm.url, "--prompts", str(prompts), "--family", "llama", *extra)
        assert r.exit_code == 2 and words in r.output, (extra, r.output)
    r = run(fake_llm.url, fake_llm.url, "--prompts", str(prompts), "--format", "q4_0")
    assert r.exit_code == 2 and "--family" in r.output
