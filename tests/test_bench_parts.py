"""The bench's small parts: the records log, server facts, prompt sizing, datasets, tokenizers."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from vazao.cli import app
from vazao.errors import VazaoError
from vazao.loadgen.prompts import WORDS, Dataset, PromptBuilder, Sizing, TextMaker, sizing_from_usage
from vazao.loadgen.records import RecordLog, read_log
from vazao.loadgen.server_facts import metrics_delta, parse_prometheus
from vazao.results import RequestRecord, read_jsonl
from vazao.workload import RequestSpec


def test_log_lines_and_a_torn_last_line(tmp_path):
    p = tmp_path / "r.jsonl"
    with RecordLog(p, {"url": "http://x/v1"}) as log:
        log.record(RequestRecord("a", "measured", 0.0, 5, 3, 0.1, 0.3, (0.1, 0.1)))
        log.record(RequestRecord("w", "measured", 0.0, 5, 3, 0.1, 0.3, (0.1, 0.1)), kind="warmup")
    with p.open("a") as fh:
        fh.write('{"kind": "record", "request_id": "b", "sou')  # killed mid-write
    log = read_log(p)
    assert [r.request_id for r in log.records] == ["a"] and len(log.warmup) == 1 and log.malformed == 1
    recs, bad = read_jsonl(p)  # results' reader sees only the record lines
    assert [r.request_id for r in recs] == ["a"] and bad == 1
    assert recs[0].itl_s == (0.1, 0.1) and recs[0].tpot_s == pytest.approx(0.1)


def test_prometheus_and_deltas():
    text = ('# HELP x\nvllm:prompt_tokens_total{model_name="m"} 10\nvllm:prompt_tokens_total{model_name="n"} 5\n'
            'vllm:e2e_request_latency_seconds_bucket{le="1"} 3\nvllm:e2e_request_latency_seconds_sum 2.5\n'
            'process_cpu_seconds_total 9\nllamacpp:tokens_predicted_total 7\n')
    m = parse_prometheus(text)
    assert m == {"vllm:prompt_tokens_total": 15.0, "vllm:e2e_request_latency_seconds_sum": 2.5,
                 "llamacpp:tokens_predicted_total": 7.0}
    after = {**m, "vllm:prompt_tokens_total": 40.0}
    assert metrics_delta(m, after) == {"vllm:prompt_tokens_total": 25.0}


def test_sizing_from_two_probes():
    s = sizing_from_usage((8, 200), (20, 260), "usage")
    assert s.tokens_per_word == pytest.approx(1.25) and s.overhead == 10
    assert s.words_for(135) == 108


def test_builder_prefix_and_sizes():
    maker = TextMaker(seed=1)
    b = PromptBuilder(maker, Sizing(1.0, 2, "test"), api="chat")
    p1 = b.build(0, RequestSpec("0", None, 130, 9, "sys", 100))
    p2 = b.build(1, RequestSpec("1", None, 140, 9, "sys", 100))
    assert p1.max_tokens == 9 and p1.tokens == 130 and p2.tokens == 140
    head = p1.messages[0]["content"].split("\n\n")[0]
    assert p2.messages[0]["content"].startswith(head + "\n\n") and len(head.split()) == 100
    assert p1.messages[0]["content"] != p2.messages[0]["content"]
    assert set(p1.messages[0]["content"].split()) <= set(WORDS)


def test_follow_up_turns_send_the_planned_user_message():
    # examples/support.yaml: a 6,000-token prefix, 300-token user messages, 250-token replies. Turn 2's history
    # (6,550 tokens) already holds the prefix; its new message must be ~300 tokens, not total - prefix - history.
    from vazao.workload import load_workload

    plan = load_workload("support", requests=3).specs()
    b = PromptBuilder(TextMaker(seed=1), Sizing(1.0, 2, "test"), api="chat")
    first = b.build(0, plan[0])
    b.completed(plan[0], first, first.tokens, plan[0].output_tokens, None)
    second = b.build(1, plan[1])
    assert plan[1].turn == 2 and plan[1].history_tokens == 6000 + 300 + 250
    assert len(second.messages) == 3  # the first turn, its answer, the new message
    assert len(second.messages[-1]["content"].split()) == plan[1].prompt_tokens - plan[1].history_tokens == 300


def test_dataset_rows_and_errors(tmp_path):
    p = tmp_path / "d.jsonl"
    p.write_text('{"prompt": "alpha beta gamma", "output_tokens": 5}\n\n{"messages": [{"role": "user", '
                 '"content": "hi there"}]}\n')
    d = Dataset.load(p)
    b = PromptBuilder(TextMaker(), Sizing(), api="chat", dataset=d)
    a = b.build(0, RequestSpec("0", None, 10, 7))
    assert a.messages == [{"role": "user", "content": "alpha beta gamma"}] and a.max_tokens == 5
    assert b.build(1, RequestSpec("1", None, 10, 7)).messages[0]["content"] == "hi there"
    assert b.build(2, RequestSpec("2", None, 10, 7)).max_tokens == 5  # rows cycle
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"nope": 1}\n')
    with pytest.raises(VazaoError, match="bad.jsonl:1"):
        Dataset.load(bad)


def _word_tokenizer(path):
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace

    vocab = {w: i for i, w in enumerate(["[UNK]", "tok", *WORDS, "alpha", "beta"])}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    tok.save(str(path))


def test_bench_with_a_tokenizer_and_a_dataset(fake_llm, tmp_path):
    pytest.importorskip("tokenizers")
    tj = tmp_path / "tokenizer.json"
    _word_tokenizer(tj)
    data = tmp_path / "d.jsonl"
    data.write_text('{"prompt": "alpha beta alpha beta", "output_tokens": 6}\n')
    wl = tmp_path / "w.yaml"
    wl.write_text("name: w\narrival: {kind: concurrency, concurrency: 2}\nprompt: 30\noutput: 10\nrequests: 4\n")
    url = fake_llm.url.replace("/v1", "/cfg/usage=0/v1")
    r = CliRunner().invoke(app, ["bench", url, "-w", str(wl), "--tokenizer", str(tj), "--json", "--no-progress",
                                 "--records", str(tmp_path / "t.jsonl")])
    assert r.exit_code == 0, r.output
    out = json.loads(r.stdout)
    assert out["tokens"] == {"output": {"tokenizer": 4}, "prompt": {"tokenizer": 4}}
    assert out["summary"]["prompt_tokens"] == 4 * 30 and out["summary"]["output_tokens"] == 40
    r = CliRunner().invoke(app, ["bench", url, "-w", str(wl), "--dataset", str(data), "--json", "--no-progress",
                                 "--records", str(tmp_path / "d.jsonl.out")])
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["summary"]["output_tokens"] == 4 * 6
    r = CliRunner().invoke(app, ["bench", url, "-w", str(wl), "--tokenizer", str(tmp_path / "nope.json"),
                                 "--no-progress", "--records", str(tmp_path / "n.jsonl")])
    assert r.exit_code == 2 and "tokenizer" in r.stderr
