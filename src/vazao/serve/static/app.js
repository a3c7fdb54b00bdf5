// vazao serve: the page. Plain module, no build step. Every figure shown comes from the server's JSON
// (the library's typed results); this file only lays them out and draws them. Each shown figure keeps
// its raw value in data-value, so a test (or a curious reader) can compare it with the library's.
"use strict";

const $ = (sel) => document.querySelector(sel);
const state = { upload: null, catalog: null, exploreSeq: 0, exploreShown: 0, exploreAbort: null, lastExplore: null,
                jobs: {}, times: [] };
window.__vazao = state;  // the bench and the browser tests read answer times here

// ---- formatting (presentation only) --------------------------------------------------------------
const fmtS = (s) => s == null ? "–" : s >= 1 ? `${(+s).toPrecision(3)} s` : `${(s * 1e3).toPrecision(3)} ms`;
const fmtN = (v, d = 0) => v == null ? "–" : (+v).toLocaleString("en-US", { maximumFractionDigits: d });
const fmtGB = (b) => b == null ? "–" : `${(b / 1e9).toFixed(1)} GB`;
const fmtUSD = (v) => v == null ? "–" : `$${(+v).toPrecision(4)}`;
const band = (b, f) => Array.isArray(b) && b[0] != null ? ` (${f(b[0])}–${f(b[1])})` : "";

function setStatus(text) { $("#status").textContent = text || ""; }

function el(tag, attrs = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v == null) continue;
    if (k === "text") e.textContent = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, text) {
  const e = document.createElementNS(SVG, tag);
  if (tag === "text" && attrs.fill == null) e.setAttribute("fill", "#333");
  for (const [k, v] of Object.entries(attrs)) if (v != null) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

// ---- the API -----------------------------------------------------------------------------------
async function call(path, body, opts = {}) {
  const r = await fetch(path, { method: body === undefined ? "GET" : "POST", signal: opts.signal,
    headers: body === undefined ? {} : { "Content-Type": opts.binary ? "application/octet-stream" : "application/json" },
    body: body === undefined ? undefined : opts.binary ? body : JSON.stringify(body) });
  if (opts.raw && r.ok) return r;
  let data;
  try { data = await r.json(); } catch (e) { throw new Error(`${path}: HTTP ${r.status}`); }
  if (!r.ok) throw new Error(data.error || `HTTP ${r.status}`);
  return data;
}

async function download(path, body, name) {
  const r = await call(path, body, { raw: true });
  const blob = await r.blob();
  const a = el("a", { href: URL.createObjectURL(blob), download: name });
  document.body.append(a); a.click(); a.remove();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
  setStatus(`exported ${name} (${fmtN(blob.size)} bytes, opens offline)`);
  document.body.dataset.exported = name;
}

// ---- the state: controls <-> permalink -----------------------------------------------------------
const PERMA = "#deployment [id], #explore-form [id], #simulate-form [id], #plan-form [id]";
function controls() {
  return [...document.querySelectorAll(PERMA)].filter((e) => /^(INPUT|SELECT)$/.test(e.tagName) && e.type !== "file"
    && e.id !== "batch-range");
}
function currentView() { return document.querySelector("[role=tab][aria-selected=true]").id.slice(4); }
function permalinkQuery() {
  const q = new URLSearchParams({ view: currentView() });
  for (const c of controls()) {
    if (c.type === "checkbox") { if (c.checked) q.set(c.id, "1"); } else if (c.value !== "") q.set(c.id, c.value);
  }
  return q;
}
function saveState() { history.replaceState(null, "", `?${permalinkQuery()}`); }
function loadState() {
  const q = new URLSearchParams(location.search);
  for (const c of controls()) {
    if (!q.has(c.id)) continue;
    if (c.type === "checkbox") c.checked = q.get(c.id) === "1"; else c.value = q.get(c.id);
  }
  $("#batch-range").value = $("#batch").value;
  if (q.get("view")) showView(q.get("view"));
}

function deploymentBody() {
  const v = (id) => $(`#${id}`).value.trim();
  const body = { gpu: v("gpu"), count: v("count"), format: v("format"), kv: v("kv"), engine: v("engine"),
                 tp: v("tp"), pp: v("pp"), ideal: $("#ideal").checked };
  if (state.upload) body.model_file = state.upload; else body.model = v("model");
  return body;
}
function exploreBody() {
  const v = (id) => $(`#${id}`).value.trim();
  return { ...deploymentBody(), batch: v("batch"), input: v("input"), output: v("output"), api_price: v("api-price") };
}

// ---- tabs ---------------------------------------------------------------------------------------
function showView(name) {
  for (const tab of document.querySelectorAll("[role=tab]")) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute("aria-selected", String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`#${tab.getAttribute("aria-controls")}`).hidden = !on;
  }
  $("#deployment").hidden = name === "plan" || name === "compare";  // those views do not read it
}
function setupTabs() {
  const tabs = [...document.querySelectorAll("[role=tab]")];
  for (const tab of tabs) {
    tab.addEventListener("click", () => { showView(tab.id.slice(4)); saveState(); });
    tab.addEventListener("keydown", (ev) => {
      const i = tabs.indexOf(tab), d = ev.key === "ArrowRight" ? 1 : ev.key === "ArrowLeft" ? -1 : 0;
      if (!d) return;
      const next = tabs[(i + d + tabs.length) % tabs.length];
      next.focus(); next.click();
    });
  }
}

