"""vazao prices | bill | cost | prefix | budget: the cost side. Parse → one library call → render."""

from __future__ import annotations

import datetime as _dt
from dataclasses import replace
from decimal import Decimal
from pathlib import Path

import typer

from vazao import limits
from vazao.cli.app import JSON, JUDGE, QUIET, app, console, emit_json, sub_app
from vazao.cli.plotting import PLOT, check_plot, write_plot
from vazao.errors import VazaoError
from vazao.inputs import number, output_file, split_list, write_text

PRICE = typer.Option(..., "--price", "-p", help="API price id or alias (see `vazao prices`).")
PRICES_FILE = typer.Option(None, "--prices", help="Extra prices YAML (e.g. from `vazao prices import`).")
CACHE = typer.Option(None, "--cache", help="Prompt caching with this TTL's write price: 5m, 1h, default …")
BATCH = typer.Option(False, "--batch", help="Bill at the batch endpoint's prices.")
PER_DAY = typer.Option(None, "--per-day", help="Also show the bill for this many per day.")
FMT = typer.Option(None, "--format", "-f", help="Weight format (default bf16, fp16 before Ampere).")
ENGINE = typer.Option(None, "--engine", "-e", help="Engine profile: vllm, sglang, trtllm, llama.cpp … (default: the "
                      "GPU's own: vLLM on NVIDIA and AMD, llama.cpp on Apple, CPUs and for GGUF files).")
SLO_OPT = typer.Option(None, "--slo", help="Latency limits the throughput must meet, e.g. "
                       "ttft_p95=500ms,tpot_p95=50ms (default ttft_p95=1s,tpot_p95=50ms; none: no limit).")
TRAFFIC = typer.Option(None, "--traffic", help="Cost at this load: a request rate (20/s); enough copies of the "
                                               "deployment carry it, each as busy as the traffic makes it.")
UTIL = typer.Option("1", "--utilisation", "-u", help="Share of paid GPU hours at full SLO throughput (0–1].")
WORKLOAD = typer.Option(None, "--workload", "-w", help="Workload YAML or built-in name (chat, support, …).")
INPUT = typer.Option(None, "--input", "-i", help="Prompt tokens per request (instead of a workload).")
OUTPUT = typer.Option(None, "--output", "-o", help="Output tokens per request (instead of a workload).")
ANALYTIC = typer.Option(False, "--analytic", help="Use the closed-form model, not the simulator.")


def _extra(prices_file: Path | None):
    from vazao.catalog.prices import load_prices

    return load_prices(prices_file) if prices_file is not None else None


def _tokens(what: str, value: int, minimum: int = 0) -> int:
    """Tokens of one message, prompt or reply: whole, within one context window's bound."""
    return int(number(value, what, minimum=minimum, maximum=limits.MAX_CONTEXT, integer=True))


def _cache_ttl(cache: str | None) -> str | None:
    """--cache as given ('' is an error, not "no cache"); the price table says which TTLs exist."""
    if cache is not None and not cache.strip():
        raise VazaoError("--cache is empty; give a TTL such as 5m or 1h, or leave --cache out")
    return cache


def _price(name: str, prices_file: Path | None):
    from vazao.catalog.prices import get_price

    return get_price(name, _extra(prices_file))


# ---- prices -----------------------------------------------------------------------------------
prices_app = sub_app("API price tables (in/out/cache/batch/long-context, with as_of).",
                         invoke_without_command=True)
app.add_typer(prices_app, name="prices")


@prices_app.callback(invoke_without_command=True)
def prices_cmd(
    ctx: typer.Context,
    provider: str = typer.Option(None, "--provider", help="Only this provider (anthropic, openai, google …)."),
    gpus: bool = typer.Option(False, "--gpus", help="GPU rental $/h instead (from the accelerator catalog)."),
    prices_file: Path = PRICES_FILE,
    json_out: bool = JSON,
) -> None:
    """The catalog of API prices, USD per million tokens (--gpus: GPU rental per hour)."""
    from vazao.catalog.hardware import accelerators
    from vazao.catalog.prices import all_prices
    from vazao.cost.selfhost import to_decimal
    from vazao.report import cost_console as R

    if ctx.invoked_subcommand:
        return
    if gpus:
        rented = [a for a in accelerators().values() if a.usd_per_hour is not None]
        if json_out:
            emit_json({"gpus": [{"id": a.id, "name": a.name, "usd_per_hour": str(to_decimal(a.usd_per_hour)),
                                 "source": a.price_source, "as_of": a.price_as_of} for a in rented]})
        else:
            console.print(R.gpu_rental_table(rented))
        return
    tables = [t for t in all_prices(_extra(prices_file)) if provider is None or t.provider == provider.lower()]
    if provider is not None and not tables:
        known = sorted({t.provider for t in all_prices(_extra(prices_file))})
        raise VazaoError(f"no prices for provider {provider[:60]!r} (providers: {', '.join(known)})")
    if json_out:
        emit_json({"prices": [t.to_json() for t in tables]})
        return
    console.print(R.prices_table(tables))


