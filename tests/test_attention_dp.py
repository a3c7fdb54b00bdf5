"""Attention data parallelism: each of the tp GPUs runs attention, the dense layers and the lm_head whole on its
own requests and KV cache, and only the routed experts are split (TensorRT-LLM `enable_attention_dp`, which its
v1.0 performance overview runs MoE models with: docs/source/performance/perf-overview.md, "Reproducing
Benchmarked Results"). The expected numbers below are the models' own config.json shapes (catalog/data/
models.yaml) worked by hand."""

from __future__ import annotations

import pytest

from vazao.analytic import decode_cost, offline_point
from vazao.errors import VazaoError
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import fit, weights_bytes_per_gpu
from vazao.physics.pipeline import microbatches
from vazao.validate.rows import read_rows

MAVERICK = "llama-4-maverick-17b-128e"
QWEN235 = "qwen3-235b-a22b"


def _dep(model: str, adp: bool, count: int = 8, gpu: str = "h100-sxm", engine: str = "trtllm"):
    return make_deployment(model, gpu, "fp8", count=count, engine=engine, attention_dp=adp)


def test_each_gpu_keeps_everything_but_the_routed_experts_whole():
    tp, adp = _dep(MAVERICK, False), _dep(MAVERICK, True)
    m = tp.model
    # Maverick: 24 MoE layers × 128 experts × 3 × 5120 × 8192 = 386.5 B routed parameters, 1 byte each in FP8
    routed = 24 * 128 * 3 * 5120 * 8192
    assert m.routed_expert_params == routed
    w = tp.weights_bytes
    assert weights_bytes_per_gpu(tp) == pytest.approx(w / 8)
    assert weights_bytes_per_gpu(adp) == pytest.approx(w - routed + routed / 8)
    # the rest (attention, 24 dense MLPs, shared experts, embedding and lm_head: about 14 B parameters) on each GPU
    assert 12e9 < weights_bytes_per_gpu(adp) - w / 8 < 16e9
    # so an 80 GB H100 keeps far less for the KV cache
    f_tp, f_adp = fit(tp, 2176), fit(adp, 2176)
    assert f_adp.free_bytes_for_kv < 0.6 * f_tp.free_bytes_for_kv
    assert f_adp.max_concurrent_sequences < 0.6 * f_tp.max_concurrent_sequences


def test_no_kv_head_is_replicated_when_attention_is_data_parallel():
    # Qwen3-235B-A22B has 4 KV heads: at tp 8 each head is kept by 2 GPUs; under attention DP each GPU keeps
    # all 4 heads of its own requests, so a token's KV sits once in the replica
    tp, adp = _dep(QWEN235, False, gpu="h200-sxm"), _dep(QWEN235, True, gpu="h200-sxm")
    per_token = 94 * 2 * 4 * 128 * 1  # 94 layers, K and V, 4 heads of 128, FP8
    assert fit(tp, 2000).kv_bytes_per_token_per_gpu == per_token / 4  # one head per GPU (ceil(4 / 8))
    assert fit(adp, 2000).kv_bytes_per_token_per_gpu == per_token
    free_tp = fit(tp, 2000).free_bytes_for_kv / 8
    free_adp = fit(adp, 2000).free_bytes_for_kv / 8
    assert fit(tp, 2000).kv_capacity_tokens == int(free_tp / (per_token / 4))
    assert fit(adp, 2000).kv_capacity_tokens == int(free_adp / per_token) * 8
    # half the bytes per token per replica (no replica of a head), less the replicated attention weights
    assert fit(adp, 2000).kv_capacity_tokens > 1.5 * fit(tp, 2000).kv_capacity_tokens


def test_the_gpus_are_engines_of_their_own_and_share_the_experts_work():
    adp = _dep("qwen3-30b-a3b", True, count=4)
    tp = _dep("qwen3-30b-a3b", False, count=4)
    assert microbatches(adp) == 4 and microbatches(tp) == 1
    s = adp.consts.shard
    assert s.expert_token_mult == 4
    assert s.allreduces_per_step == adp.model.moe_layers  # a gather and a scatter per MoE layer, not 2 per layer
    # one GPU's step of 64 sequences: its own attention and dense work whole, and a quarter of the 4 × 64 tokens'
    # expert work: the FLOPs one tensor-parallel rank does for 256 (a quarter of everything)
    one, rank = decode_cost(adp, 64, 2048), decode_cost(tp, 256, 2048)
    assert one.flops == pytest.approx(rank.flops, rel=1e-9)
    # but it reads the attention and dense weights whole, and each sequence's KV heads all on one GPU
    assert one.bytes > rank.bytes


def test_a_dense_model_refuses_attention_data_parallelism():
    with pytest.raises(VazaoError, match="mixture-of-experts"):
        make_deployment("llama-3.1-70b", "h100-sxm", "fp8", count=4, attention_dp=True)


