/* connwatch dashboard: local times, range picker, charts from /api/v1, zoom, refresh, test now.
   No framework, no CDN; Plotly.js is served by connwatch itself. */
"use strict";

const CW = {};

CW.pad = (n, w = 2) => String(n).padStart(w, "0");
/* "YYYY-MM-DD HH:MM:SS" in the viewer's time zone (Plotly draws such strings as given). */
CW.local = (iso) => {
  const d = new Date(iso);
  return `${d.getFullYear()}-${CW.pad(d.getMonth() + 1)}-${CW.pad(d.getDate())} ` +
    `${CW.pad(d.getHours())}:${CW.pad(d.getMinutes())}:${CW.pad(d.getSeconds())}`;
};
CW.utc = (iso) => new Date(iso).toISOString().replace("T", " ").replace(/\.\d+Z$/, " UTC");
/* A local "YYYY-MM-DD HH:MM:SS(.fff)" (from Plotly) back to an ISO instant in UTC. */
CW.fromLocal = (s) => {
  const m = String(s).match(/^(\d{4})-(\d\d)-(\d\d)(?:[ T](\d\d):(\d\d)(?::(\d\d)(?:\.(\d+))?)?)?/);
  if (!m) return null;
  const ms = m[7] ? Number((m[7] + "00").slice(0, 3)) : 0;
  const d = new Date(+m[1], +m[2] - 1, +m[3], +(m[4] || 0), +(m[5] || 0), +(m[6] || 0), ms);
  return d.toISOString().replace(/\.\d+Z$/, "Z");
};

CW.localizeTimes = (root = document) => {
  root.querySelectorAll("time[datetime]").forEach((el) => {
    const iso = el.getAttribute("datetime");
    el.textContent = CW.local(iso);
    el.title = CW.utc(iso);
  });
  const tz = document.getElementById("tzname");
  if (tz) tz.textContent = Intl.DateTimeFormat().resolvedOptions().timeZone || "local";
};

/* ---- the time window, kept in the URL ---- */
CW.windowParams = () => {
  const q = new URLSearchParams(location.search);
  const out = new URLSearchParams();
  for (const k of ["range", "from", "to"]) if (q.get(k)) out.set(k, q.get(k));
  return out;
};
CW.setWindow = (from, to) => {
  const q = new URLSearchParams(location.search);
  q.delete("range");
  q.set("from", from);
  q.set("to", to);
  history.replaceState(null, "", `${location.pathname}?${q}`);
  const form = document.querySelector("[data-range-form]");
  if (form) {
    form.querySelector("[name=from]").value = CW.local(from).replace(" ", "T");
    form.querySelector("[name=to]").value = CW.local(to).replace(" ", "T");
    form.querySelectorAll("[aria-current]").forEach((a) => a.removeAttribute("aria-current"));
  }
};

CW.initRangeForm = () => {
  const form = document.querySelector("[data-range-form]");
  if (!form) return;
  // The server fills the inputs in UTC; show them in local time, send them back as UTC.
  for (const name of ["from", "to"]) {
    const el = form.querySelector(`[name=${name}]`);
    if (el && el.dataset.utc) el.value = CW.local(el.dataset.utc).replace(" ", "T");
  }
  form.addEventListener("submit", (ev) => {
    ev.preventDefault();
    const q = new URLSearchParams(new FormData(form));
    for (const name of ["from", "to"]) {
      const v = q.get(name);
      if (v) q.set(name, CW.fromLocal(v.replace("T", " ")));
    }
    q.delete("range");
    location.href = `${form.getAttribute("action")}?${q}`;
  });
};

/* ---- charts ---- */
CW.layoutBase = (extra) => Object.assign({
  margin: { l: 60, r: 20, t: 30, b: 60 },
  legend: { orientation: "h", y: -0.28 },
  hovermode: "closest",
  font: { family: "system-ui, sans-serif", size: 12 },
  paper_bgcolor: "#fff", plot_bgcolor: "#fff",
}, extra || {});
CW.config = { responsive: true, displaylogo: false };
CW.rgba = (hex, a) => {
  const n = parseInt(hex.slice(1), 16);
  return `rgba(${(n >> 16) & 255},${(n >> 8) & 255},${n & 255},${a})`;
};
CW.builders = {};