// ---- the explorer ---------------------------------------------------------------------------------
async function explore() {
  const seq = ++state.exploreSeq, t0 = performance.now();
  if (state.exploreAbort) state.exploreAbort.abort();
  const ctl = new AbortController();
  state.exploreAbort = ctl;
  saveState();
  let data;
  try {
    data = await call("/api/explore", exploreBody(), { signal: ctl.signal });
  } catch (e) {
    if (e.name === "AbortError") return;
    if (seq < state.exploreShown) return;
    state.exploreShown = seq;
    $("#explore-error").hidden = false;
    $("#explore-error").textContent = e.message;
    const v = $("#verdict");
    v.dataset.status = "unsupported"; v.textContent = `refused: ${e.message}`;
    document.body.dataset.answered = String(seq);
    return;
  }
  if (seq < state.exploreShown) return;
  state.exploreShown = seq;
  renderExplore(data);
  const ms = performance.now() - t0;
  state.times.push(ms);
  $("#answer-time").textContent = `answered in ${ms.toFixed(0)} ms`;
  document.body.dataset.answered = String(seq);
}

function renderExplore(d) {
  state.lastExplore = d;
  $("#explore-error").hidden = true;
  const v = $("#verdict");
  v.dataset.status = d.verdict.status;
  v.textContent = `${d.verdict.format} on ${d.verdict.gpu} with ${d.verdict.engine}: ${d.verdict.status}`
    + (d.verdict.status === "emulated" ? ` (computes in ${d.verdict.compute_dtype})` : "")
    + (d.verdict.reason ? ` — ${d.verdict.reason}` : "");
  $("#at-batch").textContent = d.batch;
  if (d.refused) {
    for (const id of ["#memory", "#roofline", "#metrics tbody", "#cost tbody"]) $(id).replaceChildren();
    $("#fit-line").textContent = ""; $("#crossover").textContent = d.refused;
    return;
  }
  const est = d.estimate, row = d.row;
  drawMemory(d.memory[0], est.fit);
  drawRoofline(d.roofline, d.ceilings, d.batch);
  const cross = est.crossover_batch, empty = est.crossover_batch_weights_only;
  const cx = $("#crossover");
  cx.dataset.crossover = cross ?? ""; cx.dataset.crossoverEmpty = empty ?? ""; cx.dataset.bound = row.bound;
  cx.textContent = `Decode at batch ${d.batch} is ${row.bound}-bound. It turns compute-bound at batch `
    + `${cross ?? "never (KV reads grow with the batch)"} at this context; ${empty ?? "never"} with an empty cache.`;
  const rows = [
    ["decode bound", row.bound, row.bound, "m-bound"],
    ["TTFT (batch prefill)", fmtS(row.ttft_s) + band(row.ttft_band, fmtS), row.ttft_s, "m-ttft"],
    ["ITL (decode step)", fmtS(row.decode_step_s) + band(row.decode_step_band, fmtS), row.decode_step_s, "m-itl"],
    ["tok/s total", fmtN(row.tokens_per_s_total) + band(row.tokens_per_s_band, fmtN), row.tokens_per_s_total, "m-tps"],
    ["tok/s per request", fmtN(row.tokens_per_s_per_request, 1) + band(row.tokens_per_s_per_request_band, fmtN),
      row.tokens_per_s_per_request, "m-tps-req"],
    ["E2E", fmtS(row.e2e_s) + band(row.e2e_band, fmtS), row.e2e_s, "m-e2e"],
    ["prefill bound", row.prefill_bound, row.prefill_bound, "m-prefill-bound"],
    ["KV fits this batch", row.fits ? "yes" : "no", String(row.fits), "m-fits"],
    ["latency floor", fmtS(est.latency_floor_s) + band(est.latency_floor_band, fmtS), est.latency_floor_s, "m-floor"],
    ["max load", `${fmtN(est.max_load_tokens_per_s)}${band(est.max_load_band, fmtN)} tok/s at batch ${fmtN(est.max_batch)}`,
      est.max_load_tokens_per_s, "m-maxload"],
    ["decode power", row.decode_power_w == null ? "unknown (no published rating)" : `${fmtN(row.decode_power_w)} W per GPU`,
      row.decode_power_w ?? "", "m-power"],
    ["energy per token", row.decode_j_per_token == null ? "unknown" : `${row.decode_j_per_token.toPrecision(3)} J`,
      row.decode_j_per_token ?? "", "m-joules"],
  ];
  $("#metrics tbody").replaceChildren(...rows.map(([k, shown, raw, id]) =>
    el("tr", {}, el("th", { text: k, scope: "row" }), el("td", { id, "data-value": raw, text: shown, class: "num" }))));
  renderCost(d.cost);
}