@prices_app.command("import")
def prices_import_cmd(
    path: str = typer.Argument(None, help="litellm's model_prices_and_context_window_backup.json "
                               "(default: the one inside an installed litellm)."),
    from_litellm: bool = typer.Option(False, "--from-litellm", help="Read litellm's price JSON format."),
    out: Path = typer.Option(None, "--out", help="Write the YAML here (default: stdout)."),
    provider: list[str] = typer.Option([], "--provider", help="Only these litellm providers (repeatable)."),
    as_of: str = typer.Option(None, "--as-of", help="as_of stamped on every entry (default: today)."),
    json_out: bool = JSON,
) -> None:
    """Convert a price file to vazao's prices format (use it with --prices FILE)."""
    from vazao.cost.price_import import convert, dump_prices, read_litellm

    if not from_litellm:
        raise VazaoError("say which format to import: --from-litellm")
    if as_of is not None:
        try:
            as_of = _dt.date.fromisoformat(as_of.strip()).isoformat()
        except ValueError:
            raise VazaoError(f"--as-of must be a date like 2026-01-31, got {as_of[:40]!r}") from None
    if out is not None:
        output_file(out, "--out file")
    data, src = read_litellm(path)
    entries, skipped = convert(data, as_of or _dt.date.today().isoformat(), provider)
    text = dump_prices(entries, f"# Imported from {src} by `vazao prices import --from-litellm`.")
    if out is not None:
        write_text(out, text, "--out file")
    if json_out:
        emit_json({"source": str(src), "imported": len(entries), "skipped": skipped,
                   "out": str(out) if out else None})
    elif out:
        console.print(f"{len(entries):,} price tables written to {out} ({skipped:,} entries without text-token "
                      f"prices skipped)", highlight=False)
    else:
        typer.echo(text, nl=False)


# ---- bills ------------------------------------------------------------------------------------
bill_app = sub_app("API bills: requests, conversations, agents, usage logs.", no_args_is_help=True)
app.add_typer(bill_app, name="bill")


def _show_bill(bill, title: str, json_out: bool, per_day: int | None, extra: dict | None = None,
               after=None) -> None:
    from vazao.catalog.prices import usd_str
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines

    if per_day is not None:
        number(per_day, "--per-day", minimum=0, maximum=limits.MAX_COUNT, integer=True)
    per_day_usd = bill.total_usd * per_day if per_day is not None else None
    if json_out:
        d = bill.to_json()
        if per_day is not None:
            d["per_day"] = per_day
            d["per_day_usd"] = usd_str(per_day_usd)
        emit_json({**d, **(extra or {})})
        return
    console.print(R.bill_table(bill, title))
    print_lines(console, R.bill_footer(bill, per_day, per_day_usd))
    if after:
        after()


@bill_app.command("request")
def bill_request_cmd(
    price: str = PRICE,
    input_tokens: int = typer.Option(0, "--input", "-i", help="New (uncached) prompt tokens."),
    cached: int = typer.Option(0, "--cached", help="Prompt tokens read from the cache."),
    cache_write: int = typer.Option(0, "--cache-write", help="Prompt tokens written to the cache."),
    output_tokens: int = typer.Option(0, "--output", "-o", help="Visible output tokens."),
    reasoning: int = typer.Option(0, "--reasoning", help="Reasoning (thinking) tokens, billed as output."),
    count: int = typer.Option(1, "--count", "-n", help="Identical requests."),
    cache: str = CACHE, batch: bool = BATCH, prices_file: Path = PRICES_FILE, json_out: bool = JSON,
) -> None:
    """One request's bill from its token ledger."""
    from vazao.cost.ledger import TokenLedger, check_ttl, line, make_bill

    led = TokenLedger(new_input=_tokens("--input", input_tokens), cache_read=_tokens("--cached", cached),
                      cache_write=_tokens("--cache-write", cache_write), output=_tokens("--output", output_tokens),
                      reasoning=_tokens("--reasoning", reasoning))
    number(count, "--count", minimum=1, maximum=limits.MAX_COUNT, integer=True)
    cache = _cache_ttl(cache)
    table = _price(price, prices_file)
    check_ttl(table, cache)
    bill = make_bill(table, [line(table, "request", led, count, batch, cache)], batch, cache)
    _show_bill(bill, f"Request on {table.id}", json_out, None)