def test_a_max_load_run_shares_its_requests_among_the_engines():
    adp = _dep("qwen3-30b-a3b", True, count=8, gpu="h200-sxm")
    free = offline_point(adp, 128, 2048)
    capped = offline_point(adp, 128, 2048, requests=3000)
    assert capped.engines == 8
    assert capped.batch == 375 and free.batch > 375  # ceil(3000 / 8)


def test_the_perf_overview_moe_rows_are_read_with_attention_dp_and_its_dataset_sizes(tmp_path):
    head = ("id,source,engine,engine_version,model,params_b,precision_weights,precision_kv_or_compute,gpu,"
            "gpu_count,tp,pp,input_len,output_len,concurrency_or_batch,metric,value,notes\n")
    src = "NVIDIA/TensorRT-LLM docs/source/performance/perf-overview.md @00f37686"
    lines = [
        f"a,{src},trtllm,1.0,Qwen3-235B-A22B,235,FP8,not stated,H200-SXM-141GB,8,8,1,1000,1000,max(offline),"
        "output_tok_s_total,23789,MoE",
        f"b,{src},trtllm,1.0,Llama-3.3-70B,70,FP8,not stated,H100-SXM-80GB,2,2,1,1000,1000,max(offline),"
        "output_tok_s_total,4205,dense",
        f"c,{src},trtllm,1.0,Qwen3-30B-A3B,30,NVFP4,not stated,B200-180GB,1,1,1,1000,1000,max(offline),"
        "output_tok_s_total,25828,one GPU",
        "d,some bench,trtllm,1.0,Qwen3-235B-A22B,235,FP8,not stated,H200-SXM-141GB,8,8,1,1000,1000,"
        "concurrency=16,ttft_ms,200,moe_tp=1 moe_ep=8 attention_dp=1",
    ]
    path = tmp_path / "rows.csv"
    path.write_text(head + "\n".join(lines) + "\n")
    rows, problems = read_rows(path)
    assert not problems
    by = {r.id: r for r in rows}
    assert by["a"].attention_dp == 8 and by["a"].requests == 3000
    assert any("enable_attention_dp" in a for a in by["a"].assumed)
    assert by["b"].attention_dp is None and by["b"].requests is None  # dense: no attention DP, one engine
    assert by["b"].assumed == ()
    assert by["c"].attention_dp is None  # one GPU: nothing to split
    assert by["d"].attention_dp == 1 and by["d"].requests is None  # stated in the layout; not the perf overview


def test_an_estimate_s_batch_is_each_gpu_s_and_the_total_counts_them_all():
    from vazao.analytic import estimate

    adp = _dep("qwen3-30b-a3b", True, count=4, gpu="h200-sxm")
    row = estimate(adp, [16], 1024, 256).rows[0]
    assert row.tokens_per_s_per_request == pytest.approx(1 / row.decode_step_s)
    assert row.tokens_per_s_total == pytest.approx(4 * 16 / row.decode_step_s)


def test_the_simulator_serves_an_attention_dp_deployment_as_tp_engines():
    from vazao.sim import simulate
    from vazao.workload import workload_from_dict

    w = workload_from_dict({"name": "t", "arrival": {"kind": "concurrency", "concurrency": 8}, "prompt": 512,
                            "output": 32, "requests": 32, "seed": 1}, where="test")
    res = simulate(_dep("qwen3-30b-a3b", True, count=4, gpu="h200-sxm"), w)
    assert res.completed == 32 and res.errors == 0
    # four engines share the eight clients: no engine runs more than its share at once
    assert res.peak_running <= 8


def test_the_steady_point_counts_each_gpu_s_batch_and_all_of_them():
    from vazao.analytic import steady_batch_limit, steady_point

    adp = _dep("qwen3-30b-a3b", True, count=4, gpu="h200-sxm", engine="vllm")
    cap = fit(adp, 2048 + 512).max_concurrent_sequences
    assert steady_batch_limit(adp, 2048, 512) == min(cap // 4, adp.engine.max_num_seqs)
    one = steady_point(adp, 2048, 512, 32)
    assert one.output_tokens_per_s == pytest.approx(4 * 32 * 512 / (512 * one.tpot_s))


def test_a_pipeline_hand_off_carries_one_gpu_s_tokens_under_attention_dp():
    plain = make_deployment("qwen3-30b-a3b", "h100-sxm", "fp8", count=8, tp=4, pp=2, engine="trtllm")
    adp = make_deployment("qwen3-30b-a3b", "h100-sxm", "fp8", count=8, tp=4, pp=2, engine="trtllm",
                          attention_dp=True)
    # the step's activation bytes count the 4 GPUs' tokens, the hand-off only its own: the same bytes per token
    per_token = adp.consts.p2p_s_per_byte * adp.consts.shard.hidden_bytes_per_token
    assert per_token == pytest.approx(plain.consts.p2p_s_per_byte * plain.consts.shard.hidden_bytes_per_token)