CW.builders.breakdown = (data) => ({
  traces: data.modes.map((m) => ({
    type: "bar", name: m.name, x: m.groups, y: m.p50, marker: { color: m.color },
    error_y: { type: "data", symmetric: false, array: m.p95.map((v, i) => v - m.p50[i]), arrayminus: m.p50.map(() => 0) },
    text: m.n.map((n) => `n=${n}`), hovertemplate: "%{x}: p50 %{y:.2f} ms (%{text})<extra>" + m.name + "</extra>",
  })).concat(data.modes.filter((m) => (m.failed || []).some((f) => f > 0)).map((m) => {
    /* failed samples of each instance, above its bars: an instance that went down shows
       as its errors */
    const top = Math.max(1, ...data.modes.flatMap((o) => o.p95.concat(o.p50)).filter((v) => v !== null));
    return {
      type: "scatter", mode: "markers+text", name: `${m.name} failed`, x: m.groups,
      y: m.groups.map(() => top * 1.12), text: m.failed.map((f) => (f ? `${f} failed` : "")),
      textposition: "middle right", textfont: { color: "#B00020" },
      marker: { symbol: "x-thin-open", size: m.failed.map((f) => (f ? 12 : 0)), line: { width: 2, color: "#B00020" } },
      hovertemplate: "%{x}: %{text}<extra>" + m.name + "</extra>",
    };
  })),
  layout: CW.layoutBase({
    barmode: "group", xaxis: { title: { text: data.by } },
    yaxis: { title: { text: `${data.phase} p50 ms (bar to p95)` }, rangemode: "tozero" },
  }),
  empty: data.modes.every((m) => m.groups.length === 0),
});

/* Box from the store's histogram: box p25-p75, line p50, whiskers p5 and p95, dashed mean. */
CW.builders.distribution = (data) => {
  const modes = data.modes.filter((m) => m.box);
  return {
    traces: modes.map((m) => ({
      type: "box", name: m.name, x: [m.name], marker: { color: m.color }, line: { color: m.color },
      fillcolor: CW.rgba(m.color, 0.3), boxmean: true,
      q1: [m.box.p25], median: [m.box.p50], q3: [m.box.p75],
      lowerfence: [m.box.p5], upperfence: [m.box.p95], mean: [m.box.mean ?? m.box.p50],
    })),
    layout: CW.layoutBase({
      yaxis: { title: { text: `${data.phase} (ms)` }, rangemode: "tozero" },
      showlegend: false,
    }),
    empty: modes.length === 0,
  };
};

/* ECDF: the x axis ends at the largest p99.5 of the modes, so one outlier does not
   squeeze every curve to the left; the cut and the slowest sample are said. */
CW.builders.ecdf = (data) => {
  const cut = Math.max(0, ...data.modes.map((m) => {
    const i = m.ecdf_y.findIndex((y) => y >= 0.995);
    return i < 0 ? 0 : m.ecdf_x[i];
  }));
  const slowest = Math.max(0, ...data.modes.map((m) => (m.ecdf_x.length ? m.ecdf_x[m.ecdf_x.length - 1] : 0)));
  const clipped = cut > 0 && slowest > cut * 1.05;
  return {
    traces: data.modes.map((m) => ({
      type: "scatter", mode: "lines", name: m.name,
      x: m.ecdf_x.length ? [m.ecdf_x[0], ...m.ecdf_x] : [], y: m.ecdf_y.length ? [0, ...m.ecdf_y] : [],
      line: { color: m.color, dash: m.dash, shape: "hv", width: 2 },
      hovertemplate: "%{x:.2f} ms: %{y:.1%}<extra>" + m.name + "</extra>",
    })),
    layout: CW.layoutBase({
      xaxis: Object.assign({ title: { text: `${data.phase} (ms)` } },
        clipped ? { range: [0, cut * 1.05] } : {}),
      yaxis: { title: { text: "share of samples at or below" }, tickformat: ".0%", range: [0, 1.02] },
      annotations: clipped ? [{ xref: "paper", yref: "paper", x: 1, y: 0.02, xanchor: "right",
        showarrow: false, font: { size: 11, color: "#595959" }, name: "cut",
        text: `axis cut at p99.5 (${cut.toFixed(1)} ms); the slowest sample took ${slowest.toFixed(1)} ms` }] : [],
    }),
    empty: data.modes.every((m) => m.ecdf_x.length === 0),
  };
};