@bill_app.command("conversation")
def bill_conversation_cmd(
    price: str = PRICE,
    system: int = typer.Option(..., "--system", help="Tokens of system prompt and static policy text."),
    turns: int = typer.Option(..., "--turns", help="Turns per conversation."),
    user: int = typer.Option(..., "--user", help="Tokens per user message."),
    reply: int = typer.Option(..., "--reply", help="Tokens per reply."),
    reasoning: int = typer.Option(0, "--reasoning", help="Reasoning tokens per turn (billed as output)."),
    cache: str = CACHE, batch: bool = BATCH, per_day: int = PER_DAY, prices_file: Path = PRICES_FILE,
    json_out: bool = JSON,
) -> None:
    """A conversation whose history is re-sent each turn; --cache caches the system prompt."""
    from vazao.cost.conversation import Conversation, bill_conversation, levers
    from vazao.report import cost_console as R

    number(turns, "--turns", minimum=1, maximum=limits.MAX_TURNS, integer=True)
    for what, v in (("--system", system), ("--user", user), ("--reply", reply), ("--reasoning", reasoning)):
        _tokens(what, v)
    cache = _cache_ttl(cache)
    table = _price(price, prices_file)
    conv = Conversation(system=system, turns=turns, user=user, reply=reply, reasoning=reasoning)
    bill = bill_conversation(conv, table, cache, batch)
    lv = levers(conv, table, cache, batch)
    _show_bill(bill, f"Conversation on {table.id}: {turns} turns", json_out, per_day,
               {"levers": [x.to_json() for x in lv]}, after=lambda: console.print(R.levers_table(lv)))


@bill_app.command("agent")
def bill_agent_cmd(
    price: str = PRICE,
    calls: int = typer.Option(..., "--calls", help="LLM calls per agent."),
    context: int = typer.Option(..., "--context", help="Prompt tokens per call (with --history: the first call's)."),
    reply: int = typer.Option(..., "--reply", help="Output tokens per call."),
    agents: int = typer.Option(1, "--agents", help="Agents per task."),
    cached_context: int = typer.Option(0, "--cached-context", help="Leading prompt tokens stable across an "
                                       "agent's calls (cached with --cache)."),
    reasoning: int = typer.Option(0, "--reasoning", help="Reasoning tokens per call (billed as output)."),
    history: bool = typer.Option(False, "--history", help="A loop: each call re-sends every earlier reply and "
                                 "tool output (the growing prefix cached with --cache)."),
    tool_output: int = typer.Option(0, "--tool-output", help="With --history: tool-result tokens appended "
                                    "after each call."),
    merge_reply: int = typer.Option(0, "--merge-reply", help="With --history: an orchestrator's last call "
                                    "reads every agent's final reply and writes this many tokens."),
    cache: str = CACHE, batch: bool = BATCH, per_day: int = PER_DAY, prices_file: Path = PRICES_FILE,
    json_out: bool = JSON,
) -> None:
    """An agentic task: agents × calls × (context + reply), or with --history the loop whose context
    grows each call, beside what seed 004's multipliers imply (multi-agent ≈ 15×, an agent ≈ 4× a chat)."""
    from vazao.cost.agent import AgentLoop, AgentTask, bill_agent, bill_agent_loop

    for what, v in (("--calls", calls), ("--agents", agents)):
        number(v, what, minimum=1, maximum=limits.MAX_CALLS, integer=True)
    for what, v in (("--context", context), ("--reply", reply), ("--cached-context", cached_context),
                    ("--reasoning", reasoning), ("--tool-output", tool_output), ("--merge-reply", merge_reply)):
        _tokens(what, v)
    cache = _cache_ttl(cache)
    table = _price(price, prices_file)
    if not history:
        if tool_output or merge_reply:
            raise VazaoError("--tool-output and --merge-reply describe a loop: add --history")
        task = AgentTask(calls=calls, context=context, reply=reply, agents=agents, cached_context=cached_context,
                         reasoning=reasoning)
        bill = bill_agent(task, table, cache, batch)
        _show_bill(bill, f"Agent task on {table.id}: {agents} × {calls} calls", json_out, per_day,
                   {"tokens_per_agent": task.tokens_per_agent, "tokens_per_task": task.tokens_per_task},
                   after=lambda: console.print(f"{task.tokens_per_agent:,} tokens per agent, "
                                               f"{task.tokens_per_task:,} per task", highlight=False))
        return
    if cached_context:
        raise VazaoError("--cached-context is the flat model's stable prefix; with --history, --cache caches "
                         "the whole growing prefix")
    loop = AgentLoop(calls=calls, context=context, reply=reply, tool=tool_output, agents=agents,
                     reasoning=reasoning, merge_reply=merge_reply)
    bill = bill_agent_loop(loop, table, cache, batch)
    m = loop.multipliers()
    extra = {"tokens_per_agent": loop.tokens_per_agent, "tokens_per_task": loop.tokens_per_task,
             "flat_tokens_per_task": loop.flat_tokens_per_task, "multipliers": m}
    _show_bill(bill, f"Agent loop on {table.id}: {agents} × {calls} calls, history re-sent", json_out, per_day,
               extra, after=lambda: console.print(
                   f"{loop.tokens_per_agent:,} tokens per agent, {loop.tokens_per_task:,} per task: "
                   f"{m['history_over_flat']:.2f}× the {loop.flat_tokens_per_task:,} of calls that send only the "
                   f"first prompt; the task is {m['task_over_one_agent']:.2f}× one agent, where seed 004's "
                   f"≈ 15× and ≈ 4× a chat make a multi-agent system "
                   f"{m['seed_multi_agent_over_agent']:.2f}× an agent", highlight=False))


