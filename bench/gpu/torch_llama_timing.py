"""Time prefill and decode of random-weight Llama models on a GPU, for bench/gpu/compare.py.

Runs where torch and transformers are (a lent GPU machine; `--device cpu --tiny` here for a dry run),
never imported by vazao. Two paths over the same weights, built with `from_config` (no download):

- hf_eager: the transformers model's own forward, eager PyTorch, DynamicCache (what `generate()` does);
- graph: the same modules driven through a static KV cache and captured as one CUDA graph per shape
  (what engines do to take launch overhead out of a step). Decode folds the query heads of a KV head
  into the query-length axis, so attention reads each cached key once.

The graph path is checked against the transformers forward (logits of a prefill and of the next
decode step) before anything is timed. Writes one JSON file, rewritten after each model so that a run
cut short keeps what it measured.

    python bench/gpu/torch_llama_timing.py --out $OUT/llama_timing.json
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# The architectures of vazao's catalog rows (catalog/data/models.yaml, from each model's config.json).
MODELS = {
    "llama-3.2-1b": dict(num_hidden_layers=16, hidden_size=2048, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=64, intermediate_size=8192, tie_word_embeddings=True),
    "llama-3.2-3b": dict(num_hidden_layers=28, hidden_size=3072, num_attention_heads=24, num_key_value_heads=8,
                         head_dim=128, intermediate_size=8192, tie_word_embeddings=True),
    "llama-3.1-8b": dict(num_hidden_layers=32, hidden_size=4096, num_attention_heads=32, num_key_value_heads=8,
                         head_dim=128, intermediate_size=14336, tie_word_embeddings=False),
}
TINY = dict(num_hidden_layers=2, hidden_size=128, num_attention_heads=8, num_key_value_heads=2, head_dim=16,
            intermediate_size=256, tie_word_embeddings=False)

PREFILL = [(1, 128), (1, 512), (1, 2048), (1, 8192), (4, 2048)]  # (batch, prompt tokens)
DECODE_GRAPH = [(1, 1024), (4, 1024), (16, 1024), (64, 1024), (256, 1024), (1, 8192), (16, 8192), (64, 4096)]
DECODE_EAGER = [(1, 1024), (8, 1024), (32, 1024), (128, 1024)]  # (batch, context tokens)
EAGER_STEPS = 16


def build(name: str, arch: dict, device: str, dtype: torch.dtype, vocab: int):
    from transformers import AutoModelForCausalLM, LlamaConfig

    cfg = LlamaConfig(vocab_size=vocab, max_position_embeddings=131072, rope_theta=500000.0, rms_norm_eps=1e-5,
                      attention_bias=False, mlp_bias=False, **arch)
    cfg._attn_implementation = "sdpa"
    torch.manual_seed(0)
    with torch.device(device):
        try:
            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        except TypeError:  # transformers before 4.56 names it torch_dtype
            model = AutoModelForCausalLM.from_config(cfg, torch_dtype=dtype)
    return model.to(device=device, dtype=dtype).eval()


class Timer:
    """Median seconds of a callable: device events on CUDA, the host clock after a sync elsewhere."""

    def __init__(self, device: str):
        self.cuda = device.startswith("cuda")

    def sync(self):
        if self.cuda:
            torch.cuda.synchronize()

    def each(self, fn, warmup: int, reps: int) -> list[float]:
        for _ in range(warmup):
            fn()
        self.sync()
        out = []
        for _ in range(reps):
            if self.cuda:
                a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                a.record()
                fn()
                b.record()
                b.synchronize()
                out.append(a.elapsed_time(b) / 1e3)
            else:
                t = time.perf_counter()
                fn()
                out.append(time.perf_counter() - t)
        return out


def summary(times: list[float]) -> dict:
    s = sorted(times)
    return {"time_s": statistics.median(s), "min_s": s[0], "max_s": s[-1], "reps": len(s)}


class GraphLlama:
    """The transformers model's own modules run over a static KV cache, one CUDA graph per shape."""

    def __init__(self, model, batch: int, cache_len: int, matmul_attention: bool = False):
        m = model.model
        self.model, self.layers, cfg = model, m.layers, model.config
        self.kvh, self.heads = cfg.num_key_value_heads, cfg.num_attention_heads
        self.d = cfg.head_dim
        p = next(model.parameters())
        shape = (batch, self.kvh, cache_len, self.d)
        self.k = [torch.zeros(shape, device=p.device, dtype=p.dtype) for _ in self.layers]
        self.v = [torch.zeros(shape, device=p.device, dtype=p.dtype) for _ in self.layers]
        pos = torch.arange(cache_len, device=p.device)[None]
        dummy = torch.zeros(1, device=p.device, dtype=p.dtype)
        self.cos, self.sin = m.rotary_emb(dummy, pos)  # (1, cache_len, d), what the HF forward uses
        self.cache_len = cache_len
        self.matmul_attention = matmul_attention

    def fill_random(self):
        for t in self.k + self.v:
            t.normal_()

    @staticmethod
    def _rope(x, cos, sin):  # x (b, h, n, d); cos, sin (n, d)
        half = x.shape[-1] // 2
        rot = torch.cat((-x[..., half:], x[..., :half]), dim=-1)
        return x * cos + rot * sin

    def prefill(self, ids):
        """Positions 0..n-1 of every sequence; logits of the last one."""
        b, n = ids.shape
        x = self.model.model.embed_tokens(ids)
        cos, sin = self.cos[0, :n], self.sin[0, :n]
        for i, layer in enumerate(self.layers):
            at = layer.self_attn
            h = layer.input_layernorm(x)
            q = at.q_proj(h).view(b, n, self.heads, self.d).transpose(1, 2)
            k = at.k_proj(h).view(b, n, self.kvh, self.d).transpose(1, 2)
            v = at.v_proj(h).view(b, n, self.kvh, self.d).transpose(1, 2)
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            self.k[i][:, :, :n] = k
            self.v[i][:, :, :n] = v
            g = self.heads // self.kvh
            a = F.scaled_dot_product_attention(q, k.repeat_interleave(g, 1), v.repeat_interleave(g, 1),
                                               is_causal=True)
            x = x + at.o_proj(a.transpose(1, 2).reshape(b, n, self.heads * self.d))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.lm_head(self.model.model.norm(x[:, -1]))

    def decode(self, ids, pos):
        """One token per sequence at position `pos` (a 1-element tensor): the cache holds 0..pos-1."""
        b = ids.shape[0]
        x = self.model.model.embed_tokens(ids)[:, None]
        cos, sin = self.cos[0].index_select(0, pos), self.sin[0].index_select(0, pos)
        mask = (torch.arange(self.cache_len, device=ids.device) <= pos)[None, None, None]
        g = self.heads // self.kvh
        for i, layer in enumerate(self.layers):
            at = layer.self_attn
            h = layer.input_layernorm(x)
            q = at.q_proj(h).view(b, 1, self.heads, self.d).transpose(1, 2)
            k = at.k_proj(h).view(b, 1, self.kvh, self.d).transpose(1, 2)
            v = at.v_proj(h).view(b, 1, self.kvh, self.d).transpose(1, 2)
            q, k = self._rope(q, cos, sin), self._rope(k, cos, sin)
            self.k[i].index_copy_(2, pos, k)
            self.v[i].index_copy_(2, pos, v)
            # the g query heads of one KV head become g query rows: each cached key is read once
            qg = q.reshape(b, self.kvh, g, self.d)
            if self.matmul_attention:  # two batched GEMMs: cuBLAS spreads the cache's length over the GPU
                s = (qg @ self.k[i].transpose(-1, -2)) * self.d**-0.5
                a = torch.softmax(s.masked_fill(~mask, float("-inf")).float(), dim=-1).to(qg.dtype) @ self.v[i]
            else:  # one fused kernel: few blocks when batch × KV heads is small
                a = F.scaled_dot_product_attention(qg, self.k[i], self.v[i], attn_mask=mask)
            x = x + at.o_proj(a.reshape(b, 1, self.heads * self.d))
            x = x + layer.mlp(layer.post_attention_layernorm(x))
        return self.model.lm_head(self.model.model.norm(x[:, 0]))