CW.builders.daily = (data) => ({
  traces: data.modes.map((m) => ({
    type: "scatter", mode: "lines+markers", name: m.name, x: m.days, y: m.p50,
    line: { color: m.color, dash: m.dash }, marker: { symbol: m.symbol, color: m.color },
    hovertemplate: "%{x}: p50 %{y:.2f} ms<extra>" + m.name + "</extra>",
  })),
  layout: CW.layoutBase({
    xaxis: { title: { text: "day (UTC)" },
      type: Math.max(0, ...data.modes.map((m) => m.days.length)) < 3 ? "category" : "date" },
    yaxis: { title: { text: `${data.phase} p50 per day (ms)` }, rangemode: "tozero" },
  }),
  empty: data.modes.every((m) => m.days.length === 0),
});

CW.builders.sweep = (data) => ({
  traces: data.modes.map((m) => ({
    type: "scatter", mode: "lines+markers", name: m.name, x: m.levels, y: m.p50,
    line: { color: m.color, dash: m.dash }, marker: { symbol: m.symbol, color: m.color, size: 8 },
    error_y: { type: "data", symmetric: false, array: m.p90.map((v, i) => v - m.p50[i]), arrayminus: m.p50.map(() => 0) },
    hovertemplate: "%{x} parallel: p50 %{y:.2f} ms<extra>" + m.name + "</extra>",
  })),
  layout: CW.layoutBase({
    xaxis: { title: { text: "concurrent logons" }, type: "log" },
    yaxis: { title: { text: "logon p50 ms (bar to p90)" }, rangemode: "tozero" },
  }),
  empty: data.modes.every((m) => m.levels.length === 0),
});

/* One fetch per distinct URL per redraw (several charts may share one API answer);
   a page may embed the first answer (data-inline = id of a JSON script) to save a call. */
CW.fetchCache = new Map();
CW.getJSON = (url) => {
  const key = url.toString();
  if (!CW.fetchCache.has(key)) {
    CW.fetchCache.set(key, fetch(url).then(async (res) => {
      if (!res.ok) throw new Error(`HTTP ${res.status}: ${(await res.text()).slice(0, 200)}`);
      return res.json();
    }));
  }
  return CW.fetchCache.get(key);
};

CW.drawChart = async (el, zoomed = false) => {
  const url = new URL(el.dataset.src, location.origin);
  if (el.hasAttribute("data-windowed")) CW.windowParams().forEach((v, k) => url.searchParams.set(k, v));
  el.setAttribute("aria-busy", "true");
  let data;
  const inline = !zoomed && el.dataset.inline && document.getElementById(el.dataset.inline);
  try {
    data = inline ? JSON.parse(inline.textContent) : await CW.getJSON(url);
  } catch (err) {
    el.dataset.state = "error";
    el.textContent = `could not load ${url.pathname}: ${err.message}`;
    el.removeAttribute("aria-busy");
    return;
  }
  const fig = CW.builders[el.dataset.chart](data);
  if (el.dataset.events && !fig.empty) await CW.addEvents(el, fig, data);
  el.dataset.state = fig.empty ? "empty" : "ready";
  el.dataset.points = String(fig.traces.reduce((a, t) => a + ((t.y || t.x || []).length), 0));
  el.dataset.resolution = data.resolution || "";
  if (fig.layoutKind) el.dataset.layout = fig.layoutKind;
  if (fig.empty) {
    if (window.Plotly) Plotly.purge(el);
    el.innerHTML = "";
    delete el.dataset.zoomBound; /* purge dropped the listener: bind it again when drawn */
  } else if (window.Plotly) {
    /* a figure with its own height (small multiples) keeps it when the window is resized:
       Plotly's responsive resize otherwise fits it to the element's CSS height */
    el.style.height = fig.layout.height ? `${fig.layout.height}px` : "";
    await Plotly.react(el, fig.traces, fig.layout, CW.config);
  }
  el.removeAttribute("aria-busy");
  /* an empty chart was never a Plotly figure: it has no events to listen to */
  if (el.hasAttribute("data-zoomable") && !el.dataset.zoomBound && typeof el.on === "function") {
    el.dataset.zoomBound = "1";
    el.on("plotly_relayout", (ev) => {
      const a = ev["xaxis.range[0]"], b = ev["xaxis.range[1]"];
      if (a !== undefined && b !== undefined) {
        CW.setWindow(CW.fromLocal(a), CW.fromLocal(b));
        CW.drawAll(true, true);
      }
    });
  }
};