@bill_app.command("usage")
def bill_usage_cmd(
    log: Path = typer.Argument(..., help="JSONL of usage objects (OpenAI chat/responses or Anthropic)."),
    price: str = typer.Option(None, "--price", "-p", help="Fallback price id for lines whose model is missing "
                              "or not in the price catalog (each other line is billed at its model's price)."),
    cache: str = CACHE, batch: bool = BATCH, prices_file: Path = PRICES_FILE,
    json_out: bool = JSON,
) -> None:
    """Bill a log of real requests, each line at its own model's price; malformed lines are counted
    and reported, the rest billed."""
    from vazao.catalog.prices import get_price
    from vazao.cost.usage import bill_usage
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines

    extra = _extra(prices_file)
    table = get_price(price, extra) if price else None
    ub = bill_usage(log, table, batch, cache, extra)
    if json_out:
        emit_json(ub.to_json())
        return
    _show_bill(ub.bill, f"Usage log {log.name}, priced per model", False, None)
    print_lines(console, ["prices: " + ", ".join(f"{label} at {pid}" if label != pid else label
                                                   for label, pid in ub.prices)])
    if ub.fallback_requests:
        print_lines(console, [f"[yellow]note:[/] {ub.fallback_requests:,} line(s) billed at the fallback "
                              f"--price {ub.bill.price.id}: model(s) {', '.join(ub.fallback_models)} "
                              "not in the price catalog"])
    print_lines(console, R.malformed_lines(ub.malformed, ub.malformed_lines))


# ---- self-hosted, break-even, training ---------------------------------------------------------
cost_app = sub_app("Self-hosted $/Mtok, owning against renting, break-even against an API, training cost.",
                       no_args_is_help=True)
app.add_typer(cost_app, name="cost")


def _shape(workload: str | None, input_tokens: int | None, output_tokens: int | None):
    """(RequestShape, Workload, plan or None) of a workload file, or a fixed-length workload built
    from --input/--output (what the simulator needs)."""
    from vazao.cost.policy import RequestShape, fixed_workload, mean_shape
    from vazao.workload import load_workload

    if workload is not None:
        w = load_workload(workload)
        plan = w.specs()
        return mean_shape(plan, workload), w, plan
    if input_tokens is None or output_tokens is None:
        raise VazaoError("give --workload, or both --input and --output tokens per request")
    _tokens("--input", input_tokens, minimum=1)
    _tokens("--output", output_tokens, minimum=1)
    return RequestShape(input_tokens, output_tokens), fixed_workload(input_tokens, output_tokens), None