function renderCost(c) {
  const body = $("#cost tbody");
  if (!c || c.error || !c.rows || !c.rows.length) {
    body.replaceChildren(el("tr", {}, el("td", { text: c && c.error ? c.error : "no cost" })));
    $("#cost-note").textContent = "";
    return;
  }
  const r = c.rows[0], s = r.selfhost;
  const rows = [
    ["self-hosted", s.deployment, s.deployment, "c-deployment"],
    ["$/Mtok output", fmtUSD(s.usd_per_mtok_output) + band(s.usd_per_mtok_output_band, fmtUSD), s.usd_per_mtok_output,
      "c-mtok-out"],
    ["$/Mtok blended", fmtUSD(s.usd_per_mtok_blended) + band(s.usd_per_mtok_blended_band, fmtUSD), s.usd_per_mtok_blended,
      "c-mtok"],
    ["$/request", fmtUSD(s.usd_per_request) + band(s.usd_per_request_band, fmtUSD), s.usd_per_request, "c-req"],
    [`${c.api_price} $/request`, fmtUSD(c.api_usd_per_request), c.api_usd_per_request, "c-api-req"],
    ["break-even (requests/day)", r.breakeven_requests_per_day == null ? "never" : fmtN(r.breakeven_requests_per_day),
      r.breakeven_requests_per_day, "c-breakeven"],
    ["verdict", r.verdict, r.verdict, "c-verdict"],
  ];
  body.replaceChildren(...rows.map(([k, shown, raw, id]) =>
    el("tr", {}, el("th", { text: k, scope: "row" }), el("td", { id, "data-value": raw ?? "", text: shown }))));
  $("#cost-note").textContent = `${c.slo_note} · throughput: ${s.throughput.detail}`;
}

