"""Traffic as users state it: an offered request rate (open loop, Poisson) or a number of concurrent
users (closed loop). Plan searches for it and cost prices at it, so it lives below both."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from vazao import inputs
from vazao.errors import VazaoError


@dataclass(frozen=True)
class Traffic:
    """Open loop (`rate` requests/s, Poisson) or closed loop (`concurrency` users)."""

    rate: float | None = None
    concurrency: int | None = None

    @classmethod
    def parse(cls, text: str) -> Traffic:
        t = str(text).strip().lower().replace(" ", "")
        m = re.fullmatch(r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)(/s|rps|req/s)?", t)
        if m:
            return cls(rate=float(inputs.positive(m.group(1), "traffic (requests per second)", maximum=1e6)))
        m = re.fullmatch(r"(?:c|concurrency=|users=)([0-9]+)|([0-9]+)(?:users|concurrent)", t)
        if m:
            n = m.group(1) or m.group(2)
            return cls(concurrency=int(inputs.positive(n, "traffic (concurrent users)", maximum=1e6, integer=True)))
        raise VazaoError(f"traffic {text[:40]!r}: give a request rate (20/s) or a concurrency (c32, 32users)")

    def per_replica(self, replicas: int) -> Traffic:
        if self.rate is not None:
            return Traffic(rate=self.rate / replicas)
        return Traffic(concurrency=max(1, math.ceil(self.concurrency / replicas)))

    def describe(self) -> str:
        return f"{self.rate:g} req/s (Poisson)" if self.rate is not None else f"{self.concurrency} concurrent users"

    def to_json(self) -> dict:
        return {"rate_per_s": self.rate} if self.rate is not None else {"concurrency": self.concurrency}
