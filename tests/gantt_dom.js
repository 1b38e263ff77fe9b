// Drives the Gantt page's script in jsdom (a DOM without layout): filter, zoom, highlight, reset.
// Usage: node tests/gantt_dom.js PAGE.html; prints what the page shows after each step as JSON.
const { JSDOM } = require("jsdom");
const fs = require("fs");
const dom = new JSDOM(fs.readFileSync(process.argv[2], "utf8"), { runScripts: "dangerously" });
const d = dom.window.document;
const fire = (el, type) => el.dispatchEvent(new dom.window.Event(type));
const state = () => ({
  count: d.getElementById("count").textContent,
  transform: d.getElementById("plot").getAttribute("transform"),
  ticks: Array.from(d.querySelectorAll("#xaxis text")).map((t) => t.textContent),
  highlighted: d.querySelectorAll("#plot g.hl").length,
  dimmed: d.querySelectorAll("#plot g.dim").length,
  hidden: Array.from(d.querySelectorAll("#plot g.hide")).map((g) => g.dataset.id),
});
const steps = { start: state() };
const filter = d.getElementById("filter");
filter.value = process.argv[3] || "";
fire(filter, "input");
steps.filtered = state();
filter.value = "";
fire(filter, "input");
d.getElementById("zoomin").click();
steps.zoomed = state();
const highlight = d.getElementById("highlight");
highlight.value = highlight.options[1].value;
fire(highlight, "change");
steps.highlighted = state();
d.getElementById("reset").click();
steps.reset = state();
console.log(JSON.stringify(steps));