function drawMemory(m, fit) {
  const W = 440, H = 70, total = m.segments.reduce((a, s) => a + s.bytes, 0) || 1;
  const colors = ["#4c78a8", "#9d755d", "#54a24b", "#d8dce4"];
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img",
                         "aria-label": `memory per GPU: ${m.segments.map((s) => `${s.part} ${fmtGB(s.bytes)}`).join(", ")}` });
  let x = 0;
  m.segments.forEach((s, i) => {
    const w = Math.max(0, (s.bytes / total) * W);
    g.append(svg("rect", { x, y: 4, width: w, height: 26, fill: colors[i % 4], "data-part": s.part, "data-bytes": s.bytes },
      undefined));
    g.lastChild.append(svg("title", {}, `${s.part}: ${fmtGB(s.bytes)}`));
    x += w;
  });
  m.segments.forEach((s, i) => {
    const lx = (i % 2) * 220, ly = 46 + Math.floor(i / 2) * 14;
    g.append(svg("rect", { x: lx, y: ly - 9, width: 10, height: 10, fill: colors[i % 4] }));
    g.append(svg("text", { x: lx + 14, y: ly }, `${s.part} ${fmtGB(s.bytes)}`));
  });
  $("#memory").replaceChildren(g);
  const fl = $("#fit-line");
  fl.dataset.fits = String(fit.fits);
  fl.dataset.maxSequences = fit.max_concurrent_sequences;
  fl.textContent = fit.weights_fit
    ? `Fits: ${fmtGB(fit.weights_bytes_per_gpu)} of weights per GPU; the KV cache holds ${fmtN(fit.max_concurrent_sequences)} `
      + `sequences of ${fmtN(fit.context)} tokens (${fmtN(fit.kv_capacity_tokens)} tokens).`
    : `Does not fit: ${fmtGB(fit.weights_bytes_per_gpu)} of weights per GPU. ${fit.reason || ""}`;
}

function drawRoofline(points, ceil, batch) {
  const W = 460, H = 300, L = 58, R = 12, T = 12, B = 36;
  const bw = ceil.bandwidth_bytes_per_s, peaks = [...new Map(ceil.peak_flops.map(([k, v]) => [v, k])).entries()];
  const xs = points.map((p) => p.intensity).filter((x) => x > 0);
  let x0 = Math.min(...xs, ...peaks.map(([p]) => p / bw)) / 4, x1 = Math.max(...xs, ...peaks.map(([p]) => p / bw)) * 4;
  const ys = points.map((p) => p.flops_per_s).filter((y) => y > 0);
  const y1 = Math.max(...peaks.map(([p]) => p), ...ys) * 2, y0 = Math.min(...ys, bw * x0) / 2;
  const lx = (x) => L + (Math.log(x / x0) / Math.log(x1 / x0)) * (W - L - R);
  const ly = (y) => T + (1 - Math.log(y / y0) / Math.log(y1 / y0)) * (H - T - B);
  const g = svg("svg", { viewBox: `0 0 ${W} ${H}`, width: "100%", role: "img",
                         "aria-label": `roofline of ${ceil.gpu}: decode and prefill steps per batch` });
  g.append(svg("rect", { x: L, y: T, width: W - L - R, height: H - T - B, fill: "#fbfcfe", stroke: "#d5dae3" }));
  for (let e = Math.ceil(Math.log10(x0)); e <= Math.floor(Math.log10(x1)); e++) {
    g.append(svg("text", { x: lx(10 ** e), y: H - B + 14, "text-anchor": "middle" }, `1e${e}`));
  }
  for (let e = Math.ceil(Math.log10(y0)); e <= Math.floor(Math.log10(y1)); e++) {
    g.append(svg("text", { x: L - 4, y: ly(10 ** e) + 4, "text-anchor": "end" }, `1e${e}`));
  }
  g.append(svg("text", { x: (L + W) / 2, y: H - 4, "text-anchor": "middle" }, "arithmetic intensity (FLOP/byte)"));
  g.append(svg("text", { x: 12, y: H / 2, transform: `rotate(-90 12 ${H / 2})`, "text-anchor": "middle" }, "FLOP/s per GPU"));
  for (const [peak, name] of peaks) {
    const ridge = peak / bw;
    g.append(svg("polyline", { points: `${lx(x0)},${ly(bw * x0)} ${lx(ridge)},${ly(peak)} ${lx(x1)},${ly(peak)}`,
      fill: "none", stroke: "#8a94a8", "stroke-dasharray": "4 3", "data-ceiling": name }));
    g.append(svg("text", { x: W - R - 2, y: ly(peak) - 4, "text-anchor": "end", fill: "#666" }, `${name} peak`));
  }
  for (const phase of ["decode", "prefill"]) {
    const pts = points.filter((p) => p.phase === phase).sort((a, b) => a.batch - b.batch);
    g.append(svg("polyline", { points: pts.map((p) => `${lx(p.intensity)},${ly(p.flops_per_s)}`).join(" "), fill: "none",
      stroke: phase === "decode" ? "#4c78a8" : "#f58518", "stroke-opacity": 0.4 }));
    for (const p of pts) {
      const chosen = p.batch === batch;
      const mark = svg("circle", { cx: lx(p.intensity), cy: ly(p.flops_per_s), r: chosen ? 7 : 3.5,
        fill: phase === "decode" ? "#4c78a8" : "#f58518", stroke: chosen ? "#000" : "none", "stroke-width": 2,
        class: "point", "data-phase": phase, "data-batch": p.batch, "data-intensity": p.intensity,
        "data-flops": p.flops_per_s, "data-chosen": chosen ? "1" : null });
      mark.append(svg("title", {}, `${p.label}: ${p.intensity.toPrecision(3)} FLOP/B, ${p.flops_per_s.toPrecision(3)} FLOP/s`));
      g.append(mark);
      if (chosen) g.append(svg("text", { x: lx(p.intensity) + 9, y: ly(p.flops_per_s) + 4 }, `${phase} b=${p.batch}`));
    }
  }
  g.append(svg("text", { x: L + 6, y: T + 14, fill: "#4c78a8" }, "● decode"));
  g.append(svg("text", { x: L + 70, y: T + 14, fill: "#f58518" }, "● prefill"));
  $("#roofline").replaceChildren(g);
}

