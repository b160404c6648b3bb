// hutch's live view: redraws the open panel in place, counts down
// session expiry between redraws, and streams the event trace. Text from
// the trace is only ever set as textContent; panels arrive as HTML the
// server escaped, and the page's Content-Security-Policy runs no inline
// script whatever they hold.
'use strict';
(function () {
  const live = document.getElementById('live');
  // offset is the server's clock minus this browser's, in ms, from the
  // snapshot time each panel carries: countdowns follow the server.
  let offset = 0;

  function readNow(root) {
    const stamp = root.querySelector('[data-now]');
    if (stamp) offset = Number(stamp.dataset.now) - Date.now();
  }

  function fmt(ms) {
    if (ms < 1000) return Math.round(ms) + 'ms';
    if (ms < 60000) return (ms / 1000).toFixed(1) + 's';
    const s = Math.round(ms / 1000);
    return Math.floor(s / 60) + 'm' + String(s % 60).padStart(2, '0') + 's';
  }

  function tick() {
    const now = Date.now() + offset;
    for (const el of document.querySelectorAll('[data-deadline]')) {
      const left = Number(el.dataset.deadline) - now;
      el.textContent = left > 0 ? fmt(left) : 'due';
      el.classList.toggle('due', left <= 0);
    }
    for (const el of document.querySelectorAll('[data-since]')) {
      el.textContent = fmt(Math.max(0, now - Number(el.dataset.since)));
    }
  }

  let drawing = false;
  async function redraw() {
    if (drawing || document.hidden) return;
    drawing = true;
    try {
      const u = new URL(location.href);
      u.searchParams.set('fragment', '1');
      const res = await fetch(u, { cache: 'no-store', credentials: 'same-origin' });
      if (!res.ok) {
        live.classList.add('stale');
        return;
      }
      const doc = new DOMParser().parseFromString(await res.text(), 'text/html');
      readNow(doc);
      // The header is redrawn with the panel, so its role and counts
      // never disagree with what is below them.
      const head = doc.getElementById('frag-head');
      const header = document.getElementById('head');
      if (head && header) header.replaceChildren(...head.childNodes);
      const body = doc.getElementById('frag-body');
      if (body && live.dataset.body) live.replaceChildren(...body.childNodes);
      live.classList.remove('stale');
      live.dataset.drawn = String(Number(live.dataset.drawn || 0) + 1);
      tick();
    } catch (e) {
      live.classList.add('stale');
    } finally {
      drawing = false;
    }
  }

  if (live) {
    readNow(live);
    const every = Number(live.dataset.refresh);
    if (every > 0) setInterval(redraw, every);
  }
  tick();
  setInterval(tick, 200);

  const table = document.getElementById('trace');
  if (table) streamTrace(table);

  // streamTrace reads the JSON-lines trace and adds a row per event,
  // newest first, keeping the last maxRows.
  function streamTrace(table) {
    const maxRows = 500;
    const rows = document.getElementById('trace-rows');
    const status = document.getElementById('trace-status');
    const pause = document.getElementById('trace-pause');
    let paused = false, seen = 0, dropped = 0, held = 0, state = 'connecting';
    if (pause) {
      pause.addEventListener('click', function () {
        paused = !paused;
        pause.textContent = paused ? 'Resume' : 'Pause';
        show();
      });
    }
    function show() {
      let s = state + ' · ' + seen + ' events';
      if (dropped) s += ' · ' + dropped + ' dropped (over the rate limit, or behind)';
      if (paused) s += ' · paused, ' + held + ' not shown';
      status.textContent = s;
    }
    function cell(tr, text) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.appendChild(td);
    }
    // Session ids pass 2^53: read them from the line, not the number
    // JSON.parse makes of them.
    function hexField(line, name) {
      const m = line.match(new RegExp('"' + name + '":(-?\\d+)'));
      if (!m) return '';
      return '0x' + BigInt.asUintN(64, BigInt(m[1])).toString(16);
    }
    function add(line) {
      const ev = JSON.parse(line);
      if (ev.kind === 'dropped') {
        dropped += ev.dropped;
        return;
      }
      seen++;
      if (paused) {
        held++;
        return;
      }
      const tr = document.createElement('tr');
      tr.className = 'ev-' + ev.kind;
      const session = hexField(line, 'session');
      const path = ev.path || (ev.ops || []).map(function (o) { return o.op + ' ' + o.path; }).join(', ');
      tr.dataset.session = session;
      cell(tr, String(ev.seq));
      cell(tr, new Date(ev.time).toLocaleTimeString(undefined, { hour12: false }) + '.' + String(new Date(ev.time).getMilliseconds()).padStart(3, '0'));
      cell(tr, ev.kind + (ev.expired ? ' (expired)' : ''));
      cell(tr, ev.op || ev.type || '');
      cell(tr, path);
      cell(tr, session);
      cell(tr, ev.zxid ? '0x' + ev.zxid.toString(16) : '');
      cell(tr, ev.err || '');
      rows.prepend(tr);
      while (rows.children.length > maxRows) rows.lastElementChild.remove();
    }
    async function connect() {
      const res = await fetch(table.dataset.src, { cache: 'no-store', credentials: 'same-origin' });
      if (!res.ok) throw new Error('HTTP ' + res.status);
      state = 'live';
      show();
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        let i;
        while ((i = buf.indexOf('\n')) >= 0) {
          const line = buf.slice(0, i);
          buf = buf.slice(i + 1);
          if (line) add(line);
        }
        show();
      }
    }
    (async function run() {
      for (;;) {
        try {
          await connect();
          state = 'reconnecting';
        } catch (e) {
          state = 'disconnected (' + e.message + '), retrying';
        }
        show();
        await new Promise(function (r) { setTimeout(r, 1000); });
      }
    })();
  }
})();
