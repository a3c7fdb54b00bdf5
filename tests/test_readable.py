"""Tables read whole in a terminal: `vazao gpus`, `prices`, `models` and `simulate --compare` at 100 and 80
columns never wrap or cut an id, never cut a number, and say which columns a narrow terminal left out.

The CLI runs in a subprocess with COLUMNS set, as a terminal would run it (the console reads its width once).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SIM = ["simulate", "llama-3.1-8b", "--gpu", "h100-sxm", "--workload", "chat", "--requests", "40",
       "--compare", "batching=continuous,static", "--compare", "chunked=off,on", "--slo", "ttft_p95=500ms", "--quiet"]


def vazao(args: list[str], columns: int | None = None) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = str(columns)
    res = subprocess.run([sys.executable, "-m", "vazao", *args], capture_output=True, text=True, env=env,
                         timeout=300)
    return res.returncode, res.stdout, res.stderr


def table(args: list[str], columns: int) -> list[str]:
    rc, out, err = vazao(args, columns)
    assert rc == 0, err
    lines = [line.rstrip() for line in out.splitlines()]
    too_wide = [line for line in lines if len(line) > columns]
    assert not too_wide, too_wide
    assert "…" not in out  # nothing was cut to fit: not an id, not a number
    return lines


def rows_by_first_word(lines: list[str]) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in lines if line.strip()}


@pytest.fixture(scope="module")
def gpus_json() -> list[dict]:
    return json.loads(vazao(["gpus", "--json"])[1])["gpus"]


@pytest.mark.parametrize("columns", [100, 80])
def test_gpus_read_whole(gpus_json, columns):
    rows = rows_by_first_word(table(["gpus"], columns))
    for g in gpus_json:
        cells = rows[g["id"]]  # every id whole, at the start of its own line
        size = {"GiB": 2**30, "GB": 1e9}[g["memory_unit"]]  # each in the unit its vendor's figure is stated in
        assert f"{g['memory_bytes'] / size:g}" in cells and g["memory_unit"] in cells  # '80 GiB', '288 GB', whole
        assert f"{g['memory_bandwidth_bytes_per_s'] / 1e9:,.0f}" in cells
        if g["usd_per_hour"]:
            assert f"{g['usd_per_hour']:.2f}" in cells
    header = table(["gpus"], columns)[1].split()
    assert {"memory", "GB/s", "fp8", "fp4", "$/h"} <= set(header)  # the numbers stay; prose and links go first


def test_gpus_at_100_name_what_they_leave_out_and_csv_keeps_everything():
    lines = table(["gpus"], 100)
    assert any(line.startswith("not shown at 100 columns:") and "name" in line for line in lines)
    rc, out, _ = vazao(["gpus", "--csv"], 80)
    assert rc == 0 and out.splitlines()[0].split(",")[-2:] == ["link", "name"]


@pytest.fixture(scope="module")
def price_ids() -> list[str]:
    return [p["id"] for p in json.loads(vazao(["prices", "--json"])[1])["prices"]]


@pytest.mark.parametrize("columns", [100, 80])
def test_prices_read_whole(price_ids, columns):
    rows = rows_by_first_word(table(["prices"], columns))
    prices = {p["id"]: p for p in json.loads(vazao(["prices", "--json"])[1])["prices"]}
    for pid in price_ids:
        cells = rows[pid]
        base = prices[pid]["usd_per_mtok"]
        # the renderer's rate(): Decimal's shortest form ('0.1' prints as 0.10 via the catalog text, so compare
        # numerically): input and output are the first two numbers after the id (and provider, when shown)
        numbers = [float(c) for c in cells[1:4] if c.replace(".", "", 1).isdigit()]
        assert numbers[:2] == [float(base["input"]), float(base["output"])], (pid, cells)


@pytest.mark.parametrize("columns", [100, 80])
def test_gpu_rental_reads_whole(gpus_json, columns):
    rows = rows_by_first_word(table(["prices", "--gpus"], columns))
    for g in gpus_json:
        if g["usd_per_hour"]:
            assert rows[g["id"]][1] == f"{g['usd_per_hour']:.2f}"


@pytest.mark.parametrize("columns", [100, 80])
def test_models_one_line_each_grouped_by_family(columns):
    models = json.loads(vazao(["models", "--json"])[1])["models"]
    lines = table(["models"], columns)
    rows = rows_by_first_word(lines)
    assert len(lines) <= len(models) + 6  # one line a model (was 367 lines with the sources wrapped)
    families = [rows[m["name"]][1] for m in models]
    assert families == [m["family"] for m in models] == sorted(m["family"] for m in models)
    for m in models:
        assert f"{m['params'] / 1e9:.1f}B" in rows[m["name"]]


def test_models_family_filter():
    rc, out, _ = vazao(["models", "--family", "qwen", "--json"])
    fams = {m["family"] for m in json.loads(out)["models"]}
    assert rc == 0 and fams == {"qwen2", "qwen3", "qwen3_moe"}
    rc, out, err = vazao(["models", "--family", "no-such"])
    assert rc == 2 and "no model family 'no-such'" in err and "llama" in err and out == ""
    assert len(err.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def variants() -> list[dict]:
    rc, out, err = vazao([*SIM, "--json"])
    assert rc == 0, err
    return json.loads(out)["variants"]


@pytest.mark.parametrize("columns", [120, 100, 80])
def test_compare_table_keeps_variant_names_and_numbers_whole(variants, columns):
    lines = table(SIM, columns)
    for v in variants:
        row = next((line for line in lines if line.startswith(v["name"] + " ")), None)
        assert row is not None, (v["name"], lines)  # 'batching=continuous chunked=off', not 'batch…'
        cells = row[len(v["name"]):].split()
        req_s = v["summary"]["request_throughput_per_s"]
        assert float(cells[0]) == pytest.approx(req_s, rel=0.01)


PLAN = ["plan", "-m", "llama-3.1-8b,llama-3.1-70b", "-g", "rtx-4090,h100-sxm", "-f", "bf16,fp8", "-e", "vllm,trtllm",
        "--traffic", "10/s", "--requests", "100", "--simulate-top", "8", "--workers", "1", "--no-disagg"]


@pytest.mark.parametrize("columns", [100, 80])
def test_plan_reads_whole(columns):
    # Issue 20: the plan's table at 100 and 80 columns: ids, GPUs, the SLO figures and the status whole; the
    # columns a narrow terminal leaves out are named. The 80% band sits in its own column beside its figure.
    lines = table(PLAN, columns)
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("#"))
    header = lines[start]
    assert {"model", "GPUs", "ttft", "tpot", "status"} <= set(header.split())
    body = lines[start + 2:]  # past the header's rule
    rows = [line.split() for line in body[:next(i for i, line in enumerate(body) if not line[:3].strip().isdigit())]]
    assert rows and all(r[1] in ("llama-3.1-8b", "llama-3.1-70b") for r in rows)
    if columns == 100:
        assert "engine" in header and "band" in header  # trtllm is calibrated: its band is shown
    else:
        assert any("not shown at 80 columns" in line for line in lines)