@cost_app.command("selfhost")
def cost_selfhost_cmd(
    model: str = typer.Argument(..., help="Catalog name, config.json or .gguf."),
    gpu: str = typer.Option(..., "--gpu", "-g", help="Accelerator id."),
    count: int = typer.Option(None, "--count", "-n", help="GPUs (default: the cheapest per request of 1, 2, 4, 8)."),
    usd_per_hour: str = typer.Option(None, "--usd-per-hour", help="$/GPU-hour (default: the GPU catalog's)."),
    workload: str = WORKLOAD, input_tokens: int = INPUT, output_tokens: int = OUTPUT, slo: str = SLO_OPT,
    judge: str = JUDGE,
    traffic: str = TRAFFIC,
    measured: Path = typer.Option(None, "--measured", help="Take throughput from a `vazao bench` JSON run."),
    utilisation: str = UTIL, fmt: str = FMT, engine: str = ENGINE, analytic: bool = ANALYTIC,
    quiet: bool = QUIET, json_out: bool = JSON,
) -> None:
    """$/Mtok of a self-hosted deployment at the throughput that meets the SLO."""
    from vazao.budget import read_run
    from vazao.cost.policy import SelfHostQuery, selfhost, slo_choice, traffic_rate
    from vazao.cost.selfhost import given_rate, parse_utilisation
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines

    utilisation = parse_utilisation(utilisation, "--utilisation")
    if usd_per_hour is not None:
        given_rate(usd_per_hour, "--usd-per-hour")  # a bad figure fails before the request shape is read
    if measured is not None and workload is None and (input_tokens is None or output_tokens is None):
        shape, w = None, None  # the run brings its own throughput; no request shape needed
    else:
        shape, w, _plan = _shape(workload, input_tokens, output_tokens)
    choice = slo_choice(slo, judge)
    rps = traffic_rate(traffic, utilisation)
    if measured is not None and count is None:
        raise VazaoError("with --measured, say how many GPUs served the run (--count)")
    run = read_run(measured) if measured is not None else None
    answer = selfhost(SelfHostQuery(model, gpu, shape, w, count=count, fmt=fmt, engine=engine,
                                    usd_per_hour=usd_per_hour, utilisation=utilisation, slo=choice.slo,
                                    measured=run, measured_detail=f"run {measured}", analytic=analytic),
                      choice, rps)
    if json_out:
        emit_json(answer.to_json())
        return
    console.print(choice.note, highlight=False)
    print_lines(console, R.selfhost_lines(answer.cost))


@cost_app.command("breakeven")
def cost_breakeven_cmd(
    model: str = typer.Argument(..., help="Catalog name, config.json or .gguf."),
    price: str = PRICE,
    gpus: str = typer.Option("h100-sxm,a100-sxm-80gb", "--gpus", help="Comma-separated accelerator ids."),
    count: int = typer.Option(None, "--count", "-n", help="GPUs per deployment (default: cheapest of 1, 2, 4, 8)."),
    workload: str = WORKLOAD, input_tokens: int = INPUT, output_tokens: int = OUTPUT, slo: str = SLO_OPT,
    judge: str = JUDGE,
    traffic: str = TRAFFIC,
    cache: str = CACHE, utilisation: str = UTIL, fmt: str = FMT, engine: str = ENGINE, analytic: bool = ANALYTIC,
    prices_file: Path = PRICES_FILE, plot: Path = PLOT, quiet: bool = QUIET, json_out: bool = JSON,
    horizon: str = typer.Option(None, "--horizon", help="Project the break-even month by month over this long "
                                "(24mo, 2y; at most 120 months); needs --trend."),
    trend: str = typer.Option(None, "--trend", help="A named, cited price-trend scenario: epoch-fixed-capability, "
                              "flat-top-tier, agent-rebound, multi-agent-rebound, or a trends YAML file."),
) -> None:
    """Traffic above which self-hosting beats an API price, per GPU type; with --traffic, each side's
    monthly bill at that load. --plot draws $/Mtok against traffic with the API's line. With --horizon
    and --trend, the break-even month by month under a cited scenario (never a forecast); --plot then
    draws it over time."""
    from vazao.cost.policy import SelfHostQuery, breakeven, slo_choice, traffic_rate
    from vazao.cost.selfhost import parse_utilisation
    from vazao.report import cost_console as R

    gpu_ids = split_list(gpus, "--gpus", max_items=16)
    check_plot(plot)
    from vazao.cost.trends import trend_options

    horizon_months, scenario = trend_options(horizon, trend)
    cache = _cache_ttl(cache)
    table = _price(price, prices_file)
    utilisation = parse_utilisation(utilisation, "--utilisation")
    shape, w, plan = _shape(workload, input_tokens, output_tokens)
    choice = slo_choice(slo, judge)
    rps = traffic_rate(traffic, utilisation)
    q = SelfHostQuery(model, gpu_ids[0], shape, w, count=count, fmt=fmt, engine=engine, utilisation=utilisation,
                      slo=choice.slo, analytic=analytic)
    answer = breakeven(q, gpu_ids, table, plan, cache, choice, rps, horizon_months, scenario)
    result = answer.to_json()
    if json_out:
        emit_json(result)
    else:
        console.print(choice.note, highlight=False)
        console.print(R.breakeven_table(list(answer.rows), table.id, answer.api_usd_per_request))
        if answer.at_traffic is not None:
            from vazao.report.console import print_lines

            print_lines(console, R.at_traffic_lines(list(answer.at_traffic), rps))
        if answer.trend is not None:
            from vazao.report.console import print_lines

            print_lines(console, R.trend_header_lines(answer.trend))
            for proj in answer.trend.projections[:1]:  # the best deployment's table; every one in --json
                console.print(R.trend_table(proj, answer.trend.scenario.id))
            print_lines(console, [f"  {p.summary()}" for p in answer.trend.projections])
    if plot is not None:
        from vazao.report.small_reports import breakeven_report, breakeven_trend_report

        build = breakeven_trend_report if answer.trend is not None else breakeven_report
        write_plot(build(answer), plot, json_out=json_out, quiet=quiet)