/* Annotations, alert firings/resolutions and maintenance windows on a time chart
   (data-events = the target's /events API): a dashed line per event, a shaded span per
   maintenance window (and per annotation with an end). A failed fetch only leaves them out. */
CW.addEvents = async (el, fig, data) => {
  const url = new URL(el.dataset.events, location.origin);
  CW.windowParams().forEach((v, k) => url.searchParams.set(k, v));
  let ev;
  try { ev = await CW.getJSON(url); } catch (err) { ev = {}; }
  const layout = fig.layout;
  layout.shapes = [...(layout.shapes || [])];
  layout.annotations = [...(layout.annotations || [])];
  const lo = Date.parse(data.window_start || data.start), hi = Date.parse(data.window_end || data.end);
  const at = (ms) => CW.local(new Date(ms).toISOString());
  for (const w of ev.maintenance || []) {
    const a = Math.max(Date.parse(w.start), lo), b = Math.min(Date.parse(w.end), hi);
    if (b <= a) continue;
    layout.shapes.push({ type: "rect", xref: "x", yref: "paper", y0: 0, y1: 1, layer: "below",
      x0: at(a), x1: at(b), fillcolor: "rgba(86,180,233,0.15)", line: { width: 0 }, name: "maintenance" });
    layout.annotations.push({ xref: "x", yref: "paper", x: at(a),
      y: 0, xanchor: "left", yanchor: "bottom", showarrow: false, text: `maintenance: ${w.name}`,
      font: { size: 10, color: "#0b5e8a" }, name: "maintenance" });
  }
  const events = (ev.events || []).filter((e) => {
    const t = Date.parse(e.at), u = e.ends_at ? Date.parse(e.ends_at) : t;
    return u >= lo && t <= hi;
  }).slice(-60);
  for (const e of events) {
    if (!e.ends_at) continue;
    const a = Math.max(Date.parse(e.at), lo), b = Math.min(Date.parse(e.ends_at), hi);
    if (b > a) layout.shapes.push({ type: "rect", xref: "x", yref: "paper", y0: 0, y1: 1,
      layer: "below", x0: at(a), x1: at(b), fillcolor: "rgba(85,85,85,0.08)", line: { width: 0 },
      name: "event-span" });
  }
  CW.placeEvents(el, layout, events.map((e) => ({
    ms: Math.max(Date.parse(e.at), lo), kind: e.kind,
    label: e.kind === "annotation" ? e.text : e.rule || e.text,
    hover: `${CW.utc(e.at)} ${e.kind}: ${e.text}${e.author ? ` (${e.author})` : ""}`,
  })), lo, hi);
  el.dataset.eventsDrawn = String(events.length + (ev.maintenance || []).length);
};

/* Event marks that stay legible however many there are: on each event's line, a glyph at
   the plot's top edge (▲ firing, ▼ resolved, ◆ annotation; marks that would touch merge
   into one with their count) with the whole text on hover;
   its label (cut to 28 characters, or 12, hover for the rest) goes in the first of
   CW.eventRows rows above the plot where it overlaps nothing already there (other labels,
   the chart's own notes and panel titles); where no row has room the glyph alone is left. */
