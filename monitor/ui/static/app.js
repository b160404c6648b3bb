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

  // A replay (?at=, ?rpath=) follows the reader from panel to panel:
  // links and forms within the view carry it, but the way back to live.
  const here = new URL(location.href);
  const replay = ['at', 'rpath'].filter(function (k) { return here.searchParams.has(k); });
  if (replay.length) {
    document.addEventListener('click', function (ev) {
      const a = ev.target.closest && ev.target.closest('a[href]');
      if (!a || a.id === 'replay-live') return;
      const u = new URL(a.getAttribute('href'), location.href);
      if (u.origin !== location.origin || !u.pathname.startsWith('/ui/') || u.searchParams.has('at')) return;
      for (const k of replay) u.searchParams.set(k, here.searchParams.get(k));
      a.setAttribute('href', u.pathname + u.search);
    }, true);
    document.addEventListener('submit', function (ev) {
      for (const k of replay) {
        if (ev.target.querySelector('input[name="' + k + '"]')) continue;
        const input = document.createElement('input');
        input.type = 'hidden';
        input.name = k;
        input.value = here.searchParams.get(k);
        ev.target.appendChild(input);
      }
    }, true);
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

  // streamTrace reads the JSON-lines trace, opening on the server's
  // history, and adds a row per event, newest first, keeping the last
  // maxRows.
  function streamTrace(table) {
    const maxRows = Number(table.dataset.rows) || 500;
    const rows = document.getElementById('trace-rows');
    const status = document.getElementById('trace-status');
    const pause = document.getElementById('trace-pause');
    let paused = false, seen = 0, dropped = 0, held = 0, history = -1, state = 'connecting';
    if (pause) {
      pause.addEventListener('click', function () {
        paused = !paused;
        pause.textContent = paused ? 'Resume' : 'Pause';
        show();
      });
    }
    function show() {
      let s = state + ' · ' + seen + ' events';
      if (history >= 0) s += ' (' + history + ' from the history the server keeps, then live)';
      if (dropped) s += ' · ' + dropped + ' dropped (over the rate limit, or behind)';
      if (paused) s += ' · paused, ' + held + ' not shown';
      status.textContent = s;
    }
    function cell(tr, text) {
      const td = document.createElement('td');
      td.textContent = text;
      tr.appendChild(td);
      return td;
    }
    // Session ids pass 2^53: read them from the line, not the number
    // JSON.parse makes of them.
    function hexField(line, name) {
      const m = line.match(new RegExp('"' + name + '":(-?\\d+)'));
      if (!m) return '';
      return '0x' + BigInt.asUintN(64, BigInt(m[1])).toString(16);
    }
    function describe(ev) {
      const parts = [];
      if (ev.path) parts.push(ev.path);
      for (const o of ev.ops || []) parts.push(o.op + ' ' + o.path);
      if (ev.kind === 'txn' && ev.op === 'closeSession' || ev.kind === 'close') {
        const gone = (ev.changes || []).filter(function (c) { return c.type === 'NodeDeleted'; }).map(function (c) { return c.path; });
        parts.push(gone.length ? 'deleted ' + gone.join(', ') : 'deleted no ephemeral');
      }
      return parts.join(', ');
    }
    function add(line) {
      const ev = JSON.parse(line);
      if (ev.kind === 'dropped') {
        dropped += ev.dropped;
        return;
      }
      if (ev.kind === 'history') {
        history = ev.events;
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
      tr.dataset.session = session;
      tr.dataset.seq = String(ev.seq);
      cell(tr, String(ev.seq));
      cell(tr, new Date(ev.time).toLocaleTimeString(undefined, { hour12: false }) + '.' + String(new Date(ev.time).getMilliseconds()).padStart(3, '0'));
      cell(tr, ev.kind + (ev.reason ? ' (' + ev.reason + ')' : ev.expired ? ' (expired)' : ''));
      cell(tr, ev.op || ev.type || ev.watch || '');
      cell(tr, describe(ev));
      cell(tr, session);
      cell(tr, ev.zxid ? '0x' + ev.zxid.toString(16) : '');
      cell(tr, ev.err || '');
      const replay = cell(tr, '');
      if (ev.kind === 'txn' && !ev.err) {
        const a = document.createElement('a');
        const u = new URLSearchParams({ at: String(ev.seq) });
        if (table.dataset.path) u.set('rpath', table.dataset.path);
        a.href = '/ui/locks?' + u.toString();
        a.textContent = 'replay';
        replay.appendChild(a);
      }
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
