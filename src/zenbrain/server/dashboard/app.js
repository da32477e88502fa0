// The zenbrain dashboard: plain JavaScript over the REST API of the same server.
// Every request carries the API key (if the server has keys) as a bearer token; the key
// decides the user, so the user field is then read-only. Memory text is always inserted
// with textContent, never as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
const LAYER_COLOURS = {
  working: "#e07b39", short_term: "#e0b339", episodic: "#3f8fd2", semantic: "#4b9a5a",
  procedural: "#8a5cc2", core: "#c23b5a", cross_context: "#5c6f82",
};
const state = { auth: false, key: "", offset: 0, hasMore: false, charts: {}, cy: null };

// ------------------------------------------------------------------ requests

function scopeParams() {
  const p = new URLSearchParams();
  if (!state.auth) p.set("user_id", $("user").value.trim() || "default");
  p.set("agent_id", $("agent").value.trim() || "default");
  p.set("context", $("context").value.trim() || "default");
  return p;
}

async function api(method, path, { params = {}, body } = {}) {
  const q = scopeParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") q.set(k, v);
  const headers = { Accept: "application/json" };
  if (state.key) headers.Authorization = "Bearer " + state.key;
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const res = await fetch(path + "?" + q, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  const data = res.status === 204 ? null : await res.json().catch(() => null);
  if (!res.ok) {
    const err = new Error((data && (data.message || data.error)) || res.statusText);
    err.status = res.status;
    throw err;
  }
  return data;
}

function showError(err) {
  const box = $("error");
  box.textContent = err ? String(err.message || err) : "";
  box.hidden = !err;
}

function guarded(fn) {
  return async (...args) => {
    try {
      showError(null);
      await fn(...args);
    } catch (err) {
      showError(err);
    }
  };
}

// ------------------------------------------------------------------ helpers

function el(tag, props = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") node.className = v;
    else if (k === "text") node.textContent = v;
    else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
    else node.setAttribute(k, v);
  }
  for (const c of children) node.append(c);
  return node;
}

const fmtTime = (t) => (t === null || t === undefined ? "-" : new Date(t * 1000).toISOString().replace(".000Z", "Z").replace("T", " "));
const fmtNum = (x, d = 3) => (x === null || x === undefined ? "-" : Number(x).toFixed(d));
const short = (text, n = 160) => (text.length > n ? text.slice(0, n - 1) + "…" : text);

function layerTag(layer) {
  const tag = el("span", { class: "tag", text: layer });
  tag.style.background = (LAYER_COLOURS[layer] || "#999") + "33";
  return tag;
}

// ------------------------------------------------------------------ memories view

async function loadMemories() {
  const rows = $("memory-rows");
  const query = $("search").value.trim();
  const size = Number($("page-size").value);
  let items;
  if (query) {
    const layer = $("layer").value;
    const res = await api("POST", "/v1/recall", {
      body: { query, k: size, touch: false, include_archived: $("archived").checked, layers: layer ? [layer] : null },
    });
    items = res.hits.map((h) => ({ ...h, confidence: null, created_at: null, archived: false }));
    state.hasMore = false;
    $("page-info").textContent = `${items.length} best matches for “${short(query, 40)}”`;
  } else {
    const res = await api("GET", "/v1/memories", {
      params: { layer: $("layer").value, include_archived: $("archived").checked, limit: size, offset: state.offset },
    });
    items = res.memories;
    state.hasMore = res.has_more;
    $("page-info").textContent = items.length
      ? `${state.offset + 1}–${state.offset + items.length}${res.has_more ? " (more)" : ""}` : "no memories";
  }
  $("prev").disabled = query !== "" || state.offset === 0;
  $("next").disabled = !state.hasMore;
  rows.replaceChildren(...items.map((m) => el("tr", { "data-id": m.id, onclick: () => openMemory(m.id) },
    el("td", { class: "content" + (m.archived ? " archived" : ""), text: short(m.content) }),
    el("td", {}, layerTag(m.layer)),
    el("td", { text: m.kind }),
    el("td", { text: fmtNum(m.confidence, 2) }),
    el("td", { text: fmtTime(m.created_at) }),
  )));
}

