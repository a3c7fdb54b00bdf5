"""The one cost model: memory (what fits), step_cost (how long one engine step takes), profiles."""
