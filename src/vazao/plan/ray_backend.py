"""The plan's simulations on a Ray cluster (`pip install 'vazao[ray]'`).

Each simulation is one Ray task running the same function the local pool runs, so the results are
identical to a local search (the simulator is deterministic for a seed). `address=None` starts a
local Ray instance; "auto" joins the cluster this machine belongs to; "ray://host:10001" a remote one."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from vazao.errors import VazaoError


class BackendUnavailable(VazaoError):
    """The Ray backend cannot run: not installed, or the cluster cannot be reached."""


def _ray():
    try:
        import ray
    except ImportError:
        raise BackendUnavailable("the ray backend needs the optional extra: pip install 'vazao[ray]'") from None
    return ray


def map_ray(fn: Callable, jobs: Sequence, *, address: str | None = None,
            progress: Callable[[int, int], None] | None = None) -> list:
    ray = _ray()
    started = False
    if not ray.is_initialized():
        try:
            ray.init(address=address, ignore_reinit_error=True, log_to_driver=False, include_dashboard=False)
        except Exception as exc:  # ray raises ConnectionError, RuntimeError or its own types by version
            where = address or "a local instance"
            raise BackendUnavailable(f"Ray cluster at {where} cannot be reached: {str(exc).splitlines()[0][:200]}") \
                from None
        started = True
    try:
        task = ray.remote(fn)
        refs = [task.remote(j) for j in jobs]
        index = {r: i for i, r in enumerate(refs)}
        out: list = [None] * len(refs)
        pending, done = list(refs), 0
        while pending:
            ready, pending = ray.wait(pending, num_returns=1)
            for r in ready:
                out[index[r]] = ray.get(r)
                done += 1
                if progress:
                    progress(done, len(refs))
        return out
    finally:
        if started:
            ray.shutdown()
