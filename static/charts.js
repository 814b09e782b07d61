/* connwatch time charts: the x axis is the window asked for (now at the right edge for a
   preset), each point sits in the middle of its bucket, gaps stay gaps, and more than two
   modes get one small chart each (small multiples, shared axes) unless the URL says
   layout=overlay. Builders return {traces, layout, empty} for CW.drawChart (app.js).
   Another chart on the same time axis (e.g. server-side figures) uses CW.timeAxis and
   CW.timePoints so it lines up with these. */
"use strict";

/* The x axis of every time chart: exactly the window, in local time. */
CW.timeAxis = (data, extra) => Object.assign({
  type: "date",
  range: [CW.local(data.window_start || data.start), CW.local(data.window_end || data.end)],
  title: { text: `local time${data.resolution ? ` · ${data.resolution} buckets` : ""}` },
}, extra || {});

/* Bucket starts -> points in the middle of each bucket (the last one: the middle of what
   has elapsed), with a null wherever buckets are missing, so lines break at gaps.
   cols: [{name, values}] in step with ts. Returns {x, utc, <name>: [...]}. */
CW.timePoints = (ts, cols, stepS, endIso) => {
  const out = { x: [], utc: [] };
  cols.forEach((c) => (out[c.name] = []));
  const endMs = endIso ? Date.parse(endIso) : Infinity;
  const stepMs = stepS * 1000;
  let prev = null;
  ts.forEach((iso, i) => {
    const ms = Date.parse(iso);
    if (prev !== null && stepMs > 0 && ms - prev > 1.5 * stepMs) {
      out.x.push(CW.local(new Date(prev + stepMs).toISOString()));
      out.utc.push("");
      cols.forEach((c) => out[c.name].push(null));
    }
    const span = Math.max(0, Math.min(stepMs, endMs - ms));
    out.x.push(CW.local(new Date(ms + span / 2).toISOString()));
    out.utc.push(`${CW.utc(iso).replace(" UTC", "")} + ${CW.stepText(stepS)} UTC`);
    cols.forEach((c) => out[c.name].push(c.values[i]));
    prev = ms;
  });
  return out;
};
CW.stepText = (s) => (s >= 86400 ? `${s / 86400} d` : s >= 3600 ? `${s / 3600} h`
  : s >= 60 ? `${s / 60} min` : `${s} s`);

/* Indexes of values with no neighbour (a line of one point is invisible). */
CW.loneIndexes = (ys) => ys.flatMap((v, i) => (v !== null && v !== undefined
  && (i === 0 || ys[i - 1] === null) && (i === ys.length - 1 || ys[i + 1] === null) ? [i] : []));

/* Where the data stopped: the end of the newest bucket with any sample, when it is more
   than 3 buckets (and a minute) before the window's end. */
CW.silentSince = (data) => {
  let last = null;
  for (const m of data.modes) if (m.t.length) {
    const ms = Date.parse(m.t[m.t.length - 1]);
    if (last === null || ms > last) last = ms;
  }
  for (const e of data.errors || []) last = Math.max(last ?? 0, Date.parse(e.t));
  if (last === null) return null;
  const end = Date.parse(data.window_end || data.end);
  const lastEnd = last + data.step_s * 1000;
  return end - lastEnd > Math.max(3 * data.step_s * 1000, 60000) ? lastEnd : null;
};

CW.layoutChoice = (nModes) => {
  const q = new URLSearchParams(location.search).get("layout");
  if (q === "overlay" || q === "split") return q;
  return nModes > 2 ? "split" : "overlay";
};