@cost_app.command("own")
def cost_own_cmd(
    model: str = typer.Argument(..., help="Catalog name, config.json or .gguf."),
    gpu: str = typer.Option(..., "--gpu", "-g", help="GPUs to buy, comma-separated (e.g. p40,rtx-3090,rtx-4090)."),
    traffic: str = typer.Option(..., "--traffic", help="The load every option carries: a request rate (2/s)."),
    rent: str = typer.Option(None, "--rent", help="GPUs to rent instead, comma-separated (e.g. h100-sxm)."),
    api_price: str = typer.Option(None, "--api-price", help="An API price id to weigh too (see `vazao prices`)."),
    condition: str = typer.Option(None, "--condition", help="new or used (default: the cheapest published)."),
    price: str = typer.Option(None, "--price", help="$ per card, in place of the catalog's (one GPU)."),
    horizon: str = typer.Option("36mo", "--horizon", help="How long the cards serve: 36mo, 3y."),
    life: float = typer.Option(None, "--life", help="Years the cards are written off over (default: 5 for "
                               "datacenter parts, 4 for GeForce cards)."),
    resale: str = typer.Option("0", "--resale", help="Share of the price a buyer pays back at the end (0–1)."),
    hosting: str = typer.Option("0", "--hosting", help="$ per GPU-month for rack space, network, upkeep."),
    pue: float = typer.Option(None, "--pue", help="The site's PUE (default 1.56, a datacenter's; 1 with --home)."),
    usd_per_kwh: str = typer.Option(None, "--usd-per-kwh", help="Electricity price (default 0.13 $/kWh)."),
    home: bool = typer.Option(False, "--home", help="A card in a home or office box: PUE 1."),
    count: int = typer.Option(None, "--count", "-n", help="GPUs per deployment (default: the fewest per request)."),
    workload: str = WORKLOAD, input_tokens: int = INPUT, output_tokens: int = OUTPUT, slo: str = SLO_OPT,
    judge: str = JUDGE, fmt: str = FMT, engine: str = ENGINE, analytic: bool = ANALYTIC,
    quiet: bool = QUIET, json_out: bool = JSON,
) -> None:
    """Buy GPUs, rent them or pay an API: $/request and $/Mtok over a horizon with power, and the month
    buying pays back."""
    from vazao import inputs
    from vazao.cost.energy import default_site
    from vazao.cost.policy import OwnChoice, SelfHostQuery, own, slo_choice, traffic_rate
    from vazao.cost.trends import parse_horizon
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines

    def names(text: str | None, what: str) -> tuple[str, ...]:
        return () if text is None else tuple(inputs.split_list(text, what, max_items=16))

    months = parse_horizon(horizon)
    rps = traffic_rate(traffic)
    site = default_site(home, None if pue is None else inputs.number(pue, "--pue", minimum=1.0, maximum=3.0),
                        usd_per_kwh)
    choice = OwnChoice(names(gpu, "--gpu"), names(rent, "--rent"), api_price, condition, price, life,
                       Decimal(str(inputs.number(resale, "--resale", minimum=0.0, maximum=1.0))),
                       Decimal(str(inputs.number(hosting, "--hosting", minimum=0.0, maximum=1_000_000.0))),
                       site, months, rps if rps is not None else 0.0)
    shape, w, _plan = _shape(workload, input_tokens, output_tokens)
    slo_c = slo_choice(slo, judge)
    answer = own(SelfHostQuery(model, choice.owned[0] if choice.owned else "", shape, w, count=count, fmt=fmt,
                               engine=engine, slo=slo_c.slo, analytic=analytic), choice)
    if json_out:
        emit_json(answer.to_json())
        return
    console.print(slo_c.note, highlight=False)
    console.print(R.own_table(answer))
    print_lines(console, R.own_lines(answer))