// ------------------------------------------------------------------ recall view

async function runRecall(event) {
  event.preventDefault();
  const query = $("query").value.trim();
  if (!query) return;
  const res = await api("POST", "/v1/recall", {
    body: { query, k: Number($("k").value) || 5, touch: $("touch").checked },
  });
  $("recall-meta").textContent = `query type: ${res.query_type}; ${res.hits.length} hits` +
    (res.intentions.length ? `; fired intentions: ${res.intentions.map((i) => i.action).join(", ")}` : "");
  $("hits").replaceChildren(...res.hits.map((h) => {
    const why = el("table", { class: "why" });
    const maxAbs = Math.max(1e-9, ...Object.values(h.why).map((v) => Math.abs(v || 0)));
    for (const [name, value] of Object.entries(h.why)) {
      const bar = el("span", { class: "bar" });
      bar.style.width = `${Math.round(80 * Math.abs(value || 0) / maxAbs)}px`;
      why.append(el("tr", { class: "why-row" }, el("td", { text: name }), el("td", { text: fmtNum(value) }), el("td", {}, bar)));
    }
    return el("li", { class: "hit", "data-id": h.id },
      el("div", { class: "hit-head" }, el("span", { class: "score", text: fmtNum(h.score) }), layerTag(h.layer),
        el("a", { href: "#", text: short(h.content, 200), onclick: (e) => { e.preventDefault(); openMemory(h.id); } })),
      why);
  }));
}

// ------------------------------------------------------------------ one memory

async function openMemory(id) {
  const [curve, history, relations] = await Promise.all([
    api("GET", `/v1/memories/${encodeURIComponent(id)}/retrievability`, { params: { days: 60, points: 121 } }),
    api("GET", `/v1/memories/${encodeURIComponent(id)}/history`),
    api("GET", `/v1/memories/${encodeURIComponent(id)}/relations`),
  ]);
  const m = curve.memory;
  $("detail-title").textContent = short(m.content, 120);
  const fields = [["id", m.id], ["content", m.content], ["layer", m.layer], ["kind", m.kind],
    ["created", fmtTime(m.created_at)], ["event time", fmtTime(m.event_time)], ["last access", fmtTime(m.last_access)],
    ["accesses", m.access_count], ["importance", fmtNum(m.importance, 2)], ["strength", fmtNum(m.strength)],
    ["stability (days)", fmtNum(m.stability, 2)], ["version", m.version], ["archived", m.archived ? "yes" : "no"],
    ["metadata", JSON.stringify(m.metadata)]];
  $("detail-fields").replaceChildren(...fields.flatMap(([k, v]) => [el("dt", { text: k }), el("dd", { text: String(v) })]));

  const bar = el("span");
  bar.style.width = `${(100 * m.confidence).toFixed(1)}%`;
  $("confidence").replaceChildren(
    el("div", { class: "beta", title: "share of evidence for" }, bar),
    el("p", { class: "muted", text: `mean ${fmtNum(m.confidence)} from Beta(α=${fmtNum(m.conf_alpha, 2)}, ` +
      `β=${fmtNum(m.conf_beta, 2)}): ${fmtNum(m.conf_alpha - 1, 2)} observations for, ${fmtNum(m.conf_beta - 1, 2)} against` }));

  drawCurve(curve);
  $("relations").replaceChildren(...(relations.relations.length ? relations.relations.map((e) => {
    const other = e.src === id ? e.dst : e.src;
    const arrow = e.src === id ? `—${e.relation}→ ` : `←${e.relation}— `;
    return el("li", {}, arrow, el("a", { href: "#", text: other, onclick: (ev) => { ev.preventDefault(); openMemory(other); } }),
      ` (weight ${fmtNum(e.weight, 2)})`);
  }) : [el("li", { class: "muted", text: "none" })]));
  $("history").replaceChildren(...history.history.map((h) =>
    el("li", {}, el("b", { text: h.action }), ` ${fmtTime(h.at)} `, el("span", { class: "muted", text: short(JSON.stringify(h.detail), 200) }))));
  const dialog = $("detail");
  if (!dialog.open) dialog.showModal();
}