/* One mode's band, p50 line and error markers on the axes (xa, ya). */
CW.modeTraces = (data, m, ya, errRow, top, showlegend) => {
  const g = CW.timePoints(m.t, [
    { name: "p5", values: m.p5 }, { name: "p50", values: m.p50 }, { name: "p95", values: m.p95 },
    { name: "n", values: m.n },
  ], data.step_s, data.window_end);
  const axes = { xaxis: "x", yaxis: ya };
  const traces = [
    Object.assign({
      x: g.x, y: g.p5, type: "scatter", mode: "lines", line: { width: 0 },
      hoverinfo: "skip", showlegend: false, legendgroup: m.name, connectgaps: false,
    }, axes),
    Object.assign({
      x: g.x, y: g.p95, type: "scatter", mode: "lines", line: { width: 0 }, showlegend,
      fill: "tonexty", fillcolor: CW.rgba(m.color, 0.22), name: `${m.name} ${data.band_low}–p95`,
      legendgroup: m.name, customdata: g.utc.map((u, i) => [u, g.p5[i]]), connectgaps: false,
      hovertemplate: `%{customdata[0]}<br>${data.band_low}–p95 %{customdata[1]:.2f}–%{y:.2f} ms`
        + "<extra>" + m.name + "</extra>",
    }, axes),
    Object.assign({
      x: g.x, y: g.p50, type: "scatter", mode: "lines", name: `${m.name} p50`, showlegend,
      line: { color: m.color, dash: m.dash, width: 2 }, legendgroup: m.name,
      customdata: g.utc, text: g.n, connectgaps: false,
      hovertemplate: "%{customdata}<br>p50 %{y:.2f} ms, n=%{text}<extra>" + m.name + "</extra>",
    }, axes),
  ];
  /* a bucket with no neighbour draws no line: a marker with its p5-p95 bar instead */
  const lone = CW.loneIndexes(g.p50);
  if (lone.length) {
    traces.push(Object.assign({
      x: lone.map((i) => g.x[i]), y: lone.map((i) => g.p50[i]), type: "scatter", mode: "markers",
      name: `${m.name} p50 (lone buckets)`, showlegend: false, legendgroup: m.name,
      marker: { color: m.color, symbol: m.symbol, size: 7 },
      error_y: { type: "data", symmetric: false, color: m.color, thickness: 1, width: 4,
        array: lone.map((i) => (g.p95[i] ?? g.p50[i]) - g.p50[i]),
        arrayminus: lone.map((i) => g.p50[i] - (g.p5[i] ?? g.p50[i])) },
      customdata: lone.map((i) => [g.utc[i], g.p5[i], g.p95[i], g.n[i]]),
      hovertemplate: "%{customdata[0]}<br>p50 %{y:.2f} ms (p5 %{customdata[1]:.2f}, p95 "
        + "%{customdata[2]:.2f}), n=%{customdata[3]}<extra>" + m.name + "</extra>",
    }, axes));
  }
  const errs = (data.errors || []).filter((e) => e.mode === m.name && !e.probe_side);
  /* probe-side errors (class PROBE): connwatch's own trouble, not the database's; drawn
     apart as grey open circles, never as the mode's failures */
  const probeErrs = (data.errors || []).filter((e) => e.mode === m.name && e.probe_side);
  if (probeErrs.length) {
    traces.push(Object.assign({
      x: probeErrs.map((e) => CW.local(e.t)), y: probeErrs.map(() => errRow),
      type: "scatter", mode: "markers", name: `${m.name} probe-side errors`, showlegend,
      legendgroup: m.name,
      marker: { color: "#777777", symbol: "circle-open", size: 8, line: { width: 1.5 } },
      customdata: probeErrs.map((e) => CW.utc(e.t)),
      text: probeErrs.map((e) => `${e.count} probe-side (not the database): `
        + (e.meanings && e.meanings.length ? e.meanings.join("<br>") : e.codes.join(", "))),
      hovertemplate: "%{customdata}<br>%{text}<extra>" + m.name + "</extra>",
    }, axes));
  }
  if (errs.length) {
    const stepMs = data.step_s * 1000;
    const endMs = Date.parse(data.window_end || data.end);
    traces.push(Object.assign({
      x: errs.map((e) => {
        const ms = Date.parse(e.t);
        return CW.local(new Date(ms + Math.max(0, Math.min(stepMs, endMs - ms)) / 2).toISOString());
      }),
      y: errs.map(() => errRow),
      type: "scatter", mode: "markers", name: `${m.name} errors`, showlegend, legendgroup: m.name,
      /* size grows with the share of the bucket's samples that failed: a few failures in a
         day of samples are a small mark, an outage a big one (no solid bar at 1 y) */
      marker: { color: m.color, symbol: "x-thin-open", line: { width: 2, color: m.color },
        size: errs.map((e) => 5 + 9 * Math.sqrt(Math.min(1, e.count / Math.max(e.n || e.count, 1)))) },
      customdata: errs.map((e) => CW.utc(e.t)),
      text: errs.map((e) => `${e.count} of ${e.n || e.count} failed: `
        + (e.meanings && e.meanings.length ? e.meanings.join("<br>") : e.codes.join(", ") || "no code")),
      hovertemplate: "%{customdata}<br>%{text}<extra>" + m.name + "</extra>",
    }, axes));
  }
  return traces;
};