function setupExplorer() {
  const range = $("#batch-range"), num = $("#batch");
  range.addEventListener("input", () => { num.value = range.value; explore(); });
  num.addEventListener("input", () => { if (+num.value >= 1) { range.value = Math.min(+num.value, 1024); explore(); } });
  for (const c of controls()) {
    if (c.closest("#deployment") || c.closest("#explore-form")) {
      if (c.id === "batch") continue;
      c.addEventListener(c.tagName === "SELECT" || c.type === "checkbox" ? "change" : "input", () => explore());
    }
  }
  $("#explore-export").addEventListener("click", () =>
    download("/api/explore/report", exploreBody(), "vazao-explorer-report.html").catch((e) => setStatus(e.message)));
  const drop = $("#deployment");
  drop.addEventListener("dragover", (ev) => ev.preventDefault());
  drop.addEventListener("drop", (ev) => { ev.preventDefault(); if (ev.dataTransfer.files[0]) upload(ev.dataTransfer.files[0]); });
  $("#model-file").addEventListener("change", (ev) => { if (ev.target.files[0]) upload(ev.target.files[0]); });
}

const GGUF_HEAD_BYTES = 60 * 2 ** 20;  // the header of any GGUF fits; the tensors are never sent
async function upload(file) {
  try {
    let data;
    if (file.name.toLowerCase().endsWith(".gguf")) {
      const head = await file.slice(0, GGUF_HEAD_BYTES).arrayBuffer();
      data = await call(`/api/model?name=${encodeURIComponent(file.name)}&size=${file.size}`, head, { binary: true });
    } else {
      const config = JSON.parse(await file.text());
      data = await call("/api/model", { name: file.name.replace(/\.json$/i, "").replace(/^config$/, "uploaded"), config });
    }
    state.upload = { arch: data.arch, weight_format: data.weight_format, weights_bytes: data.weights_bytes, origin: data.origin };
    const note = $("#model-upload");
    note.hidden = false;
    note.replaceChildren(`Using ${data.arch.name} from ${data.origin}${data.weight_format ? ` (${data.weight_format})` : ""}. `,
      el("button", { type: "button", id: "model-clear", text: "Back to the catalog" }));
    $("#model-clear").addEventListener("click", () => { state.upload = null; note.hidden = true; $("#model").disabled = false; explore(); });
    $("#model").disabled = true;
    explore();
  } catch (e) {
    setStatus(`${file.name}: ${e.message}`);
  }
}