function drawCurve(curve) {
  const box = $("curve");
  if (state.charts.curve) state.charts.curve.destroy();
  box.replaceChildren();
  const xs = curve.points.map((p) => p.days);
  const data = [xs, curve.points.map((p) => p.retrievability), xs.map(() => curve.review_threshold),
    xs.map(() => curve.archive_threshold)];
  state.charts.curve = new uPlot({
    width: Math.min(760, box.clientWidth || 760), height: 220,
    scales: { x: { time: false }, y: { range: [0, 1] } },
    axes: [{ label: "days from now" }, { label: "recall probability" }],
    series: [{ label: "days" }, { label: "retrievability", stroke: "#2f6fbf", width: 2 },
      { label: "review below", stroke: "#e0b339", dash: [4, 4] }, { label: "archive below", stroke: "#b3261e", dash: [4, 4] }],
  }, data, box);
  const next = curve.next_review === null ? "none scheduled" : `${fmtTime(curve.next_review)} ` +
    `(in ${fmtNum((curve.next_review - curve.now) / 86400, 1)} days)`;
  $("curve-note").textContent = `Computed by the engine (${curve.curves.join(" + ") || "no forgetting mechanism on"}) ` +
    `if the memory is not used again. Next review: ${next}.`;
}

// ------------------------------------------------------------------ graph

async function loadGraph() {
  const g = await api("GET", "/v1/graph", { params: { limit: 300, include_archived: $("graph-archived").checked } });
  $("graph-info").textContent = `${g.nodes.length} memories, ${g.edges.length} relations` + (g.truncated ? " (first 300 memories)" : "");
  const elements = [
    ...g.nodes.map((n) => ({ data: { id: n.id, label: short(n.content, 40), layer: n.layer } })),
    ...g.edges.map((e, i) => ({ data: { id: `e${i}`, source: e.src, target: e.dst, label: e.relation, weight: e.weight } })),
  ];
  if (state.cy) state.cy.destroy();
  state.cy = cytoscape({
    container: $("graph"), elements,
    style: [
      { selector: "node", style: { label: "data(label)", "font-size": 9, "text-wrap": "ellipsis", "text-max-width": 120,
        "background-color": (n) => LAYER_COLOURS[n.data("layer")] || "#999", width: 14, height: 14 } },
      { selector: "edge", style: { width: (e) => 1 + Math.min(4, e.data("weight")), "curve-style": "bezier",
        "target-arrow-shape": "triangle", "line-color": "#b8c2cc", "target-arrow-color": "#b8c2cc",
        label: "data(label)", "font-size": 7, color: "#6b7683" } },
    ],
    layout: { name: g.nodes.length > 150 ? "grid" : "cose", animate: false, randomize: false },
  });
  state.cy.on("tap", "node", guarded((evt) => openMemory(evt.target.id())));
}

// ------------------------------------------------------------------ lifecycle

async function loadLifecycle() {
  const [activity, archive] = await Promise.all([api("GET", "/v1/activity", { params: { limit: 20 } }),
    api("GET", "/v1/archive", { params: { limit: 100 } })]);
  $("reports").replaceChildren(...(activity.reports.length ? activity.reports.map((r) =>
    el("div", { class: "report" }, el("h4", { text: `${r.operation} at ${fmtTime(r.at)}` }),
      el("ul", {}, ...r.summary.map((line) => el("li", { text: line })))))
    : [el("p", { class: "muted", text: "No sleep or decay has run through this server yet for this scope." })]));
  $("archive-rows").replaceChildren(...(archive.memories.length ? archive.memories.map((m) =>
    el("tr", { "data-id": m.id },
      el("td", { class: "content", text: short(m.content) }), el("td", {}, layerTag(m.layer)),
      el("td", { text: fmtTime(m.last_access) }),
      el("td", {}, el("button", { type: "button", class: "restore", text: "Restore",
        onclick: guarded(async (ev) => { ev.stopPropagation(); await api("POST", `/v1/memories/${encodeURIComponent(m.id)}/restore`); await loadLifecycle(); }) }))))
    : [el("tr", {}, el("td", { class: "muted", colspan: "4", text: "The archive is empty." }))]));
}

