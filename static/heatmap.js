/* Hour-of-day x weekday heatmap (the Target page's heatmap tab). Loaded after app.js. */
"use strict";

(() => {
  const el = document.getElementById("chart-heatmap");
  if (el && el.hasAttribute("data-browser-tz")) {
    // No tz in the URL: ask the API for the viewer's zone, and name it on the page.
    const tz = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
    const url = new URL(el.dataset.src, location.origin);
    url.searchParams.set("tz", tz);
    el.dataset.src = url.pathname + url.search;
    document.querySelectorAll("[data-heat-tz]").forEach((s) => (s.textContent = tz));
  }
})();

CW.builders.heatmap = (data) => {
  const stat = (document.getElementById("chart-heatmap") || { dataset: {} }).dataset.stat || "p95";
  const z = data[stat];
  const text = data.n.map((row, d) => row.map((n, h) =>
    `${data.weekdays[d]} ${String(h).padStart(2, "0")}:00–${String(h + 1).padStart(2, "0")}:00 ${data.tz}` +
    `<br>${stat} ${z[d][h] === null ? "—" : z[d][h].toFixed(2) + " ms"}` +
    `<br>${n} samples, ${data.failed[d][h]} failed`));
  /* the colour scale starts at 0 ms: a 76-88 ms spread must not look like 0-100 %;
     the real range is said above the chart */
  const vals = z.flat().filter((v) => v !== null);
  const lo = vals.length ? Math.min(...vals) : 0;
  const hi = vals.length ? Math.max(...vals) : 1;
  return {
    traces: [{
      type: "heatmap", z, x: data.hours, y: data.weekdays, text, zmin: 0, zmax: hi || 1,
      hoverinfo: "text", hoverongaps: false, colorscale: "Viridis", xgap: 1, ygap: 1,
      colorbar: { title: { text: `${stat} ms` } },
    }],
    layout: CW.layoutBase({
      xaxis: { title: { text: `hour of day (${data.tz})` }, dtick: 1 },
      yaxis: { autorange: "reversed" },
      margin: { l: 60, r: 20, t: 34, b: 50 },
      annotations: [{ xref: "paper", yref: "paper", x: 0, y: 1, yanchor: "bottom",
        xanchor: "left", showarrow: false, name: "range", font: { size: 12, color: "#595959" },
        text: `${stat} from ${lo.toFixed(1)} to ${hi.toFixed(1)} ms (colours from 0 ms)` }],
    }),
    empty: data.n.every((row) => row.every((n) => n === 0)),
  };
};