@cost_app.command("train")
def cost_train_cmd(
    params: str = typer.Option(..., "--params", help="Parameters: 7e9, 7B, 70B."),
    tokens: str = typer.Option(..., "--tokens", help="Training tokens: 1e12, 1T, 500B."),
    gpu: str = typer.Option(..., "--gpu", "-g", help="Accelerator id."),
    mfu: float = typer.Option(0.4, "--mfu", help="Model FLOPs utilisation: achieved / dense peak."),
    gpus: int = typer.Option(1, "--gpus", help="GPUs in the run (sets the wall-clock time only)."),
    usd_per_hour: str = typer.Option(None, "--usd-per-hour", help="$/GPU-hour (default: the GPU catalog's)."),
    lora: bool = typer.Option(False, "--lora", help="LoRA fine-tune: frozen base, ≈ 4·N·D FLOPs."),
    dtype: str = typer.Option(None, "--dtype", help="Peak to use (default: bf16/fp16)."),
    json_out: bool = JSON,
) -> None:
    """Training cost: 6·N·D FLOPs over peak × MFU, in GPU-hours and dollars."""
    from vazao.catalog.local import resolve_accelerator
    from vazao.cost.training import training_cost
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines
    from vazao.units import parse_count

    n = number(parse_count(params), "--params", minimum=0, exclusive_min=True, maximum=limits.MAX_PARAMS)
    d = number(parse_count(tokens), "--tokens", minimum=0, exclusive_min=True, maximum=limits.MAX_TRAIN_TOKENS)
    number(mfu, "--mfu", minimum=0, exclusive_min=True, maximum=1)
    number(gpus, "--gpus", minimum=1, maximum=limits.MAX_GPUS, integer=True)
    tc = training_cost(n, d, resolve_accelerator(gpu), mfu, usd_per_hour, gpus, lora, dtype)
    if json_out:
        emit_json(tc.to_json())
        return
    print_lines(console, R.training_lines(tc))


# ---- prefix advisor ---------------------------------------------------------------------------
@app.command("prefix")
def prefix_cmd(
    requests_file: Path = typer.Argument(..., help="JSONL of requests (chat messages, prompts, batch lines)."),
    price: str = PRICE,
    unit: str = typer.Option("token", "--unit", help="Compare prompts by token (approximate) or char."),
    block: int = typer.Option(None, "--block", help="Cache block size in units (default 16 tokens / 64 chars)."),
    min_cacheable: int = typer.Option(1024, "--min-cacheable", help="Shortest prefix a provider caches, tokens."),
    cache: str = typer.Option(None, "--cache", help="Cache TTL: its write price and, with timestamps, expiry "
                              "(default: the price's first TTL, 5 minutes)."),
    tokenizer: Path = typer.Option(None, "--tokenizer", help="A tokenizer.json for exact token counts."),
    chars_per_token: float = typer.Option(4.0, "--chars-per-token", help="With --unit char: chars per token."),
    prices_file: Path = PRICES_FILE, json_out: bool = JSON,
) -> None:
    """Find the longest static prefix, the cache hit rate, savings and what breaks the prefix."""
    from vazao.cost.prefix import analyze, read_requests, tokenizer_from_file
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines
    if unit not in ("token", "char"):
        raise VazaoError(f"--unit is token or char, got {unit[:40]!r}")
    if block is not None:
        number(block, "--block", minimum=1, maximum=2**20, integer=True)
    number(min_cacheable, "--min-cacheable", minimum=0, maximum=limits.MAX_CONTEXT, integer=True)
    number(chars_per_token, "--chars-per-token", minimum=0, exclusive_min=True, maximum=limits.MAX_CHARS_PER_TOKEN)
    cache = _cache_ttl(cache)
    table = _price(price, prices_file)
    reqs, malformed, bad = read_requests(requests_file)
    encode = tokenizer_from_file(tokenizer) if tokenizer is not None else None
    report = analyze(reqs, table, unit=unit, block=block, min_cacheable_tokens=min_cacheable, cache_ttl=cache,
                     chars_per_token=chars_per_token, encode=encode)
    report = replace(report, malformed=malformed, malformed_lines=tuple(bad))
    if json_out:
        emit_json(report.to_json())
        return
    print_lines(console, R.prefix_lines(report))
    if report.volatile:
        console.print(R.volatile_table(report.volatile))
    print_lines(console, [f"[bold]advice:[/] {a}" for a in report.advice])
    print_lines(console, [f"[dim]note: {n}[/]" for n in report.notes])
    print_lines(console, R.malformed_lines(malformed, bad))


