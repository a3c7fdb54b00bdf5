"""Budgets in the spec (seed 004_9706bef9153e5571.txt, "Ponha o orçamento na especificação"): per
user-visible task, p95 time to first token, p95 total time and a token budget split into cached
input, new input and output; with the value of a successful task, a cost per task and a margin.

`check` prices each task's tokens, compares latency with a measured run (a `vazao bench` JSON with a
"summary") or a simulated one, and says which limits each task misses.

Budget file:
    price: claude-sonnet-5.5          # default price for every task
    measured: run.json                # optional: default latency source (relative to this file)
    tasks:
      - name: support-reply
        ttft_p95: 800ms               # latency limits: ttft|total|tpot|itl _ p50|p90|p95|p99|mean
        total_p95: 8s
        tokens: {cached_input: 6000, new_input: 1200, output: 250}   # also cache_write, reasoning
        calls: 1                      # LLM requests per task: tiers and latency limits are per call
        value_usd: "0.05"             # value of a successful task
        success_rate: 0.9             # optional: share of tasks that succeed (default 1)
        max_cost_usd: "0.02"          # optional cap on the cost per task
        min_margin_usd: "0"           # optional floor on the margin (default 0 when value is given)
        max_error_rate: 0.01          # optional: share of a run's requests allowed to fail (default 0)

The error rate is part of every budget: whenever a run (measured or simulated) is checked, its failed
requests over its requests must not exceed `max_error_rate` (the task's, else the file's top-level
one, else 0): a run whose requests failed cannot pass on the latencies of the few that succeeded.

A simulated or analytic latency is shown with its 80% band and held to its limit at the band's pessimistic
edge, as `vazao plan` and `vazao cost selfhost` hold an SLO (`--judge prediction`: at the predicted value);
a measured one is what it is.
"""

from vazao.budget.check import BudgetCheck, BudgetResult, TaskResult, check_budget, check_task
from vazao.budget.latency import analytic_summary, deployment_latency, latency_band, simulated_summary
from vazao.budget.runs import read_run, summary_from_json
from vazao.budget.spec import Budget, TaskBudget, load_budget, parse_budget

__all__ = ["Budget", "BudgetResult", "BudgetCheck", "TaskBudget", "TaskResult", "analytic_summary", "check_budget",
           "check_task", "deployment_latency", "latency_band", "load_budget", "parse_budget", "read_run",
           "simulated_summary", "summary_from_json"]