/* The top of the y axis: every p50 fits, and the band up to the 98th percentile of its
   p95s, so one spike does not flatten every other bucket (the clipped band is said). */
CW.ymaxOf = (modes) => {
  let p50 = 0;
  const p95s = [];
  for (const m of modes) {
    m.p50.forEach((v) => { if (v !== null && v > p50) p50 = v; });
    m.p95.forEach((v) => { if (v !== null) p95s.push(v); });
  }
  p95s.sort((a, b) => a - b);
  const tail = p95s.length ? p95s[Math.min(p95s.length - 1, Math.floor(p95s.length * 0.98))] : 0;
  const top = Math.max(p50 * 1.1, tail) || 1;
  return { top, clipped: p95s.length > 0 && p95s[p95s.length - 1] > top * 1.2 };
};

CW.silentShape = (data, yref) => {
  const since = CW.silentSince(data);
  if (since === null) return { shapes: [], annotations: [] };
  const x0 = CW.local(new Date(since).toISOString());
  const x1 = CW.local(data.window_end || data.end);
  return {
    shapes: [{ type: "rect", xref: "x", yref: "paper", x0, x1, y0: 0, y1: 1,
      fillcolor: "rgba(120,120,120,0.12)", line: { width: 0 }, layer: "below" }],
    annotations: [{ xref: "x", yref: "paper", x: x1, y: 1, xanchor: "right", yanchor: "bottom",
      showarrow: false, font: { size: 11, color: "#595959" },
      text: `no samples since ${x0.slice(11, 16)}`, name: "silent" }],
  };
};