// ---- reports of jobs and comparisons -----------------------------------------------------------------
function renderView(box, view) {
  const charts = el("div", { class: "charts" });
  box.replaceChildren(el("h2", { text: view.title }), el("p", { class: "headline", text: view.headline }), charts);
  view.charts.forEach((c, i) => charts.append(el("figure", { class: "chart", id: `${box.id}-chart-${i}`, "aria-label": c.title })));
  for (const t of view.tables) {
    box.append(el("h3", { text: t.title }));
    const table = el("table", {}, el("thead", {}, el("tr", {}, ...t.columns.map((c) => el("th", { text: c })))));
    const tb = el("tbody");
    for (const r of t.rows) tb.append(el("tr", {}, ...r.map((c) => el("td", { text: c }))));
    table.append(tb);
    box.append(el("div", { class: "scroll" }, table));
  }
  const embed = window.vegaEmbed;
  const pending = view.charts.map((c, i) => {
    const fig = $(`#${box.id}-chart-${i}`);
    if (!embed) { fig.dataset.error = "the Vega bundle did not load"; return Promise.resolve(); }
    return embed(fig, c.spec, { renderer: "svg", actions: false })
      .then(() => { fig.dataset.drawn = "1"; })
      .catch((err) => { fig.dataset.error = String(err); console.error(`chart ${c.title}: ${err}`); });
  });
  return Promise.all(pending).then(() => { box.dataset.chartsDone = String(view.charts.length); });
}

function jobBody(kind) {
  const v = (id) => $(`#${id}`).value.trim();
  if (kind === "simulation") {
    const body = { ...deploymentBody(), workload: v("sim-workload"), rates: v("sim-rates"), requests: v("sim-requests"),
                   slo: v("sim-slo") };
    if (state.simYaml) body.workload_yaml = state.simYaml;
    return body;
  }
  return { models: v("plan-models"), gpus: v("plan-gpus"), formats: v("plan-formats"), workload: v("plan-workload"),
           traffic: v("plan-traffic"), slo: v("plan-slo"), against_api: v("plan-api"), max_gpus: v("plan-max-gpus"),
           simulate_top: v("plan-top"), requests: v("plan-requests") };
}

function setupJob(kind, prefix, path) {
  const run = $(`#${prefix}-run`), cancel = $(`#${prefix}-cancel`), bar = $(`#${prefix}-progress`);
  const box = $(`#${prefix}-result`);
  run.addEventListener("click", async () => {
    saveState();
    box.dataset.state = "starting"; box.dataset.progress = "0/0"; delete box.dataset.job; delete box.dataset.chartsDone;
    box.replaceChildren(el("p", { text: `starting the ${kind}…` }));
    if (kind === "plan") $("#plan-command-box").hidden = true;
    let job;
    try { job = await call(path, jobBody(kind)); } catch (e) {
      box.dataset.state = "error"; box.replaceChildren(el("p", { class: "error", text: e.message })); return;
    }
    state.jobs[kind] = job.id;
    box.dataset.state = "running"; box.dataset.job = job.id;
    run.disabled = true; cancel.disabled = false; bar.value = 0;
    const finish = async () => {
      const s = await call(`/api/jobs/${job.id}`);
      run.disabled = false; cancel.disabled = true;
      if (s.state === "done") {
        bar.value = bar.max;
        if (s.result.view) await renderView(box, s.result.view);
        else box.replaceChildren(el("p", { class: "error", text: "nothing to show: every deployment was pruned" }));
        const exp = el("a", { href: `/api/jobs/${job.id}/report`, download: `vazao-${kind}-report.html`, id: `${prefix}-export`,
                              class: "button", text: "Export report" });
        box.prepend(exp);
        if (kind === "plan") showCommand(s.result);
      } else {
        box.replaceChildren(el("p", { class: s.state === "cancelled" ? "note" : "error",
                                      text: s.state === "cancelled" ? `${kind} cancelled` : s.error }));
      }
      box.dataset.state = s.state;
    };
    const es = new EventSource(`/api/jobs/${job.id}/events`);
    let ended = false;
    es.addEventListener("progress", (ev) => {
      const s = JSON.parse(ev.data);
      if (s.total) { bar.max = s.total; bar.value = s.done; }
      box.firstChild.textContent = `${kind} running: ${s.done} of ${s.total || "?"}`;
      box.dataset.progress = `${s.done}/${s.total}`;
    });
    es.addEventListener("end", () => { ended = true; es.close(); finish(); });
    es.onerror = () => {
      if (ended) return;
      es.close();
      const poll = async () => {
        const s = await call(`/api/jobs/${job.id}`);
        if (["done", "error", "cancelled"].includes(s.state)) finish(); else setTimeout(poll, 500);
      };
      poll();
    };
  });
  cancel.addEventListener("click", async () => {
    const id = state.jobs[kind];
    if (id) await call(`/api/jobs/${id}/cancel`, {}).catch((e) => setStatus(e.message));
  });
}

