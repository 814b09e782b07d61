/* The weekly report: a print button (the page's @media print stylesheet lays it out). */
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  document.querySelectorAll("[data-print]").forEach((b) => b.addEventListener("click", () => window.print()));
});