# ---- budgets ----------------------------------------------------------------------------------
budget_app = sub_app("Per-task budgets: cost, margin and latency, as a CI gate.", no_args_is_help=True)
app.add_typer(budget_app, name="budget")


@budget_app.command("check")
def budget_check_cmd(
    budget_file: Path = typer.Argument(..., help="Budget YAML (see examples/budget.yaml)."),
    measured: list[str] = typer.Option([], "--measured", help="A `vazao bench` JSON run for every task, or "
                                       "TASK=PATH for one task (repeatable)."),
    simulate: bool = typer.Option(False, "--simulate", help="Check latency against a simulated deployment "
                                  "(--model, --gpu)."),
    model: str = typer.Option(None, "--model", help="With --simulate: the model served."),
    gpu: str = typer.Option(None, "--gpu", "-g", help="With --simulate: the accelerator."),
    count: int = typer.Option(1, "--count", "-n", help="With --simulate: GPUs."),
    concurrency: int = typer.Option(1, "--concurrency", help="With --simulate: requests in flight."),
    fmt: str = FMT, engine: str = ENGINE, analytic: bool = ANALYTIC,
    strict: bool = typer.Option(False, "--strict", help="A latency limit nothing checks is a miss."),
    judge: str = JUDGE, prices_file: Path = PRICES_FILE, json_out: bool = JSON,
) -> None:
    """Cost per task, margin and latency against the budget; exit 1 when any task misses."""
    from vazao.budget import check_budget, deployment_latency, latency_band, load_budget
    from vazao.report import cost_console as R
    from vazao.report.console import print_lines
    from vazao.results import SLO

    budget = load_budget(budget_file, _extra(prices_file))
    per_task, all_tasks = {}, None

    def exists(text: str) -> bool:
        try:
            return Path(text).exists()
        except (OSError, ValueError):  # a name too long for the file system, a NUL byte
            return False

    for m in measured:
        name, sep, path = m.partition("=")
        if sep and not exists(m):
            per_task[name] = Path(path)
        elif all_tasks is None:
            all_tasks = Path(m)
        else:
            raise VazaoError("give one --measured PATH for every task, or TASK=PATH per task")
    sim_fn, label, band = None, "simulated", None
    SLO({}, judge)  # the judge checked before any work
    if simulate:
        if not model or not gpu:
            raise VazaoError("--simulate needs --model and --gpu")
        number(concurrency, "--concurrency", minimum=1, maximum=limits.MAX_BUDGET_CONCURRENCY, integer=True)
        from vazao.physics.deployment import make_deployment

        dep = make_deployment(model, gpu, fmt, count=count, engine=engine)
        sim_fn, label = deployment_latency(dep, concurrency, analytic)
        band = latency_band(dep)
    result = check_budget(budget, per_task, all_tasks, sim_fn, label, strict, band, judge)
    if json_out:
        emit_json(result.to_json())
    else:
        console.print(R.budget_table(result))
        print_lines(console, [f"[dim]latency: {t.name} ← {t.latency_source}[/]"
                                for t in result.tasks if t.latency_source])
        if any(c.band for t in result.tasks for c in t.checks):
            print_lines(console, ["[dim]predicted latencies: (low–high) their 80% band, "
                                  + SLO({}, judge).held + "[/]"])
        print_lines(console, [f"[yellow]note:[/] {n}" for n in result.notes])
    if not result.passed:
        raise typer.Exit(1)