function showCommand(result) {
  const box = $("#plan-command-box");
  if (!result.command) { box.hidden = true; return; }
  $("#plan-command").textContent = result.command;
  $("#plan-copied").textContent = "";
  box.hidden = false;
}

async function copyCommand() {
  const text = $("#plan-command").textContent;
  let ok = false;
  try { await navigator.clipboard.writeText(text); ok = true; } catch (e) {
    const range = document.createRange();
    range.selectNodeContents($("#plan-command"));
    const sel = getSelection(); sel.removeAllRanges(); sel.addRange(range);
    ok = document.execCommand("copy");
  }
  $("#plan-copied").textContent = ok ? "copied" : "select the command and copy it (the browser refused)";
  $("#plan-copied").dataset.copied = ok ? "1" : "0";
}

// ---- compare ---------------------------------------------------------------------------------------
async function readJSON(input) {
  const f = input.files[0];
  if (!f) return undefined;
  try { return JSON.parse(await f.text()); } catch (e) { throw new Error(`${f.name}: not JSON (${e.message})`); }
}
function setupCompare() {
  const box = $("#cmp-result");
  const body = async () => {
    const measured = await readJSON($("#cmp-measured"));
    if (measured === undefined) throw new Error("choose a measured result file first");
    const predicted = await readJSON($("#cmp-predicted"));
    return predicted === undefined ? { measured } : { measured, predicted };
  };
  $("#cmp-run").addEventListener("click", async () => {
    box.dataset.state = "running";
    try {
      const view = await call("/api/compare", await body());
      await renderView(box, view);
      box.dataset.state = "done";
      $("#cmp-export").disabled = false;
    } catch (e) {
      box.dataset.state = "error"; box.replaceChildren(el("p", { class: "error", text: e.message }));
    }
  });
  $("#cmp-export").addEventListener("click", async () => {
    try { await download("/api/compare/report", await body(), "vazao-comparison-report.html"); } catch (e) { setStatus(e.message); }
  });
}

// ---- start ----------------------------------------------------------------------------------------
function fill(select, items, selected) {
  for (const it of items) {
    const [value, label] = typeof it === "string" ? [it, it] : it;
    select.append(el("option", { value, text: label }));
  }
  if (selected != null) select.value = selected;
}

async function start() {
  for (const f of document.querySelectorAll("form")) f.addEventListener("submit", (ev) => ev.preventDefault());
  setupTabs();
  const cat = state.catalog = await call("/api/catalog");
  fill($("#model"), cat.models.map((m) => m.id), "llama-3.1-70b");
  fill($("#gpu"), cat.gpus.map((g) => [g.id, `${g.id} (${g.name})`]), "h100-sxm");
  fill($("#format"), cat.formats);
  fill($("#kv"), cat.kv_formats);
  fill($("#engine"), cat.engines);
  fill($("#api-price"), cat.prices, "gpt-5-mini");
  fill($("#sim-workload"), cat.workloads, "chat");
  fill($("#plan-workload"), cat.workloads, "chat");
  fill($("#plan-api"), [["", "none"], ...cat.prices], "gpt-5-mini");
  loadState();
  setupExplorer();
  setupJob("simulation", "sim", "/api/simulate");
  setupJob("plan", "plan", "/api/plan");
  $("#plan-copy").addEventListener("click", copyCommand);
  $("#sim-yaml").addEventListener("change", async (ev) => {
    const f = ev.target.files[0];
    state.simYaml = f ? await f.text() : null;
  });
  for (const c of controls()) if (c.closest("#simulate-form") || c.closest("#plan-form")) c.addEventListener("change", saveState);
  setupCompare();
  $("#permalink").addEventListener("click", async () => {
    saveState();
    try { await navigator.clipboard.writeText(location.href); setStatus("permalink copied"); }
    catch (e) { setStatus(`permalink: ${location.href}`); }
  });
  document.body.dataset.ready = "1";
  await explore();
}

start().catch((e) => { setStatus(`vazao serve: ${e.message}`); console.error(e); });
