/* connwatch: what the server saw (serverstats), one small chart per figure, one line per
   instance, on exactly the latency charts' time axis (CW.timeAxis, CW.timePoints): the
   window asked for, each point in the middle of its bucket, gaps as gaps. */
"use strict";

CW.builders.server = (data) => {
  /* a figure no instance reported in this window (e.g. no shared-server calls) gets no
     row: it is named under the chart instead */
  const has = (m) => data.instances.some((i) => i.series[m.name] && i.series[m.name].t.length);
  const metrics = data.metrics.filter(has);
  const missing = data.metrics.filter((m) => !has(m)).map((m) => m.label);
  const n = Math.max(1, metrics.length);
  const traces = [];
  const layout = CW.layoutBase({
    grid: { rows: n, columns: 1, pattern: "coupled", roworder: "top to bottom", ygap: 0.35 },
    xaxis: CW.timeAxis(data),
    height: 120 * n + 120,
    margin: { l: 60, r: 20, t: 44, b: 90 },
    annotations: [],
    legend: { orientation: "h", x: 1, xanchor: "right", y: 1, yanchor: "bottom" },
  });
  let any = false;
  metrics.forEach((m, k) => {
    const ya = k === 0 ? "y" : `y${k + 1}`;
    let top = m.unit === "%" ? 100 : 0;
    data.instances.forEach((inst) => {
      const s = inst.series[m.name];
      if (!s || !s.t.length) return;
      any = true;
      const g = CW.timePoints(s.t, [{ name: "mean", values: s.mean }, { name: "max", values: s.max }],
        data.step_s, data.window_end);
      g.max.forEach((v) => { if (v !== null && v > top) top = v; });
      const label = inst.instance || `instance ${inst.inst_id}`;
      const first = k === metrics.findIndex((mm) => data.instances.some((i) => i.series[mm.name]));
      traces.push({
        x: g.x, y: g.mean, type: "scatter", mode: "lines", name: label, legendgroup: label,
        showlegend: first, line: { color: inst.color, width: 2 }, xaxis: "x", yaxis: ya,
        connectgaps: false, customdata: g.utc,
        hovertemplate: `%{customdata}<br>${m.label}: %{y:.2f}${m.unit === "%" ? "%" : ` ${m.unit}`} (mean)<extra>${label}</extra>`,
      });
      traces.push({
        x: g.x, y: g.max, type: "scatter", mode: "lines", name: `${label} max`, legendgroup: label,
        showlegend: false, line: { color: inst.color, width: 1, dash: "dot" }, xaxis: "x", yaxis: ya,
        connectgaps: false, customdata: g.utc,
        hovertemplate: `%{customdata}<br>max %{y:.2f}<extra>${label}</extra>`,
      });
      if (inst.resets.length) {
        const r = CW.timePoints(inst.resets, [], data.step_s, data.window_end);
        traces.push({
          x: r.x, y: r.x.map(() => 0), type: "scatter", mode: "markers", name: `${label} restarted`,
          showlegend: false, legendgroup: label, xaxis: "x", yaxis: ya,
          marker: { symbol: "diamond", size: 9, color: inst.color },
          hovertemplate: `%{x}<br>instance restarted: counters reset<extra>${label}</extra>`,
        });
      }
    });
    layout[k === 0 ? "yaxis" : `yaxis${k + 1}`] = {
      range: [0, (top || 1) * 1.15], nticks: 3, rangemode: "tozero",
      title: { text: m.unit, standoff: 4 },
    };
    layout.annotations.push({
      xref: "paper", yref: `${ya} domain`, x: 0, y: 1, xanchor: "left", yanchor: "bottom",
      showarrow: false, text: `<b>${m.label}</b>`, font: { size: 12 }, name: `panel-${m.name}`,
    });
  });
  if (missing.length && any) {
    layout.annotations.push({
      xref: "paper", yref: "paper", x: 0, y: 0, yshift: -78, xanchor: "left", yanchor: "top",
      showarrow: false, font: { size: 11, color: "#595959" }, name: "missing",
      text: `no readings in this window: ${missing.join(", ")}`,
    });
  }
  return { traces, layout, empty: !any };
};
