"""Disaggregated prefill/decode: separate replica pools, the prompt's KV cache shipped between them.

A prefill replica computes the prompt and emits the first token; the KV cache then crosses the link
(each GPU sends its own slice, in parallel) and the request joins a decode replica's batch. The
prefill replica keeps its blocks until the transfer completes; the decode replica must find blocks
for the whole cache before it admits the request."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from vazao.physics.memory import kv_bytes_per_token_per_gpu
from vazao.sim.config import DisaggConfig

if TYPE_CHECKING:
    from vazao.physics.deployment import Deployment


@dataclass(frozen=True)
class KVLink:
    bytes_per_token_per_gpu: float
    bytes_per_s: float
    latency_s: float

    @classmethod
    def of(cls, dep: Deployment, cfg: DisaggConfig) -> KVLink:
        per_tok = kv_bytes_per_token_per_gpu(dep.model, dep.kv_format.bytes_per_element, dep.tp, dep.pp)
        acc = dep.accelerator
        bw = cfg.link_bytes_per_s or acc.interconnect_bytes_per_s
        # pools that do not fit one node's GPUs send their caches between nodes (hardware.yaml's node figures)
        if cfg.link_bytes_per_s is None and acc.gpus_per_node and acc.inter_node_bytes_per_s \
                and dep.count > acc.gpus_per_node:
            bw = min(bw, acc.inter_node_bytes_per_s)
        return cls(per_tok, bw, cfg.link_latency_s)

    def transfer_s(self, tokens: int) -> float:
        """Time to move `tokens` of KV cache from a prefill replica to a decode replica."""
        return self.latency_s + tokens * self.bytes_per_token_per_gpu / self.bytes_per_s