async function runOperation(name) {
  await api("POST", `/v1/${name}`);
  await loadLifecycle();
}

// ------------------------------------------------------------------ statistics

async function loadStats() {
  const [stats, series] = await Promise.all([api("GET", "/v1/stats"), api("GET", "/v1/stats/history", { params: { limit: 500 } })]);
  const cards = [["memories", stats.memories], ["archived", stats.archived], ["relations", stats.edges],
    ...Object.entries(stats.by_layer).sort()];
  $("stat-cards").replaceChildren(...cards.map(([k, v]) => el("div", { class: "card" }, el("b", { text: String(v) }), k)));
  const snaps = series.snapshots;
  const box = $("stats-chart");
  if (state.charts.stats) state.charts.stats.destroy();
  box.replaceChildren();
  $("stats-note").textContent = `${snaps.length} snapshots: one after every lifecycle operation, and at most one an hour while the dashboard reads statistics.`;
  if (!snaps.length) return;
  const data = [snaps.map((s) => s.at), snaps.map((s) => s.memories), snaps.map((s) => s.archived), snaps.map((s) => s.edges)];
  state.charts.stats = new uPlot({
    width: Math.min(1000, box.clientWidth || 1000), height: 260,
    series: [{}, { label: "memories", stroke: "#2f6fbf", width: 2 }, { label: "archived", stroke: "#b3261e", width: 2 },
      { label: "relations", stroke: "#4b9a5a", width: 2 }],
  }, data, box);
}

// ------------------------------------------------------------------ navigation and start

const loaders = { memories: loadMemories, recall: async () => {}, graph: loadGraph, lifecycle: loadLifecycle, stats: loadStats };
let current = "memories";

async function show(view) {
  current = view;
  for (const b of document.querySelectorAll("nav button")) b.classList.toggle("active", b.dataset.view === view);
  for (const s of document.querySelectorAll(".view")) s.hidden = s.id !== `view-${view}`;
  await loaders[view]();
}

async function connect() {
  if (state.auth) {
    state.key = $("key").value.trim();
    sessionStorage.setItem("zenbrain-key", state.key);
    if (!state.key) throw new Error("this server needs an API key: enter it above");
  }
  const who = await api("GET", "/v1/scope");
  if (state.auth) $("user").value = who.user_id;
  $("who").textContent = `acting as user ${who.user_id}, agent ${who.agent_id}, context ${who.context}`;
  state.offset = 0;
  await show(current);
}

async function start() {
  const health = await (await fetch("/health")).json();
  state.auth = health.auth;
  $("key-field").hidden = !state.auth;
  $("user").readOnly = state.auth;
  $("user").title = state.auth ? "the API key decides the user" : "";
  if (state.auth) {
    $("key").value = sessionStorage.getItem("zenbrain-key") || "";
    if (!$("key").value) { showError(new Error("this server needs an API key: enter it above")); return; }
  }
  await connect();
}

$("connect").addEventListener("submit", guarded(async (e) => { e.preventDefault(); await connect(); }));
$("memory-filters").addEventListener("submit", guarded(async (e) => { e.preventDefault(); state.offset = 0; await loadMemories(); }));
$("prev").addEventListener("click", guarded(async () => { state.offset = Math.max(0, state.offset - Number($("page-size").value)); await loadMemories(); }));
$("next").addEventListener("click", guarded(async () => { state.offset += Number($("page-size").value); await loadMemories(); }));
$("recall-form").addEventListener("submit", guarded(runRecall));
$("graph-refresh").addEventListener("click", guarded(loadGraph));
$("run-sleep").addEventListener("click", guarded(() => runOperation("sleep")));
$("run-decay").addEventListener("click", guarded(() => runOperation("decay")));
$("run-consolidate").addEventListener("click", guarded(() => runOperation("consolidate")));
for (const b of document.querySelectorAll("nav button")) b.addEventListener("click", guarded(() => show(b.dataset.view)));
guarded(start)();
