"""When a deployment does not fit: what would — more GPUs of the same kind at the same format, or
a narrower format on the same GPUs. For `vazao fit` on a miss ("does not fit; fits on 2× tp2 bf16,
or 1× int4-awq")."""

from __future__ import annotations

from dataclasses import dataclass

from vazao.errors import VazaoError

# tried in this order; what the silicon or the engine refuses is skipped. GGUF quants only for llama.cpp
NARROWER = ("fp8", "int8", "int4-awq")
NARROWER_GGUF = ("q8_0", "q4_k_m")


@dataclass(frozen=True)
class Alternative:
    count: int
    tp: int
    pp: int
    fmt: str
    max_concurrent_sequences: int

    def describe(self) -> str:
        par = f"tp{self.tp}" if self.pp == 1 else f"pp{self.pp}"
        return f"{self.count}× {par} {self.fmt}" if self.count > 1 else f"1× {self.fmt}"

    def to_json(self) -> dict:
        return dict(self.__dict__)


def _fits(model: str, gpu: str, fmt: str, count: int, context: int, engine: str | None):
    from vazao.physics.deployment import make_deployment
    from vazao.physics.memory import fit

    try:
        tp = None if engine == "llama.cpp" else count
        pp = count if engine == "llama.cpp" else 1
        dep = make_deployment(model, gpu, fmt, count=count, tp=tp or 1, pp=pp, engine=engine)
        f = fit(dep, context)
    except VazaoError:
        return None
    return (dep, f) if f.fits else None


def what_fits(model: str, gpu: str, fmt: str, context: int, *, engine: str | None = None,
              max_gpus: int = 8) -> list[Alternative]:
    """The fewest GPUs at `fmt`, then the narrower formats that need the fewest GPUs (at most two)."""
    found: list[Alternative] = []
    narrower = NARROWER_GGUF if engine == "llama.cpp" else NARROWER
    for fmt_try in (fmt, *(f for f in narrower if f != fmt)):
        count = 1
        while count <= max_gpus:
            hit = _fits(model, gpu, fmt_try, count, context, engine)
            if hit is not None:
                dep, f = hit
                found.append(Alternative(count, dep.tp, dep.pp, dep.weight_format.name,
                                         f.max_concurrent_sequences))
                break
            count *= 2
    same = [a for a in found if a.fmt == fmt]
    others = sorted((a for a in found if a.fmt != fmt), key=lambda a: a.count)  # stable: wider formats first
    fewest = [a for a in others if not same or a.count < same[0].count]
    return same + fewest[:2]