def captured(fn, device: str):
    """fn as a replayable callable: a CUDA graph on CUDA, fn itself elsewhere."""
    if not device.startswith("cuda"):
        return fn
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def rel_err(a, b) -> float:
    a, b = a.float(), b.float()
    return float((a - b).norm() / b.norm())


@torch.inference_mode()
def check(name: str, arch: dict, device: str, vocab: int) -> dict:
    """The graph path's logits against the transformers forward over the same tokens, on a float32
    copy of the architecture cut to two layers (bf16 through 32 random layers differs by a few per cent
    between kernels, which would hide a real error; float32 agrees to ~1e-6 when the code is right)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    model = build(name, {**arch, "num_hidden_layers": 2}, device, torch.float32, vocab)
    b, n = 2, 48
    ids = torch.randint(0, vocab, (b, n + 1), device=device)
    full = model(ids, use_cache=False).logits  # (b, n + 1, vocab)
    out = {}
    for label, mm in (("", False), ("_mm", True)):
        g = GraphLlama(model, b, n + 1, matmul_attention=mm)
        pre = g.prefill(ids[:, :n])
        dec = g.decode(ids[:, n], torch.tensor([n], device=device))
        out[f"prefill{label}_rel_err"] = rel_err(pre, full[:, n - 1])
        out[f"decode{label}_rel_err"] = rel_err(dec, full[:, n])
    return out


def _hf_forward(model, **kw):
    try:
        return model(**kw, logits_to_keep=1)
    except TypeError:  # transformers before 4.50
        return model(**kw, num_logits_to_keep=1)


@torch.inference_mode()
def time_model(name: str, model, device: str, vocab: int, timer: Timer, quick: bool) -> list[dict]:
    rows: list[dict] = []
    reps = 3 if quick else 10

    def row(path, phase, batch, tokens, times):
        key = "prompt_tokens" if phase == "prefill" else "context_tokens"
        rows.append({"model": name, "path": path, "phase": phase, "batch": batch, key: tokens, **summary(times)})
        r = rows[-1]
        print(f"{name:14} {path:8} {phase:7} b={batch:<4} {key.split('_')[0]}={tokens:<6} "
              f"{r['time_s'] * 1e3:9.3f} ms", flush=True)

    for batch, prompt in PREFILL:
        ids = torch.randint(0, vocab, (batch, prompt), device=device)
        row("hf_eager", "prefill", batch, prompt,
            timer.each(lambda ids=ids: _hf_forward(model, input_ids=ids, use_cache=True), 2, reps))
        g = GraphLlama(model, batch, prompt)
        fn = captured(lambda g=g, ids=ids: g.prefill(ids), device)
        row("graph", "prefill", batch, prompt, timer.each(fn, 2, reps))
        del g, fn
    for batch, ctx in DECODE_GRAPH:
        for path, mm in (("graph", False), ("graph_mm", True)):
            g = GraphLlama(model, batch, ctx + 1, matmul_attention=mm)
            g.fill_random()
            ids = torch.randint(0, vocab, (batch,), device=device)
            pos = torch.tensor([ctx], device=device)
            fn = captured(lambda g=g, ids=ids, pos=pos: g.decode(ids, pos), device)
            row(path, "decode", batch, ctx, timer.each(fn, 3, 3 * reps))
            del g, fn
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    for batch, ctx in DECODE_EAGER:
        ids = torch.randint(0, vocab, (batch, ctx), device=device)
        out = _hf_forward(model, input_ids=ids, use_cache=True)
        cache = out.past_key_values
        nxt = torch.randint(0, vocab, (batch, 1), device=device)
        times = []
        for _ in range(EAGER_STEPS):  # each step one token longer, as generate() runs them
            step = lambda nxt=nxt, cache=cache: _hf_forward(model, input_ids=nxt, past_key_values=cache,  # noqa: E731
                                                            use_cache=True)
            times += timer.each(step, 0, 1)
        row("hf_eager", "decode", batch, ctx + EAGER_STEPS // 2, times[2:])
        del out, cache
        if device.startswith("cuda"):
            torch.cuda.empty_cache()
    return rows


@torch.inference_mode()
def ceilings(device: str, timer: Timer, quick: bool) -> dict:
    """What this card reaches on a large bf16 matrix product and a device-to-device copy."""
    n = 1024 if quick else 8192
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    mm = statistics.median(timer.each(lambda: a @ b, 3, 10))
    src = torch.randn(1 << (20 if quick else 30), device=device, dtype=torch.bfloat16)  # 2 GiB on a GPU
    dst = torch.empty_like(src)
    cp = statistics.median(timer.each(lambda: dst.copy_(src), 3, 10))
    return {"matmul_bf16_flop_per_s": 2 * n**3 / mm, "matmul_n": n,
            "copy_bytes_per_s": 2 * src.numel() * src.element_size() / cp, "copy_bytes": src.numel() * 2}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--tiny", action="store_true", help="a two-layer model and small shapes: a dry run on a CPU")
    args = ap.parse_args()
    global PREFILL, DECODE_GRAPH, DECODE_EAGER, EAGER_STEPS
    quick = args.tiny
    if quick:
        PREFILL, DECODE_GRAPH, DECODE_EAGER, EAGER_STEPS = [(1, 16), (2, 32)], [(1, 32), (4, 64)], [(2, 32)], 6
    import transformers

    doc = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
           "device": torch.cuda.get_device_name(0) if args.device.startswith("cuda") else platform.processor(),
           "dtype": "bfloat16" if args.device.startswith("cuda") else "float32", "rows": [], "checks": {}}
    timer = Timer(args.device)
    doc["ceilings"] = ceilings(args.device, timer, quick)
    print(json.dumps(doc["ceilings"]), flush=True)
    dtype = torch.bfloat16 if args.device.startswith("cuda") else torch.float32
    vocab = 512 if quick else 128256
    for name in args.models.split(","):
        t0 = time.perf_counter()
        arch = TINY if quick else MODELS[name]
        doc["checks"][name] = chk = check(name, arch, args.device, vocab)
        chk["ok"] = max(chk.values()) <= 1e-4
        model = build(name, arch, args.device, dtype, vocab)
        print(name, "check", chk, f"built in {time.perf_counter() - t0:.1f} s", flush=True)
        if not chk["ok"]:  # timed all the same (the lease is short); compare.py leaves its graph rows out
            print(f"{name}: the graph path disagrees with transformers", file=sys.stderr)
        doc["rows"] += time_model(name, model, args.device, vocab, timer, quick)
        del model
        if args.device.startswith("cuda"):
            torch.cuda.empty_cache()
        with open(args.out, "w") as f:
            json.dump(doc, f, indent=1)
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
