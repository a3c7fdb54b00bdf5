"""Workload: who sends what, when. One YAML file drives both `vazao simulate` and `vazao bench`.

types: the distributions, arrivals, prefixes, conversations, RequestSpec and Workload; plan: the
requests a Workload draws, deterministic for its seed; schema: the YAML file's pydantic models;
readers: lengths files and arrival traces; load: a built-in name or a YAML file → a Workload.
Every bound on a workload is in vazao.limits."""

from vazao.workload.load import builtin_workloads, load_workload, workload_from_dict
from vazao.workload.specs import context_for, longest_request
from vazao.workload.types import (
    ARRIVALS,
    DISTS,
    Arrival,
    Delay,
    Dist,
    MultiTurn,
    Prefix,
    RequestSpec,
    Workload,
)

__all__ = [
    "ARRIVALS", "DISTS", "Arrival", "MultiTurn", "Delay", "Dist",
    "Prefix", "RequestSpec", "Workload", "builtin_workloads", "context_for", "load_workload", "longest_request",
    "workload_from_dict",
]
