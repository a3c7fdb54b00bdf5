"""A sweep of models × accelerators × formats through fit and step_cost (make run, make bench)."""

from __future__ import annotations

from vazao.catalog.formats import get_format, support
from vazao.catalog.local import resolve_accelerator
from vazao.catalog.models import get_model
from vazao.estimate import decode_cost, max_load_throughput, prefill_cost
from vazao.physics.deployment import make_deployment
from vazao.physics.memory import fit


def grid(models, gpus, fmts, input_tokens: int, output_tokens: int, engine: str = "vllm") -> list[dict]:
    rows = []
    ctx = input_tokens + output_tokens
    for mname in models:
        arch = get_model(mname)
        for gname in gpus:
            acc = resolve_accelerator(gname)
            for fname in fmts:
                f = get_format(fname)
                s = support(f, acc, engine)
                row = {"model": arch.name, "gpu": acc.id, "format": f.name, "status": s.status,
                       "reason": s.reason}
                if s.status == "unsupported":
                    rows.append(row)
                    continue
                dep = make_deployment(arch, acc, f, "fp16", engine=engine)
                fi = fit(dep, ctx)
                row.update(weights_gb=fi.weights_bytes / 1e9, fits=fi.fits,
                           max_concurrent_sequences=fi.max_concurrent_sequences)
                if fi.fits:
                    mean_ctx = input_tokens + output_tokens // 2
                    b32 = min(32, fi.max_concurrent_sequences)
                    row.update(
                        tok_s_batch1=1 / decode_cost(dep, 1, mean_ctx).time_s,
                        tok_s_batch32=b32 / decode_cost(dep, b32, mean_ctx).time_s,
                        batch32_effective=b32,
                        ttft_s=prefill_cost(dep, 1, input_tokens).time_s,
                        max_load_tok_s=max_load_throughput(dep, input_tokens, output_tokens)[0],
                    )
                rows.append(row)
    return rows