CW.eventRows = 3;
CW.eventRowPx = 17; /* a row: a 12 px panel title or a 10 px label with its box */
CW.textPx = (s, size) => String(s).replace(/<[^>]*>/g, "").length * size * 0.62;
CW.placeEvents = (el, layout, items, lo, hi) => {
  const colour = { annotation: "#555555", firing: "#b00020", resolved: "#007a5a" };
  const glyph = { annotation: "◆", firing: "▲", resolved: "▼" };
  const at = (ms) => CW.local(new Date(ms).toISOString());
  const m = layout.margin || { l: 60, r: 20, t: 30 };
  const plotW = Math.max(100, (el.clientWidth || 800) - m.l - m.r);
  const px = (ms) => ((ms - lo) / Math.max(1, hi - lo)) * plotW;
  const rows = Array.from({ length: CW.eventRows }, () => []);
  const free = (r, a, b) => rows[r].every(([c, d]) => b + 6 <= c || a >= d + 6);
  /* what already sits on the plot's top edge (panel titles, the chart's own notes) goes
     first: a panel title in the first row, a note in the first row with room, cut to the
     plot's width (hover for the rest) */
  let used = 0;
  const top = layout.annotations.filter((a) => a.y === 1 && a.yanchor === "bottom"
    && (a.yref === "paper" || a.yref === "y domain"));
  top.sort((a, b) => (String(b.name).startsWith("panel-") ? 1 : 0) - (String(a.name).startsWith("panel-") ? 1 : 0));
  for (const a of top) {
    const size = (a.font && a.font.size) || 12;
    const plain = String(a.text).replace(/<[^>]*>/g, "");
    if (!String(a.name).startsWith("panel-") && CW.textPx(plain, size) > plotW - 8) {
      a.hovertext = a.hovertext || plain;
      a.text = `${plain.slice(0, Math.max(8, Math.floor((plotW - 8) / (size * 0.62)) - 1))}…`;
    }
    const x = a.xref === "paper" ? a.x * plotW : px(Date.parse(String(a.x).replace(" ", "T")));
    const w = CW.textPx(a.text, size);
    const x0 = a.xanchor === "right" ? x - w : a.xanchor === "center" ? x - w / 2 : x;
    let r = String(a.name).startsWith("panel-") ? 0 : rows.findIndex((_, k) => free(k, x0, x0 + w));
    if (r < 0) r = 0;
    rows[r].push([x0, x0 + w]);
    a.yshift = (a.yshift || 0) + CW.eventRowPx * r;
    used = Math.max(used, r + 1);
  }
  let last = null;
  items.sort((a, b) => a.ms - b.ms).forEach((it) => {
    const x = at(it.ms), c = colour[it.kind] || "#555555", p = px(it.ms);
    layout.shapes.push({ type: "line", xref: "x", yref: "paper", x0: x, x1: x, y0: 0, y1: 1,
      line: { color: c, width: 1, dash: it.kind === "annotation" ? "dot" : "dash" },
      name: `event-${it.kind}` });
    /* marks that would touch are one mark: "◆3", the three texts on hover */
    if (last && p - last.p < CW.textPx(last.a.text, 11) + 10) {
      last.n += 1;
      last.a.text = `${glyph[last.kind] || "•"}${last.n}`;
      last.a.hovertext += `<br>${it.hover}`;
    } else {
      const a = { xref: "x", yref: "paper", x, y: 1, xanchor: "center", yanchor: "top",
        showarrow: false, text: glyph[it.kind] || "•", font: { size: 11, color: c },
        hovertext: it.hover, name: `event-${it.kind}` };
      layout.annotations.push(a);
      last = { a, p, n: 1, kind: it.kind };
    }
    for (const max of [28, 12]) {
      const text = it.label.length > max ? `${it.label.slice(0, max - 1)}…` : it.label;
      const w = CW.textPx(text, 10);
      const right = p + w > plotW + m.r;
      const [a, b] = right ? [p - w, p] : [p, p + w];
      const r = rows.findIndex((_, k) => free(k, a, b));
      if (r < 0) continue;
      rows[r].push([a, b]);
      used = Math.max(used, r + 1);
      layout.annotations.push({ xref: "x", yref: "paper", x, y: 1, yanchor: "bottom",
        xanchor: right ? "right" : "left", yshift: CW.eventRowPx * r, showarrow: false,
        font: { size: 10, color: c }, text, hovertext: it.hover, name: `event-label-${it.kind}` });
      break;
    }
  });
  if (used) layout.margin = Object.assign({}, m, { t: Math.max(m.t || 30, 18 + CW.eventRowPx * used) });
};