CW.builders.timeseries = (data) => {
  const modes = data.modes;
  const layoutKind = CW.layoutChoice(modes.length);
  const { top: ymax, clipped } = CW.ymaxOf(modes);
  const silent = CW.silentShape(data);
  if (clipped) {
    silent.annotations.push({ xref: "paper", yref: "paper", x: 1, y: 1, xanchor: "right",
      yanchor: "bottom", showarrow: false, font: { size: 11, color: "#595959" },
      text: "band cut at the chart's top: a few buckets' p95 is higher (hover them)",
      name: "clipped" });
  }
  const yTitle = `${data.phase} (ms), ${data.probe} only`;
  const empty = modes.every((m) => m.t.length === 0) && data.errors.length === 0;
  if (layoutKind === "overlay" || modes.length < 2) {
    const traces = [];
    modes.forEach((m, k) => traces.push(...CW.modeTraces(data, m, "y", ymax * (1.08 + 0.06 * k), ymax, true)));
    return {
      traces, empty, layoutKind: "overlay",
      layout: CW.layoutBase({
        xaxis: CW.timeAxis(data),
        yaxis: { title: { text: yTitle }, range: [0, ymax * (1.2 + 0.06 * modes.length)] },
        shapes: silent.shapes, annotations: silent.annotations,
      }),
    };
  }
  /* small multiples: one row per mode, one x axis, the same y range everywhere */
  const n = modes.length;
  const traces = [];
  const layout = CW.layoutBase({
    grid: { rows: n, columns: 1, pattern: "coupled", roworder: "top to bottom", ygap: 0.18 },
    xaxis: CW.timeAxis(data),
    showlegend: false,
    height: 110 * n + 110,
    margin: { l: 60, r: 20, t: 24, b: 50 },
    shapes: silent.shapes,
    annotations: [...silent.annotations],
  });
  const top = ymax * 1.2;
  modes.forEach((m, k) => {
    const ya = k === 0 ? "y" : `y${k + 1}`;
    traces.push(...CW.modeTraces(data, m, ya, ymax * 1.12, top, false));
    layout[k === 0 ? "yaxis" : `yaxis${k + 1}`] = {
      range: [0, top], fixedrange: false, nticks: 4,
      title: { text: k === Math.floor((n - 1) / 2) ? yTitle : "" },
    };
    layout.annotations.push({
      xref: "paper", yref: `${ya} domain`, x: 0, y: 1, xanchor: "left", yanchor: "bottom",
      showarrow: false, text: `<b>${m.name}</b>`, font: { color: m.color, size: 12 },
      name: `panel-${m.name}`,
    });
  });
  return { traces, layout, empty, layoutKind: "split" };
};

/* The logon's round trips stacked per mode: the median of each phase per bucket, in
   wire order (the API orders them; the names are the data's). */
CW.phaseColors = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00",
  "#F0E442", "#000000", "#999999"];
CW.builders.phases = (data) => {
  const withData = data.modes.filter((m) => m.t.length);
  const n = Math.max(1, withData.length);
  const traces = [];
  const layout = CW.layoutBase({
    grid: { rows: n, columns: 1, pattern: "coupled", roworder: "top to bottom", ygap: 0.22 },
    xaxis: CW.timeAxis(Object.assign({}, data, { resolution: "" })),
    height: 120 * n + 150,
    annotations: [],
    legend: { orientation: "h", y: -0.12 - 0.35 / n, traceorder: "normal" },
  });
  let ymax = 0;
  withData.forEach((m) => m.t.forEach((_, i) => {
    const s = Object.values(m.phases).reduce((a, col) => a + (col[i] || 0), 0);
    if (s > ymax) ymax = s;
  }));
  withData.forEach((m, k) => {
    const ya = k === 0 ? "y" : `y${k + 1}`;
    const names = data.phases.filter((p) => p in m.phases);
    const g = CW.timePoints(m.t, names.map((p) => ({ name: p, values: m.phases[p] })),
      data.step_s, data.window_end);
    names.forEach((p) => {
      const c = CW.phaseColors[data.phases.indexOf(p) % CW.phaseColors.length];
      traces.push({
        x: g.x, y: g[p], type: "scatter", mode: "lines", stackgroup: `s${k}`, name: p,
        legendgroup: p, showlegend: k === 0 || !withData.slice(0, k).some((o) => p in o.phases),
        line: { width: 0.5, color: c }, fillcolor: CW.rgba(c, 0.75), xaxis: "x", yaxis: ya,
        customdata: g.utc, connectgaps: false,
        hovertemplate: `%{customdata}<br>${p}: %{y:.2f} ms (median)<extra>${m.name}</extra>`,
      });
    });
    layout[k === 0 ? "yaxis" : `yaxis${k + 1}`] = {
      range: [0, (ymax || 1) * 1.1], nticks: 4,
      title: { text: k === Math.floor((n - 1) / 2) ? "ms (stacked medians)" : "" },
    };
    layout.annotations.push({
      xref: "paper", yref: `${ya} domain`, x: 0, y: 1, xanchor: "left", yanchor: "bottom",
      showarrow: false, text: `<b>${m.name}</b>`, font: { color: m.color, size: 12 },
    });
  });
  return { traces, layout, empty: withData.length === 0 };
};
