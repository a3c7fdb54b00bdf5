"""The serving simulator: a deterministic event loop over engine steps timed by `step_cost`.

    from vazao.sim import simulate, SimConfig
    result = simulate(dep, load_workload("chat"), SimConfig.from_engine(dep.engine))
"""

from vazao.sim.config import DisaggConfig, SimConfig, SpecConfig
from vazao.sim.run import Point, SimResult, SimRun, Variant, compare, run_simulation, simulate, sweep

__all__ = ["DisaggConfig", "Point", "SimConfig", "SimResult", "SimRun", "SpecConfig", "Variant", "compare",
           "run_simulation", "simulate", "sweep"]