CW.drawAll = (windowedOnly = false, zoomed = false) => {
  CW.fetchCache.clear();
  return Promise.all(
  [...document.querySelectorAll("[data-chart]")]
    .filter((el) => !windowedOnly || el.hasAttribute("data-windowed"))
    .map((el) => CW.drawChart(el, zoomed).catch((err) => {
      el.dataset.state = "error";
      el.textContent = `chart failed: ${err}`;
    })),
  );
};

/* ---- refresh: pages showing "now" fetch themselves again (the overview, spikes and
   agents swap their [data-refresh] block; the target page redraws its charts when its
   window ends now). A button pauses it; the pause is kept for the tab (sessionStorage). */
CW.refreshPaused = () => sessionStorage.getItem("cw-refresh-paused") === "1";
CW.addPauseButton = (anchor, every) => {
  const btn = document.createElement("button");
  btn.type = "button";
  btn.className = "secondary refresh-toggle";
  btn.dataset.refreshToggle = "";
  const label = () => {
    const paused = CW.refreshPaused();
    btn.textContent = paused ? "Resume auto-refresh" : `Pause auto-refresh (every ${every} s)`;
    btn.setAttribute("aria-pressed", paused ? "true" : "false");
  };
  btn.addEventListener("click", () => {
    sessionStorage.setItem("cw-refresh-paused", CW.refreshPaused() ? "0" : "1");
    label();
  });
  label();
  anchor.before(btn);
};
CW.initRefresh = () => {
  const el = document.querySelector("[data-refresh]");
  const live = !new URLSearchParams(location.search).get("to");  // a window that ends now
  const charts = document.querySelector("[data-chart][data-windowed]") && live;
  if (!el && !charts) return;
  const every = el ? Number(el.dataset.refresh) : 60;
  CW.addPauseButton(el || document.querySelector("[data-chart]"), every);
  setInterval(async () => {
    if (CW.refreshPaused() || document.hidden) return;
    if (!el) {  // zoomed or picked a past window since: nothing new to show
      const stillLive = !new URLSearchParams(location.search).get("to");
      if (stillLive && !document.querySelector("[aria-busy]")) CW.drawAll(true);
      return;
    }
    try {
      const res = await fetch(location.href, { headers: { Accept: "text/html" } });
      if (!res.ok) return;
      const doc = new DOMParser().parseFromString(await res.text(), "text/html");
      const fresh = doc.getElementById(el.id);
      if (fresh && !el.contains(document.activeElement)) {
        el.innerHTML = fresh.innerHTML;
        CW.localizeTimes(el);
        el.dataset.refreshed = String(Number(el.dataset.refreshed || 0) + 1);
      }
    } catch (_) { /* keep the last view */ }
  }, every * 1000);
};

