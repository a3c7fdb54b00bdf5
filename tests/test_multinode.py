"""Deployments past one node: the node and its network in the catalog, and what crossing it costs a step.

The catalog figures the expected numbers are built from (hardware.yaml):
- h100-sxm interconnect_gb_s 450: NVLink4, 900 GB/s bidirectional -> 450 one way, per GPU;
- h100-sxm node: gpus_per_node 8, inter_node_gb_s 50: NVIDIA DGX H100 user guide / DGX BasePOD reference
  architecture, eight single-port ConnectX-7 400 Gb/s for the compute fabric, one per GPU (400 Gb/s = 50 GB/s).
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np
import pytest

from vazao.catalog._load import load_yaml
from vazao.catalog.hardware import _accelerator, accelerators, get_accelerator, node_conventions
from vazao.catalog.models import get_model
from vazao.errors import VazaoError
from vazao.physics.deployment import Deployment, make_deployment
from vazao.physics.memory import ACT_BYTES
from vazao.physics.profiles import get_engine
from vazao.physics.step import (
    CUSTOM_ALLREDUCE_HOPS,
    INTER_NODE_LATENCY_S,
    INTRA_NODE_HOP_LATENCY_S,
    P2P_LATENCY_S,
    BatchShape,
    step_cost,
)
from vazao.units import GB

DECODE = BatchShape.decode(64, 2048)
PREFILL = BatchShape.prefill(1, 4096)


@pytest.fixture(scope="module")
def h100():
    return get_accelerator("h100-sxm")


def one_domain(acc, gpus: int):
    """An imaginary server whose `gpus` GPUs all share the NVLink domain: the model before nodes existed."""
    return replace(acc, gpus_per_node=gpus)


def dep_on(acc, model: str, count: int, tp: int, pp: int = 1, ideal: bool = False) -> Deployment:
    return make_deployment(model, acc, "bf16", count=count, tp=tp, pp=pp, ideal=ideal)


# ------------------------------------------------------------------------------------------------ catalog


def test_h100_node_is_a_dgx_h100(h100):
    assert h100.gpus_per_node == 8
    assert h100.inter_node_bytes_per_s == 50 * GB  # 400 Gb/s ConnectX-7 per GPU, decimal GB
    assert h100.interconnect_bytes_per_s == 450 * GB
    assert "DGX H100" in h100.node_source and "ConnectX-7" in h100.node_source


@pytest.mark.parametrize(("acc_id", "gpus", "gb_s"), [
    ("a100-sxm-80gb", 8, 25),  # DGX A100: 8 x ConnectX-6 200 Gb/s HDR
    ("h200", 8, 50),  # DGX H200: as DGX H100
    ("b200", 8, 50),  # DGX B200: 8 x ConnectX-7 400 Gb/s
    ("gb200", 72, 50),  # NVL72: one NVLink domain per rack
    ("mi300x", 8, 50),  # 8 OAM on Infinity Fabric; Azure ND MI300X v5: 400 Gb/s per GPU
    ("mi250x", 4, 25),  # Frontier node: 4 x MI250X, one 200 Gb/s Slingshot NIC each
    ("l40s", 8, 6.25),  # AWS g6e.48xlarge: 8 x L40S, 400 Gbps per box
    ("rtx-4090", 8, 1.5625),  # convention: 8-card box, one 100 GbE NIC
    ("m2-ultra", 1, 5),  # one Mac per box: Thunderbolt is the link between boxes
    ("gb10", 1, 25),  # one DGX Spark per box: its ConnectX-7 200 GbE
    ("xeon-8480", 2, 6.25),  # two sockets per server, one 100 GbE NIC
])
def test_node_figures(acc_id, gpus, gb_s):
    acc = get_accelerator(acc_id)
    assert acc.gpus_per_node == gpus
    assert acc.inter_node_bytes_per_s == gb_s * GB


def test_every_accelerator_has_a_sourced_node():
    for acc in accelerators().values():
        assert isinstance(acc.gpus_per_node, int) and acc.gpus_per_node >= 1, acc.id
        assert acc.inter_node_bytes_per_s and acc.inter_node_bytes_per_s > 0, acc.id
        assert str(acc.node_source).strip() and str(acc.node_as_of).strip(), acc.id
        # a single device's network is its own peer link; past a multi-GPU node the network is never faster
        if acc.gpus_per_node == 1:
            assert acc.inter_node_bytes_per_s == acc.interconnect_bytes_per_s, acc.id
        else:
            assert acc.inter_node_bytes_per_s <= acc.interconnect_bytes_per_s, acc.id


def test_every_catalog_entry_names_its_node():
    """The loader's defaults are for hand-written entries; the catalog states each node (a system or a
    named convention), so none is a silent guess."""
    conventions = node_conventions()
    for entry in load_yaml("hardware.yaml")["accelerators"]:
        node = entry.get("node")
        assert node is not None, entry["id"]
        assert (node in conventions) if isinstance(node, str) else {"gpus_per_node", "source", "as_of"} <= set(node)
    for name, conv in conventions.items():
        assert conv["source"] and conv["as_of"], name


BASE = {"id": "x", "name": "x", "vendor": "nvidia", "generation": "ada", "memory_gib": 24, "memory_source": "s",
        "memory_as_of": "2026", "bandwidth_gb_s": 1000, "peak_tflops": {"fp16": 100}, "interconnect": "pcie4",
        "interconnect_gb_s": 32, "host_link_gb_s": 32, "source": "s", "as_of": "2026"}


def test_loader_defaults_by_kind_and_link():
    conv = node_conventions()
    pcie = _accelerator(BASE)
    assert pcie.gpus_per_node == conv["pcie-server-100gbe"]["gpus_per_node"]
    assert pcie.inter_node_bytes_per_s == conv["pcie-server-100gbe"]["inter_node_gb_s"] * GB
    mac = _accelerator(BASE | {"kind": "apple", "interconnect": "thunderbolt4", "interconnect_gb_s": 5})
    assert mac.gpus_per_node == 1 and mac.inter_node_bytes_per_s == 5 * GB
    cpu = _accelerator(BASE | {"kind": "cpu", "interconnect": "upi2", "interconnect_gb_s": 128})
    assert cpu.gpus_per_node == 2


@pytest.mark.parametrize(("change", "needle"), [
    ({"interconnect": "nvlink4", "interconnect_gb_s": 450}, "give a node"),  # no default for an NVLink part
    ({"node": "no-such-box"}, "unknown node convention"),
    ({"node": {"gpus_per_node": 0, "inter_node_gb_s": 50, "source": "s", "as_of": "2026"}}, "gpus_per_node"),
    ({"node": {"gpus_per_node": True, "inter_node_gb_s": 50, "source": "s", "as_of": "2026"}}, "gpus_per_node"),
    ({"node": {"gpus_per_node": 8, "source": "s", "as_of": "2026"}}, "inter_node_gb_s"),  # only a single device
    ({"node": {"gpus_per_node": 8, "inter_node_gb_s": -1, "source": "s", "as_of": "2026"}}, "inter_node_gb_s"),
    ({"node": {"gpus_per_node": 8, "inter_node_gb_s": 50, "source": "", "as_of": "2026"}}, "source"),
    ({"node": 8}, "mapping or a convention"),
])
def test_bad_nodes_are_refused(change, needle):
    with pytest.raises(VazaoError, match=needle):
        _accelerator(BASE | change)


# ------------------------------------------------------------------------------------------------ physics


def test_tp8_on_one_node_is_unchanged(h100):
    # Recorded from the code before nodes existed (same catalog and engines): llama-3.1-70b bf16 on 8 H100 SXM,
    # tp8, at the physical limit (--ideal): decode batch 64 at 2,048 context and one 4,096-token prefill.
    dep = dep_on(h100, "llama-3.1-70b", 8, 8, ideal=True)
    assert step_cost(dep, DECODE).time_s == pytest.approx(0.007442623078739635, rel=1e-12)
    assert step_cost(dep, PREFILL).time_s == pytest.approx(0.11541176264963308, rel=1e-12)
    # and with the engine's efficiencies: bit for bit what a deployment with no node boundary gives
    real, unbounded = dep_on(h100, "llama-3.1-70b", 8, 8), dep_on(replace(h100, gpus_per_node=None), "llama-3.1-70b",
                                                                   8, 8)
    for shape in (DECODE, PREFILL):
        assert step_cost(real, shape) == step_cost(unbounded, shape)


def test_tp16_over_two_dgx_h100_all_reduces_over_the_network(h100):
    """405B bf16, tp16 on 16 H100 = two DGX H100. Each of the step's 2 × 126 all-reduces crosses the network.
    Ring rule: the hop leaving a node carries the 8 ranks it holds over their 8 NICs, so it runs at
    min(NVLink 450, 8 × 50 GB/s) = 400 GB/s (NCCL's busBw = channels × per-channel speed), and each all-reduce
    adds 2(nodes − 1) = 2 network steps of INTER_NODE_LATENCY_S in place of two of its 2(16 − 1) hops inside a
    node (NCCL's nsteps − nInterSteps intra hops)."""
    real = dep_on(h100, "llama-3.1-405b", 16, 16)
    imaginary = dep_on(one_domain(h100, 16), "llama-3.1-405b", 16, 16)
    m, eff = real.model, real.engine.comm_efficiency
    assert (m.num_layers, m.hidden_size) == (126, 16384)
    allreduces = 2 * m.num_layers
    act = DECODE.new_tokens * m.hidden_size * ACT_BYTES  # bytes each all-reduce sums, per rank
    ring = 2 * (16 - 1) / 16 * act
    nvlink, network = 450 * GB * eff, min(450 * GB, 8 * 50 * GB) * eff
    extra = allreduces * (ring / network - ring / nvlink + 2 * (INTER_NODE_LATENCY_S - INTRA_NODE_HOP_LATENCY_S))

    slow, fast = step_cost(real, DECODE), step_cost(imaginary, DECODE)
    assert slow.comm_s - fast.comm_s == pytest.approx(extra, rel=1e-9)
    assert slow.time_s > fast.time_s
    assert slow.compute_s == fast.compute_s and slow.memory_s == fast.memory_s  # only the network differs
    c = real.consts
    assert c.allreduce_factor_s_per_byte == pytest.approx(2 * 15 / 16 / network, rel=1e-12)
    assert c.allreduce_latency_s == pytest.approx(real.engine.allreduce_latency_s + 2 * INTER_NODE_LATENCY_S
                                                  + 28 * INTRA_NODE_HOP_LATENCY_S)


def test_tp16_over_pcie_boxes_is_bounded_by_the_box_nic():
    """On PCIe boxes with one 100 GbE NIC per 8 cards the ring hop leaving a box runs at the NIC's
    12.5 GB/s, not the 32 GB/s of PCIe4: the network, not the link, sets the pace."""
    l4 = get_accelerator("l4")
    c = dep_on(l4, "llama-3.1-70b", 16, 16).consts
    eff = dep_on(l4, "llama-3.1-70b", 16, 16).engine.comm_efficiency
    assert c.allreduce_factor_s_per_byte == pytest.approx(2 * 15 / 16 / (8 * 1.5625 * GB * eff), rel=1e-12)


def test_tp8_pp2_over_16_h100_charges_one_crossing_hop(h100):
    """tp8·pp2: stage 1 fills node 0, stage 2 node 1; the one hand-off crosses, at the 8 stage GPUs' network
    share min(450, 8 × 50) GB/s; the all-reduces stay on NVLink."""
    real = dep_on(h100, "llama-3.1-405b", 16, 8, pp=2)
    imaginary = dep_on(one_domain(h100, 16), "llama-3.1-405b", 16, 8, pp=2)
    eff = real.engine.comm_efficiency
    c, ci = real.consts, imaginary.consts
    assert c.shard.pp_hops == 1
    assert c.allreduce_factor_s_per_byte == ci.allreduce_factor_s_per_byte  # tp8 inside one node
    assert c.allreduce_latency_s == ci.allreduce_latency_s
    assert c.p2p_s_per_byte == pytest.approx(1 / (min(450 * GB, 8 * 50 * GB) * eff), rel=1e-12)
    assert ci.p2p_s_per_byte == pytest.approx(1 / (450 * GB * eff), rel=1e-12)
    assert c.p2p_latency_s == pytest.approx(P2P_LATENCY_S + INTER_NODE_LATENCY_S)
    act = DECODE.new_tokens * real.model.hidden_size * ACT_BYTES
    extra = act * (c.p2p_s_per_byte - ci.p2p_s_per_byte) + INTER_NODE_LATENCY_S
    assert step_cost(real, DECODE).comm_s - step_cost(imaginary, DECODE).comm_s == pytest.approx(extra, rel=1e-9)


@pytest.mark.parametrize(("tp", "pp", "crossing"), [
    (8, 2, 1),  # 2 nodes: the one hop crosses
    (4, 4, 1),  # 2 nodes: stages 0-1 on node 0, 2-3 on node 1: 1 of 3 hops crosses
    (2, 8, 1),  # 2 nodes: 1 of 7
    (1, 16, 1),  # 2 nodes: 1 of 15
    (16, 2, 1),  # 4 nodes, each stage spans two: its one hop crosses
    (4, 8, 3),  # 4 nodes: 3 of 7
    (8, 4, 3),  # 4 nodes: every hop crosses
    (4, 2, 0),  # one node
])
def test_crossings_follow_the_stage_layout(h100, tp, pp, crossing):
    """ceil(tp·pp / 8) − 1 boundaries between nodes, never more than the pp − 1 hand-offs."""
    assert crossing == min(pp - 1, math.ceil(tp * pp / 8) - 1)
    count = tp * pp
    dep = dep_on(h100, "llama-3.1-70b", count, tp, pp=pp)
    c, eff = dep.consts, dep.engine.comm_efficiency
    hops = pp - 1
    link, cross = 450 * GB * eff, min(450 * GB, min(tp, 8) * 50 * GB) * eff
    assert c.p2p_s_per_byte * hops == pytest.approx((hops - crossing) / link + crossing / cross, rel=1e-12)
    assert c.p2p_latency_s * hops == pytest.approx(hops * P2P_LATENCY_S + crossing * INTER_NODE_LATENCY_S)


def test_more_nodes_cost_more_network_steps(h100):
    c16 = dep_on(h100, "llama-3.1-405b", 16, 16).consts
    c32 = dep_on(h100, "llama-3.1-405b", 32, 32).consts  # 405B: 128 heads, tp32 over 4 nodes
    lat = dep_on(h100, "llama-3.1-405b", 16, 16).engine.allreduce_latency_s
    assert c16.allreduce_latency_s == pytest.approx(lat + 2 * INTER_NODE_LATENCY_S + 28 * INTRA_NODE_HOP_LATENCY_S)
    assert c32.allreduce_latency_s == pytest.approx(lat + 6 * INTER_NODE_LATENCY_S + 56 * INTRA_NODE_HOP_LATENCY_S)


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_an_all_reduce_inside_a_node_pays_a_hop_per_ring_step(h100, tp):
    """NCCL's ring model (src/graph/tuning.cc: latency = baseLat + nsteps × hwLat[NVLINK][Ring], nsteps =
    2(n − 1) for an all-reduce; LL128's hop 1.9 us): on top of the engine's fixed cost, 2(tp − 1) hops —
    tp8 pays 14 × 1.9 = 26.6 us more per all-reduce than one GPU would, 2 × 32 of them a Llama-8B step.
    An engine that all-reduces through NCCL alone (custom_allreduce_gpus 0) pays that."""
    vllm = get_engine("vllm")
    nccl = replace(vllm, custom_allreduce_gpus=0)
    dep = make_deployment("llama-3.1-8b", h100, "bf16", count=tp, tp=tp, engine=nccl)
    assert dep.consts.allreduce_latency_s == pytest.approx(
        dep.engine.allreduce_latency_s + 2 * (tp - 1) * INTRA_NODE_HOP_LATENCY_S)
    assert INTRA_NODE_HOP_LATENCY_S == 1.9e-6


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_an_engines_own_all_reduce_inside_an_nvlink_node_pays_two_barriers_at_any_width(h100, engine, tp):
    """vLLM's custom all-reduce (csrc/custom_all_reduce.cuh: cross_device_reduce_1stage below 256 KB on 8 GPUs,
    512 KB on 4, else 2stage; SGLang runs the same kernels) and TensorRT-LLM's ONESHOT/TWOSHOT kernels
    (kernels/customAllReduceKernels.cu) read every peer's buffer over NVLink P2P between flag barriers: the
    latency is the engine's fixed cost and two barrier hops at 2, 4 or 8 GPUs, not 2(tp − 1) ring hops. The
    bandwidth term is compared with the one-shot choice off (its bytes: tests/test_oneshot_allreduce.py)."""
    own = replace(get_engine(engine), oneshot_allreduce_bytes=0.0, oneshot_allreduce_tokens=0)
    dep = make_deployment("llama-3.1-8b", h100, "bf16", count=tp, tp=tp, engine=own)
    nccl = make_deployment("llama-3.1-8b", h100, "bf16", count=tp, tp=tp,
                           engine=replace(dep.engine, custom_allreduce_gpus=0))
    assert dep.engine.custom_allreduce_gpus == 8
    assert dep.consts.allreduce_latency_s == pytest.approx(
        dep.engine.allreduce_latency_s + CUSTOM_ALLREDUCE_HOPS * INTRA_NODE_HOP_LATENCY_S)
    assert CUSTOM_ALLREDUCE_HOPS == 2
    assert dep.consts.allreduce_factor_s_per_byte == nccl.consts.allreduce_factor_s_per_byte
    saved = 2 * dep.model.num_layers * (2 * (tp - 1) - 2) * INTRA_NODE_HOP_LATENCY_S  # two all-reduces a layer
    assert step_cost(nccl, DECODE).comm_s - step_cost(dep, DECODE).comm_s == pytest.approx(saved, rel=1e-9, abs=1e-12)


def test_the_engines_own_all_reduce_needs_nvlink_and_one_node(h100):
    """Without NVLink (L40S: PCIe 4) vLLM falls back to NCCL for more than two GPUs, and a group past one node
    (tp16 over two DGX H100) is NCCL's ring: both keep the ring's hops."""
    l40s = get_accelerator("l40s")
    assert not l40s.interconnect.startswith("nvlink")
    pcie = make_deployment("llama-3.1-8b", l40s, "bf16", count=4, tp=4, engine="vllm")
    assert pcie.consts.allreduce_latency_s == pytest.approx(
        pcie.engine.allreduce_latency_s + 6 * INTRA_NODE_HOP_LATENCY_S)
    two_nodes = dep_on(h100, "llama-3.1-405b", 16, 16)
    assert two_nodes.consts.allreduce_latency_s == pytest.approx(
        two_nodes.engine.allreduce_latency_s + 2 * INTER_NODE_LATENCY_S + 28 * INTRA_NODE_HOP_LATENCY_S)


def test_ideal_keeps_no_latency(h100):
    c = dep_on(h100, "llama-3.1-405b", 16, 16, ideal=True).consts
    assert c.allreduce_latency_s == 0 and c.p2p_latency_s == 0


def test_macs_over_thunderbolt_keep_their_link():
    """Two Macs (one device a box): the all-reduce already ran over Thunderbolt, and still does; only the
    latency of its two ring steps changes: network steps (INTER_NODE_LATENCY_S) where a box of two would make
    hops inside a node."""
    mac = get_accelerator("m2-ultra")
    real = make_deployment("llama-3.1-8b", mac, "bf16", count=2, tp=2, engine="llama.cpp")
    before = make_deployment("llama-3.1-8b", replace(mac, gpus_per_node=None), "bf16", count=2, tp=2,
                             engine="llama.cpp")
    assert real.consts.allreduce_factor_s_per_byte == before.consts.allreduce_factor_s_per_byte
    assert real.consts.allreduce_latency_s == pytest.approx(before.consts.allreduce_latency_s
                                                            + 2 * (INTER_NODE_LATENCY_S - INTRA_NODE_HOP_LATENCY_S))
    assert step_cost(real, DECODE).time_s > step_cost(before, DECODE).time_s


def test_grid_sweep_applies_the_same_rule(h100):
    """physics/grid.py builds StepConstants over arrays of accelerators: its tp8 and tp16 cells match step_cost."""
    from vazao.catalog.formats import get_format, get_kv_format
    from vazao.physics.grid import sweep
    from vazao.physics.profiles import get_engine

    # one engine profile; the L40S (PCIe) keeps the ring's hops where the NVLink GPUs take vLLM's own kernel
    accs = [h100, get_accelerator("h200"), one_domain(h100, 16), get_accelerator("l40s")]
    model, fmt, kv = get_model("llama-3.1-70b"), get_format("bf16"), get_kv_format("fp16")
    eng = get_engine("vllm").on_generation("hopper")
    shapes = (DECODE, PREFILL)
    cells = sweep([model], accs, [fmt], (8, 16), eng, kv, shapes, context=2048)
    assert [c.tp for c in cells] == [8, 16]
    for cell in cells:
        for i, acc in enumerate(accs):
            dep = Deployment(model=model, weight_format=fmt, kv_format=kv, accelerator=acc, engine=eng,
                             count=cell.tp, tp=cell.tp)
            for k, shape in enumerate(shapes):
                assert cell.step_time_s[k, i] == pytest.approx(step_cost(dep, shape).time_s, rel=1e-12)
    tp8, tp16 = cells
    assert np.array_equal(tp8.step_time_s[:, 0], tp8.step_time_s[:, 2])  # one node: no difference
    assert np.all(tp16.step_time_s[:, 0] > tp16.step_time_s[:, 2])  # two DGX H100 vs one imaginary domain
