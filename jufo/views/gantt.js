// jufo gantt, HTML view: zoom and pan the time axis, filter jobs, highlight a user's jobs.
// Self-contained (no network). The SVG's root carries the time axis (data-t0, data-t1, data-left,
// data-width, data-now, data-base); dates are the snapshot's wall clock, written as UTC epoch seconds.
(function () {
  "use strict";
  var svg = document.getElementById("chart");
  var plot = document.getElementById("plot");
  var axis = document.getElementById("xaxis");
  var nowLabel = document.getElementById("nowlabel");
  var NS = "http://www.w3.org/2000/svg";
  var t0 = +svg.dataset.t0, t1 = +svg.dataset.t1, left = +svg.dataset.left, width = +svg.dataset.width;
  var now = +svg.dataset.now, span = Math.max(1, t1 - t0);
  var base = +svg.dataset.base;
  var view = [t0, t1];
  var STEPS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
               172800, 604800, 1209600, 2592000];
  var shapes = Array.prototype.slice.call(plot.querySelectorAll("g[data-id]"));

  function pad(n) { return (n < 10 ? "0" : "") + n; }
  function hhmm(t) {
    var d = new Date(t * 1000);
    var s = pad(d.getUTCHours()) + ":" + pad(d.getUTCMinutes());
    return d.getUTCSeconds() ? s + ":" + pad(d.getUTCSeconds()) : s;
  }
  function day(t) {
    var d = new Date(t * 1000);
    return d.getUTCFullYear() + "-" + pad(d.getUTCMonth() + 1) + "-" + pad(d.getUTCDate());
  }
  function text(x, y, content, cls) {
    var el = document.createElementNS(NS, "text");
    el.setAttribute("x", x); el.setAttribute("y", y); el.setAttribute("text-anchor", "middle");
    if (cls) el.setAttribute("class", cls);
    el.textContent = content;
    return el;
  }
  function xOf(t) { return left + (t - view[0]) * width / (view[1] - view[0]); }

  function draw() {
    var scale = span / (view[1] - view[0]);
    var offset = (view[0] - t0) * width / span;
    plot.setAttribute("transform", "translate(" + (left - scale * (left + offset)) + ",0) scale(" + scale + ",1)");
    var inside = now >= view[0] && now <= view[1];
    nowLabel.setAttribute("x", xOf(now));
    nowLabel.style.display = inside ? "" : "none";
    while (axis.firstChild) axis.removeChild(axis.firstChild);
    var want = Math.max(1, (view[1] - view[0]) / 8), step = STEPS[STEPS.length - 1];
    for (var i = 0; i < STEPS.length; i++) { if (STEPS[i] >= want) { step = STEPS[i]; break; } }
    for (var t = (Math.floor(view[0] / step) + 1) * step; t < view[1]; t += step) {
      var x = xOf(t), tick = document.createElementNS(NS, "line");
      tick.setAttribute("x1", x); tick.setAttribute("x2", x);
      tick.setAttribute("y1", base); tick.setAttribute("y2", base + 5); tick.setAttribute("stroke", "#333");
      axis.appendChild(tick);
      axis.appendChild(text(x, base + 18, hhmm(t)));
      axis.appendChild(text(x, base + 31, day(t), "n"));
    }
  }

  function zoom(factor, at) {  // at: the time that stays under the cursor
    var lo = at - (at - view[0]) * factor, hi = at + (view[1] - at) * factor;
    if (hi - lo < 60) return;  // a minute across is as close as it gets
    view = [Math.max(t0, lo), Math.min(t1, hi)];
    if (view[0] === t0 && hi > t1) view[1] = Math.min(t1, t0 + (hi - lo));
    draw();
  }
  function timeAt(clientX) {
    var box = svg.getBoundingClientRect();
    var x = (clientX - box.left) * svg.viewBox.baseVal.width / box.width;
    return view[0] + (x - left) * (view[1] - view[0]) / width;
  }

  svg.addEventListener("wheel", function (e) {
    e.preventDefault();
    zoom(e.deltaY < 0 ? 0.8 : 1.25, Math.min(view[1], Math.max(view[0], timeAt(e.clientX))));
  }, {passive: false});
  var drag = null;
  svg.addEventListener("mousedown", function (e) { drag = {x: e.clientX, view: view.slice()}; });
  window.addEventListener("mouseup", function () { drag = null; });
  window.addEventListener("mousemove", function (e) {
    if (!drag) return;
    var box = svg.getBoundingClientRect();
    var shift = (e.clientX - drag.x) * svg.viewBox.baseVal.width / box.width * (drag.view[1] - drag.view[0]) / width;
    var lo = drag.view[0] - shift, hi = drag.view[1] - shift;
    if (lo < t0) { hi += t0 - lo; lo = t0; }
    if (hi > t1) { lo -= hi - t1; hi = t1; }
    view = [Math.max(t0, lo), hi];
    draw();
  });
  document.getElementById("zoomin").onclick = function () { zoom(0.5, (view[0] + view[1]) / 2); };
  document.getElementById("zoomout").onclick = function () { zoom(2, (view[0] + view[1]) / 2); };
  document.getElementById("reset").onclick = function () { view = [t0, t1]; draw(); };

  var filter = document.getElementById("filter"), highlight = document.getElementById("highlight");
  var count = document.getElementById("count");
  function apply() {
    var words = filter.value.toLowerCase().split(/[\s,]+/).filter(Boolean), user = highlight.value, shown = 0;
    shapes.forEach(function (g) {
      var d = g.dataset, fields = [d.id.toLowerCase(), d.user.toLowerCase(), d.queue.toLowerCase()];
      var keep = !words.length || words.some(function (w) {
        return fields.some(function (f) { return f.indexOf(w) >= 0; });
      });
      g.classList.toggle("hide", !keep);
      g.classList.toggle("hl", !!user && d.user === user);
      g.classList.toggle("dim", !!user && d.user !== user);
      if (keep) shown++;
    });
    count.textContent = shown + " of " + shapes.length + " shown";
  }
  filter.addEventListener("input", apply);
  highlight.addEventListener("change", apply);
  apply();
  draw();
})();
