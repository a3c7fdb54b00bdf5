"""vazao: what an LLM will cost and how fast it will be, on this hardware, for this traffic."""

__version__ = "0.1.0"
