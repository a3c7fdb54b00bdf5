"""Workload: who sends what, when. One YAML file drives both `vazao simulate` and `vazao bench`.

types: the distributions, arrivals, prefixes, conversations, RequestSpec and Workload; plan: the
requests a Workload draws, deterministic for its seed; schema: the YAML file's pydantic models;
readers: lengths files and arrival traces; load: a built-in name or a YAML file → a Workload."""

from vazao.workload.load import builtin_workloads, load_workload, workload_from_dict
from vazao.workload.plan import context_for, longest_request
from vazao.workload.types import (
    ARRIVALS,
    DISTS,
    MAX_CONCURRENCY,
    MAX_DURATION_S,
    MAX_PREFIXES,
    MAX_RATE,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_SIGMA,
    MAX_TOKENS,
    MAX_WORKLOAD_BYTES,
    Arrival,
    Conversation,
    Delay,
    Dist,
    Prefix,
    RequestSpec,
    Workload,
)

__all__ = [
    "ARRIVALS", "DISTS", "MAX_CONCURRENCY", "MAX_DURATION_S", "MAX_PREFIXES", "MAX_RATE", "MAX_REQUESTS",
    "MAX_SEED", "MAX_SIGMA", "MAX_TOKENS", "MAX_WORKLOAD_BYTES", "Arrival", "Conversation", "Delay", "Dist",
    "Prefix", "RequestSpec", "Workload", "builtin_workloads", "context_for", "load_workload", "longest_request",
    "workload_from_dict",
]
