// tareador report: the page's own behaviour (the charts are Bokeh's). Pan and zoom of the task
// graph, its details panel on hover and click, the critical path, copy buttons.
"use strict";
(function () {
  function data(id) {
    var el = document.getElementById(id);
    return el ? JSON.parse(el.textContent) : null;
  }

  function titleOf(g) {
    var t = g.querySelector("title");
    return t ? t.textContent : "";
  }

  function add(parent, tag, content, cls) {
    var el = document.createElement(tag);
    if (content !== undefined) el.textContent = content;
    if (cls) el.className = cls;
    parent.appendChild(el);
    return el;
  }

  function depsTable(panel, caption, rows, more) {
    add(panel, "h4", caption + " (" + (rows.length + more) + ")");
    if (!rows.length) return;
    var table = add(panel, "table"), head = add(table, "tr");
    ["instance", "object", "bytes", "kind"].forEach(function (h) { add(head, "th", h); });
    rows.forEach(function (r) {
      var tr = add(table, "tr");
      r.forEach(function (cell, i) { add(tr, "td", cell, i === 2 ? "num" : undefined); });
    });
    if (more) add(panel, "p", "... and " + more + " more", "note");
  }

  function showNode(panel, info) {
    panel.textContent = "";
    add(panel, "h3", info.title);
    var dl = add(panel, "dl", undefined, "facts");
    info.facts.forEach(function (f) { add(dl, "dt", f[0]); add(dl, "dd", f[1]); });
    if (info.in) depsTable(panel, "depends on", info.in, info.more_in);
    if (info.out) depsTable(panel, "needed by", info.out, info.more_out);
  }

  function zoomable(view, svg) {
    var box = svg.viewBox.baseVal, home = [box.x, box.y, box.width, box.height], drag = null;
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    function set(v) { svg.setAttribute("viewBox", v.join(" ")); }
    function point(ev) {
      var r = svg.getBoundingClientRect(), b = svg.viewBox.baseVal;
      var s = Math.max(b.width / r.width, b.height / r.height);
      var x0 = b.x + (b.width - r.width * s) / 2, y0 = b.y + (b.height - r.height * s) / 2;
      return [x0 + (ev.clientX - r.left) * s, y0 + (ev.clientY - r.top) * s, s];
    }
    view.addEventListener("wheel", function (ev) {
      ev.preventDefault();
      var b = svg.viewBox.baseVal, p = point(ev), k = ev.deltaY > 0 ? 1.2 : 1 / 1.2;
      set([p[0] - (p[0] - b.x) * k, p[1] - (p[1] - b.y) * k, b.width * k, b.height * k]);
    }, { passive: false });
    view.addEventListener("mousedown", function (ev) { drag = point(ev); });
    window.addEventListener("mouseup", function () { drag = null; });
    view.addEventListener("mousemove", function (ev) {
      if (!drag) return;
      var b = svg.viewBox.baseVal, p = point(ev);
      set([b.x - (p[0] - drag[0]), b.y - (p[1] - drag[1]), b.width, b.height]);
    });
    return function () { set(home); };
  }

  function graph() {
    var view = document.getElementById("graph-view"), info = data("graph-data");
    if (!view || !info) return;
    var svg = view.querySelector("svg"), panel = document.getElementById("graph-details"), pinned = null;
    var reset = zoomable(view, svg);
    document.getElementById("graph-reset").addEventListener("click", reset);
    var onPath = new Set(info.critical), pathEdges = new Set(info.critical_edges);
    svg.querySelectorAll("g.node").forEach(function (g) {
      var key = titleOf(g), node = info.nodes[key];
      if (onPath.has(key)) g.classList.add("critical");
      if (!node) return;
      g.classList.add("instance");
      g.addEventListener("mouseenter", function () { if (!pinned) showNode(panel, node); });
      g.addEventListener("click", function (ev) {
        ev.stopPropagation();
        if (pinned) pinned.classList.remove("pinned");
        pinned = pinned === g ? null : g;
        if (pinned) pinned.classList.add("pinned");
        showNode(panel, node);
      });
    });
    svg.querySelectorAll("g.edge").forEach(function (g) {
      if (pathEdges.has(titleOf(g))) g.classList.add("critical");
    });
    var toggle = document.getElementById("graph-critical");
    toggle.addEventListener("change", function () { view.classList.toggle("show-critical", toggle.checked); });
    view.classList.toggle("show-critical", toggle.checked);
  }

  function copyButtons() {
    document.querySelectorAll("button.copy").forEach(function (b) {
      b.addEventListener("click", function () {
        var code = document.getElementById(b.dataset.target).textContent;
        function done() { b.textContent = "copied"; b.dataset.copies = String(Number(b.dataset.copies || 0) + 1); setTimeout(function () { b.textContent = "copy"; }, 1500); }
        function fallback() {
          var area = add(document.body, "textarea");
          area.value = code;
          area.select();
          document.execCommand("copy");
          area.remove();
          done();
        }
        if (navigator.clipboard && window.isSecureContext) {
          navigator.clipboard.writeText(code).then(done, fallback);
        } else {
          fallback();
        }
      });
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    graph();
    copyButtons();
  });
})();