/* ---- test now: poll the probe request until the agent answers ---- */
CW.initTestNow = () => {
  const out = document.querySelector("[data-probe-request]");
  if (!out) return;
  const id = out.dataset.probeRequest;
  const started = Date.now();
  const poll = async () => {
    const res = await fetch(`/api/v1/probe-requests/${id}`);
    if (res.ok) {
      const r = await res.json();
      out.dataset.status = r.status;
      if (r.status === "done" || r.status === "error") {
        CW.renderProbeResult(out, r);
        return;
      }
      out.querySelector("[data-msg]").textContent =
        `waiting for an agent to run it (${r.status}, ${Math.round((Date.now() - started) / 1000)} s)`;
    }
    if (Date.now() - started < 120000) setTimeout(poll, 700);
    else out.querySelector("[data-msg]").textContent = "no agent answered within 2 minutes";
  };
  poll();
};
CW.renderProbeResult = (out, r) => {
  const msg = out.querySelector("[data-msg]");
  const res = r.result || {};
  if (r.status === "error" || (res.status && res.status !== "ok")) {
    msg.textContent = r.status === "error"
      ? `could not run: ${r.error || "unknown reason"}`
      : `${res.status}: ${res.error_code || ""} in ${res.error_phase || "?"}: ${res.error_message || ""}`
        + (r.explanation ? ` — ${r.explanation}` : "");
    msg.className = "flash error";
  } else {
    const rts = res.round_trips === null || res.round_trips === undefined ? "" : `, ${res.round_trips} round trips`;
    msg.textContent = `ok${rts}, run by ${r.agent || "an agent"}`;
    msg.className = "flash ok";
  }
  const tbody = out.querySelector("tbody");
  tbody.innerHTML = "";
  const add = (k, v) => {
    const tr = document.createElement("tr");
    const th = document.createElement("th"); th.textContent = k;
    const td = document.createElement("td"); td.className = "num"; td.textContent = v;
    tr.append(th, td); tbody.append(tr);
  };
  for (const p of ["logon", "ping", "query", "logoff", "total"]) {
    const v = res[`${p}_ns`];
    if (v !== null && v !== undefined) add(p, `${(v / 1e6).toFixed(2)} ms`);
  }
  /* the logon's round trips in wire order (the API orders them), numbered */
  (r.logon_round_trips || []).forEach((rt, i) => add(`logon ${i + 1}. ${rt.phase}`, `${rt.ms.toFixed(2)} ms`));
  if (res.round_trips !== undefined && res.round_trips !== null) add("round trips", res.round_trips);
  for (const k of ["sid", "serial", "instance", "server_type"]) if (res[k] !== undefined && res[k] !== null) add(k, res[k]);
  out.hidden = false;
};

/* mode checkboxes -> one comma-separated "modes" parameter */
CW.initModeFilter = () => {
  const field = document.querySelector("[data-modes-field]");
  if (!field) return;
  const form = field.form;
  form.addEventListener("submit", () => {
    const boxes = [...form.querySelectorAll("[data-mode]")];
    field.value = boxes.filter((b) => b.checked).map((b) => b.value).join(",");
    boxes.forEach((b) => (b.disabled = true));
    const q = CW.windowParams();
    form.querySelectorAll("input[type=hidden]:not([data-modes-field])").forEach((h) => h.remove());
    q.forEach((v, k) => {
      const h = document.createElement("input");
      h.type = "hidden"; h.name = k; h.value = v; form.append(h);
    });
  });
};

/* the Add-target form's kind select reloads the form for that kind (no inline handler: CSP) */
CW.initKindSwitch = () => {
  const sel = document.querySelector("[data-kind-switch]");
  if (sel) sel.addEventListener("change", () => { location.href = "/targets/new?kind=" + encodeURIComponent(sel.value); });
};

/* the anti-forgery token for fetch() writes: fetch(url, {method: "POST", headers: CW.csrfHeaders()}) */
CW.csrfHeaders = (extra = {}) => {
  const meta = document.querySelector('meta[name="csrf-token"]');
  return meta ? { ...extra, "X-CSRF-Token": meta.content } : { ...extra };
};

/* forms that ask first: <form data-confirm="Really?"> (no inline handler: CSP) */
CW.initConfirm = () => {
  document.querySelectorAll("form[data-confirm]").forEach((f) =>
    f.addEventListener("submit", (e) => { if (!confirm(f.dataset.confirm)) e.preventDefault(); }));
};

document.addEventListener("DOMContentLoaded", () => {
  CW.initConfirm();
  CW.initKindSwitch();
  CW.initModeFilter();
  CW.localizeTimes();
  CW.initRangeForm();
  CW.initRefresh();
  CW.initTestNow();
  if (document.querySelector("[data-chart]")) CW.drawAll();
});
