// Differential flame graph on a canvas, from the tree in #diff-data (see src/diff/html.rs).
// Root at the top; a frame's width is before + after, its colour the change of its total.
(function () {
  'use strict';

  var ROW = 18;
  // Narrower frames, and with them their subtrees, are skipped: they cannot be seen or hovered.
  var MIN_WIDTH = 0.5;

  var data = JSON.parse(document.getElementById('diff-data').textContent);
  var nodes = data.nodes || { name: [], depth: [], bt: [], at: [], sb: [], sa: [], c: [] };
  var names = data.names || [];
  var N = nodes.depth.length;

  var width = new Float64Array(N);
  var x = new Float64Array(N);
  var parent = new Int32Array(N);
  // One past a node's last descendant: the tree comes in pre-order.
  var end = new Int32Array(N);

  (function layout() {
    var cursor = [0];
    var stack = [];
    for (var i = 0; i < N; i++) {
      var d = nodes.depth[i];
      while (stack.length > d) end[stack.pop()] = i;
      parent[i] = d > 0 ? stack[d - 1] : -1;
      width[i] = Math.max(0, nodes.bt[i] || 0) + Math.max(0, nodes.at[i] || 0);
      x[i] = cursor[d] || 0;
      cursor[d] = x[i] + width[i];
      cursor[d + 1] = x[i];
      stack.push(i);
    }
    while (stack.length) end[stack.pop()] = N;
  })();

  // Keep in step with colour() in src/diff/svg.rs.
  function colour(c) {
    if (!c) return 'hsl(0,0%,80%)';
    var l = 88 - 38 * Math.min(1, Math.abs(c));
    return 'hsl(' + (c > 0 ? 0 : 220) + ',85%,' + l.toFixed(1) + '%)';
  }

  // Keep in step with text_colour() in src/diff/svg.rs.
  function textColour(c) { return Math.abs(c) > 0.6 ? '#fff' : '#111'; }

  // Keep in step with src/diff/units.rs.
  function sig3(v) {
    if (v === 0) return '0';
    if (v >= 99.95) return v.toFixed(0);
    if (v >= 9.995) return v.toFixed(1);
    var decimals = 2 - Math.min(0, Math.floor(Math.log10(v / 0.9995)));
    return v.toFixed(Math.max(2, Math.min(12, decimals)));
  }
  function scale(a, step, units) {
    var i = 0;
    while (a >= step * 0.9995 && i + 1 < units.length) {
      a /= step;
      i++;
    }
    return [a, units[i]];
  }
  function time(s) {
    if (s === 0) return [0, 's'];
    if (s < 1e-6 * 0.9995) return [s * 1e9, 'ns'];
    if (s < 1e-3 * 0.9995) return [s * 1e6, '\u00b5s'];
    if (s < 0.9995) return [s * 1e3, 'ms'];
    return [s, 's'];
  }
  function fmt(v) {
    if (v === null || v === undefined) v = 0;
    if (!isFinite(v)) return String(v);
    var sign = v < 0 ? '-' : '';
    var a = Math.abs(v);
    var r;
    switch (data.unit) {
      case 'nanoseconds': case 'ns': r = time(a * 1e-9); break;
      case 'microseconds': case 'us': r = time(a * 1e-6); break;
      case 'milliseconds': case 'ms': r = time(a * 1e-3); break;
      case 'seconds': case 's': r = time(a); break;
      case 'bytes': case 'B': r = scale(a, 1024, ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB']); break;
      default:
        r = scale(a, 1000, ['', 'k', 'M', 'G', 'T', 'P']);
        if (data.unit && data.unit !== 'count' && data.unit !== 'samples') r[1] += ' ' + data.unit;
    }
    return sign + sig3(r[0]) + r[1];
  }
  // Per second for what accumulates (CPU, allocations), plain averages for states (heap in use).
  function rate(v) { return v ? fmt(v) + (data.perSecond === false ? '' : '/s') : '0'; }
  function change(b, a) {
    if (!b) return a ? 'new' : 'unchanged';
    var p = (a - b) / Math.abs(b) * 100;
    return (p >= 0 ? '+' : '') + p.toFixed(1) + '%';
  }
  function share(v, total) {
    return total > 0 ? (v / total * 100).toFixed(1) + '%' : '';
  }

  var canvas = document.getElementById('flame-canvas');
  var ctx = canvas.getContext('2d');
  var tip = document.getElementById('tip');
  var search = document.getElementById('search');
  var status = document.getElementById('status');
  var focus = 0;
  var query = '';
  // Frames drawn in the last pass, per depth: [node, x, width] for hit-testing.
  var drawn = [];

  function name(i) { return names[nodes.name[i]] || ''; }
  function matches(i) { return name(i).toLowerCase().indexOf(query) >= 0; }

  // The frames wide enough to see at the current zoom, as [node, x, width].
  function visible(cssWidth) {
    var out = [];
    if (!N) return out;
    // The focused frame and its ancestors span the whole width.
    for (var a = focus; a >= 0; a = parent[a]) out.push([a, 0, cssWidth]);
    if (width[focus] > 0) {
      var k = cssWidth / width[focus];
      var x0 = x[focus];
      var i = focus + 1;
      while (i < end[focus]) {
        var pw = width[i] * k;
        if (pw < MIN_WIDTH) {
          i = end[i];
          continue;
        }
        out.push([i, (x[i] - x0) * k, pw]);
        i++;
      }
    }
    return out;
  }

  function draw() {
    var cssWidth = canvas.parentNode.clientWidth || 800;
    var frames = visible(cssWidth);
    var deepest = 0;
    for (var f = 0; f < frames.length; f++) deepest = Math.max(deepest, nodes.depth[frames[f][0]]);
    // As tall as what is drawn: deep but invisibly thin stacks would leave a blank expanse.
    var height = (deepest + 1) * ROW;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = Math.round(cssWidth * dpr);
    canvas.height = Math.round(height * dpr);
    canvas.style.width = cssWidth + 'px';
    canvas.style.height = height + 'px';
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, cssWidth, height);
    ctx.font = '12px system-ui, sans-serif';
    ctx.textBaseline = 'middle';
    var charWidth = ctx.measureText('abcdefghijklmnopqrstuvwxyz').width / 26 || 7;
    var counts = { frames: 0, grown: 0, shrunk: 0, unchanged: 0, matches: 0 };
    drawn = [];
    for (var d = 0; d <= deepest; d++) drawn.push([]);

    for (f = 0; f < frames.length; f++) {
      var i = frames[f][0], px = frames[f][1], pw = frames[f][2];
      var y = nodes.depth[i] * ROW;
      var c = nodes.c[i];
      var hit = query !== '' && matches(i);
      ctx.globalAlpha = query !== '' && !hit ? 0.35 : 1;
      ctx.fillStyle = colour(c);
      ctx.fillRect(px, y, pw > 2 ? pw - 1 : pw, ROW - 1);
      if (hit) {
        ctx.strokeStyle = '#7a00cc';
        ctx.lineWidth = 2;
        ctx.strokeRect(px + 1, y + 1, Math.max(0, pw - 3), ROW - 3);
        counts.matches++;
      }
      var room = Math.floor((pw - 6) / charWidth);
      if (room >= 3) {
        var label = name(i);
        // Shortened from the start, like the table: the end names the function.
        if (label.length > room) label = '\u2026' + label.slice(label.length - room + 1);
        ctx.fillStyle = textColour(c);
        ctx.fillText(label, px + 3, y + ROW / 2);
      }
      ctx.globalAlpha = 1;
      drawn[nodes.depth[i]].push(frames[f]);
      counts.frames++;
      if (c > 0) counts.grown++;
      else if (c < 0) counts.shrunk++;
      else counts.unchanged++;
    }

    var ds = document.body.dataset;
    ds.frames = String(counts.frames);
    ds.grown = String(counts.grown);
    ds.shrunk = String(counts.shrunk);
    ds.unchanged = String(counts.unchanged);
    ds.matches = String(counts.matches);
    ds.focus = N ? name(focus) : '';
    var parts = [];
    if (focus !== 0) parts.push('zoomed into ' + name(focus));
    if (query !== '') parts.push(counts.matches + ' matching frame' + (counts.matches === 1 ? '' : 's'));
    status.textContent = parts.join(' \u00b7 ');
  }

  function hit(ev) {
    var r = canvas.getBoundingClientRect();
    var mx = ev.clientX - r.left;
    var row = drawn[Math.floor((ev.clientY - r.top) / ROW)];
    if (!row) return -1;
    for (var j = 0; j < row.length; j++) {
      if (mx >= row[j][1] && mx < row[j][1] + row[j][2]) return row[j][0];
    }
    return -1;
  }

  function cell(tr, text) {
    var td = document.createElement('td');
    td.textContent = text;
    tr.appendChild(td);
  }

  function showTip(i, ev) {
    tip.textContent = '';
    var b = document.createElement('b');
    b.textContent = name(i);
    tip.appendChild(b);
    var table = document.createElement('table');
    var rows = [
      ['', 'before', 'after', 'change'],
      ['total', rate(nodes.bt[i]), rate(nodes.at[i]), change(nodes.bt[i], nodes.at[i])],
      ['self', rate(nodes.sb[i]), rate(nodes.sa[i]), change(nodes.sb[i], nodes.sa[i])],
      ['of all', share(nodes.bt[i], nodes.bt[0]), share(nodes.at[i], nodes.at[0]), '']
    ];
    for (var r = 0; r < rows.length; r++) {
      var tr = document.createElement('tr');
      for (var c = 0; c < rows[r].length; c++) cell(tr, rows[r][c]);
      table.appendChild(tr);
    }
    tip.appendChild(table);
    var verdict = i === 0 ? data.totalVerdict : (data.verdicts || [])[nodes.name[i]];
    if (verdict) {
      var p = document.createElement('div');
      p.textContent = 'verdict: ' + verdict;
      tip.appendChild(p);
    }
    tip.hidden = false;
    var left = Math.min(ev.clientX + 14, window.innerWidth - tip.offsetWidth - 8);
    var top = ev.clientY + 16;
    if (top + tip.offsetHeight > window.innerHeight - 8) top = ev.clientY - tip.offsetHeight - 10;
    tip.style.left = Math.max(0, left) + 'px';
    tip.style.top = Math.max(0, top) + 'px';
  }

  canvas.addEventListener('mousemove', function (ev) {
    var i = hit(ev);
    canvas.style.cursor = i < 0 ? '' : 'pointer';
    if (i < 0) tip.hidden = true;
    else showTip(i, ev);
  });
  canvas.addEventListener('mouseleave', function () { tip.hidden = true; });
  canvas.addEventListener('click', function (ev) {
    var i = hit(ev);
    if (i < 0) return;
    // Clicking the focused frame again steps back out one level.
    focus = i === focus && parent[i] >= 0 ? parent[i] : i;
    tip.hidden = true;
    draw();
  });
  document.getElementById('reset').addEventListener('click', function () {
    focus = 0;
    draw();
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') {
      focus = 0;
      draw();
    }
  });
  search.addEventListener('input', function () {
    query = search.value.trim().toLowerCase();
    draw();
  });
  var rows = document.querySelectorAll('table.rows tbody tr');
  for (var r = 0; r < rows.length; r++) {
    rows[r].addEventListener('click', function () {
      search.value = this.getAttribute('data-fn') || '';
      query = search.value.trim().toLowerCase();
      draw();
      canvas.scrollIntoView({ block: 'nearest' });
    });
  }
  window.addEventListener('resize', draw);

  draw();
  document.body.dataset.ready = '1';
})();
