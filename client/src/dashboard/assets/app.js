// Troupe dashboard: hand-written, no build step, no third-party code. Every value from the server
// reaches the page through textContent or attributes set one by one (never innerHTML).
'use strict';
(function () {
  if (document.body.classList.contains('login')) {
    if (new URLSearchParams(location.search).has('error')) {
      document.getElementById('login-error').hidden = false;
    }
    return;
  }

  /** State the tests and the perf script read. */
  const troupe = (window.troupe = {
    eventSeqs: [],
    renders: {},
    listUpdates: {},
    listSnapshots: {},
    info: { allowActions: false },
  });
  const main = document.getElementById('main');
  const live = document.getElementById('live');
  let cleanup = [];

  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === undefined || v === null || v === false) continue;
      if (k === 'class') el.className = v;
      // CSSOM, not a style attribute: the page's CSP refuses inline style attributes.
      else if (k === 'style') el.style.cssText = v;
      else if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) {
      if (c === undefined || c === null || c === false) continue;
      el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return el;
  }
  const enc = encodeURIComponent;

  async function api(path, init) {
    const res = await fetch('/api/' + path, { credentials: 'same-origin', ...(init || {}) });
    if (res.status === 401) {
      location.href = '/login';
      throw new Error('logged out');
    }
    const body = await res.json();
    if (!res.ok) throw new Error(body.message || res.statusText);
    return body;
  }
  async function action(path) {
    return api(path, { method: 'POST', headers: { 'x-troupe-action': '1' } });
  }

  function usd(v) {
    return v === null || v === undefined ? '—' : '$' + Number(v).toFixed(v < 1 ? 4 : 2);
  }
  function pct(v) {
    return v === null || v === undefined ? '—' : (v * 100).toFixed(1) + '%';
  }
  function dur(ms) {
    if (ms === null || ms === undefined) return '—';
    const s = Math.round(ms / 1000);
    if (s < 60) return s + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + (s % 60) + ' s';
    return Math.floor(s / 3600) + ' h ' + Math.floor((s % 3600) / 60) + ' min';
  }
  function when(ms) {
    return ms ? new Date(ms).toLocaleString() : '—';
  }
  function bar(done, passed, total) {
    const t = Math.max(1, total);
    return h(
      'span',
      { class: 'bar', title: done + ' / ' + total },
      h('span', { class: 'p', style: 'width:' + (100 * passed) / t + '%' }),
      h('span', {
        class: 'f',
        style: 'left:' + (100 * passed) / t + '%;width:' + (100 * (done - passed)) / t + '%',
      }),
    );
  }
  function card(k, v, id) {
    return h(
      'div',
      { class: 'card' },
      h('div', { class: 'v', id }, v),
      h('div', { class: 'k' }, k),
    );
  }
  // A list kept live by push (WatchJobs/WatchNodes relayed as server-sent events): a snapshot
  // replaces it, an update patches it. EventSource reconnects by itself after a broken stream, and
  // every new stream starts with a fresh snapshot, so nothing is resumed and nothing drifts. A
  // refused stream (logged out, server gone) closes the EventSource: it is reopened after a check.
  function liveList(path, idOf, onChange) {
    const items = new Map();
    let skewMs = 0;
    let source;
    let stopped = false;
    let retry;
    const serverNow = () => Date.now() + skewMs;
    const apply = (m, snapshot) => {
      const u = JSON.parse(m.data);
      if (snapshot) items.clear();
      for (const id of u.removed) items.delete(id);
      for (const it of u.items) items.set(idOf(it), it);
      skewMs = u.nowMs - Date.now();
      troupe.listUpdates[path] = (troupe.listUpdates[path] || 0) + 1;
      if (snapshot) troupe.listSnapshots[path] = (troupe.listSnapshots[path] || 0) + 1;
      onChange([...items.values()], serverNow);
    };
    function connect() {
      source = new EventSource('/api/stream/' + path);
      source.onopen = () => live.classList.add('on');
      source.onerror = () => {
        live.classList.remove('on');
        if (source.readyState !== EventSource.CLOSED || stopped) return;
        // api() sends a logged-out page to the login form.
        retry = setTimeout(() => api('info').then(connect, connect), 2000);
      };
      source.addEventListener('snapshot', (m) => apply(m, true));
      source.addEventListener('update', (m) => apply(m, false));
      source.addEventListener('failure', (m) =>
        console.warn(path + ' stream: ' + JSON.parse(m.data).message),
      );
    }
    connect();
    cleanup.push(() => {
      stopped = true;
      clearTimeout(retry);
      source.close();
      live.classList.remove('on');
    });
    return { items, serverNow };
  }
  function fail(e) {
    main.replaceChildren(h('p', { class: 'error' }, String(e.message || e)));
  }

  // ---- jobs list ---------------------------------------------------------------------------
  async function jobsPage() {
    const tbody = h('tbody', { id: 'jobs-body' });
    main.replaceChildren(
      h('h1', {}, 'Jobs'),
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [
              'Job',
              'Name',
              'Kind',
              'State',
              'Progress',
              'Done',
              'Pass rate',
              'Spend',
              'ETA',
              'Created',
            ].map((x) => h('th', {}, x)),
          ),
        ),
        tbody,
      ),
    );
    liveList(
      'jobs',
      (j) => j.jobId,
      (list) => {
        const jobs = list.sort((a, b) =>
          a.createdMs !== b.createdMs ? b.createdMs - a.createdMs : a.jobId < b.jobId ? 1 : -1,
        );
        tbody.replaceChildren(
          ...jobs.map((j) =>
            h(
              'tr',
              { 'data-job': j.jobId },
              h('td', {}, h('a', { href: '#/job/' + enc(j.jobId) }, j.jobId)),
              h('td', {}, j.name),
              h('td', {}, j.kind),
              h('td', { class: 'state-' + j.state }, j.state),
              h('td', {}, bar(j.done, j.passed, j.total)),
              h('td', { class: 'done' }, j.done + ' / ' + j.total),
              h('td', {}, pct(j.passRate)),
              h('td', {}, usd(j.costUsd)),
              h('td', {}, j.etaMs === null ? '—' : dur(j.etaMs)),
              h('td', {}, when(j.createdMs)),
            ),
          ),
        );
        if (jobs.length === 0)
          tbody.append(
            h(
              'tr',
              {},
              h('td', { colspan: 10, class: 'muted' }, 'No jobs yet: troupe submit <spec>'),
            ),
          );
        troupe.renders.jobs = performance.now();
      },
    );
  }

  // ---- job page ----------------------------------------------------------------------------
  const ROW = 28;
  function jobPage(jobId) {
    const t0 = performance.now();
    const summary = h('div', { class: 'cards', id: 'job-cards' });
    const title = h('h1', {}, 'Job ' + jobId);
    const actions = h('span', {});
    const events = h('div', { class: 'events', id: 'events' });
    const q = h('input', {
      id: 'task-search',
      placeholder: 'search id, stop reason, error',
      size: 32,
    });
    const status = h(
      'select',
      { id: 'task-status' },
      h('option', { value: '' }, 'all statuses'),
      [
        'TASK_PASSED',
        'TASK_FAILED',
        'TASK_ERRORED',
        'TASK_TIMED_OUT',
        'TASK_CANCELLED',
        'TASK_RUNNING',
        'TASK_PENDING',
      ].map((s) => h('option', { value: s }, s)),
    );
    const sort = h(
      'select',
      { id: 'task-sort' },
      ['index', 'id', 'status', 'score', 'cost', 'duration'].map((s) =>
        h('option', { value: s }, 'sort: ' + s),
      ),
    );
    const matched = h('span', { class: 'muted', id: 'task-matched' });
    const list = h('div', { class: 'vlist', id: 'tasks' });
    const spacer = h('div', { class: 'spacer' });
    list.append(spacer);
    main.replaceChildren(
      title,
      actions,
      summary,
      h('h2', {}, 'Tasks'),
      h('div', { class: 'toolbar' }, q, status, sort, matched),
      h(
        'div',
        { class: 'vrow vhead' },
        ['#', 'Task', 'Status', 'Score', 'Tries', 'Cost', 'Duration', 'Stop reason', 'Error'].map(
          (x) => h('span', {}, x),
        ),
      ),
      list,
      h('h2', {}, 'Events'),
      events,
    );

    let job = null;
    const pages = new Map(); // page index → rows
    const PAGE = 100;
    let matchedCount = 0;
    let generation = 0;
    let firstRows = false;

    function query(page) {
      const p = new URLSearchParams({
        offset: String(page * PAGE),
        limit: String(PAGE),
        sort: sort.value,
      });
      if (q.value) p.set('q', q.value);
      if (status.value) p.set('status', status.value);
      return 'jobs/' + enc(jobId) + '/tasks?' + p;
    }
    async function loadPage(page, gen) {
      const body = await api(query(page));
      if (gen !== generation) return;
      pages.set(page, body.rows);
      matchedCount = body.matched;
      matched.textContent = body.matched + ' of ' + body.total + ' tasks';
      spacer.style.height = matchedCount * ROW + 'px';
      draw();
    }
    function draw() {
      const first = Math.floor(list.scrollTop / ROW);
      const count = Math.ceil(list.clientHeight / ROW) + 2;
      const rows = [];
      for (let i = first; i < Math.min(matchedCount, first + count); i++) {
        const page = Math.floor(i / PAGE);
        const r = pages.get(page) && pages.get(page)[i - page * PAGE];
        if (!r) {
          if (!pages.has(page)) {
            pages.set(page, null);
            loadPage(page, generation).catch(console.warn);
          }
          continue;
        }
        rows.push(
          h(
            'div',
            { class: 'vrow', style: 'top:' + i * ROW + 'px', 'data-task': r.taskId },
            h('span', {}, r.index),
            h('span', {}, h('a', { href: '#/task/' + enc(jobId) + '/' + enc(r.taskId) }, r.taskId)),
            h('span', { class: 's-' + r.status }, r.status.replace('TASK_', '')),
            h('span', {}, r.score === null ? '—' : Number(r.score).toFixed(3)),
            h('span', {}, r.attempts),
            h('span', {}, usd(r.costUsd)),
            h('span', {}, dur(r.durationMs)),
            h('span', { title: r.stopReason }, r.stopReason),
            h('span', { title: r.error }, r.error),
          ),
        );
      }
      spacer.replaceChildren(...rows);
      if (rows.length > 0 && !firstRows) {
        firstRows = true;
        troupe.renders.jobFirstRows = performance.now() - t0;
        document.body.dataset.rendered = 'job';
      }
    }
    function reload() {
      generation++;
      pages.clear();
      return loadPage(Math.floor(list.scrollTop / ROW / PAGE), generation);
    }
    list.addEventListener('scroll', draw);
    let filterTimer;
    q.addEventListener('input', () => {
      clearTimeout(filterTimer);
      filterTimer = setTimeout(() => {
        list.scrollTop = 0;
        reload();
      }, 250);
    });
    status.addEventListener('change', () => {
      list.scrollTop = 0;
      reload();
    });
    sort.addEventListener('change', () => {
      list.scrollTop = 0;
      reload();
    });

    async function refresh() {
      const body = await api('jobs/' + enc(jobId));
      job = body.job;
      title.textContent = 'Job ' + job.jobId + ' — ' + job.name + ' (' + job.kind + ')';
      summary.replaceChildren(
        card('state', h('span', { class: 'state-' + job.state }, job.state), 'job-state'),
        card('progress', job.done + ' / ' + job.total, 'job-done'),
        card('passed', String(job.passed)),
        card('failed', String(job.failed)),
        card('running', String(job.running)),
        card('pass rate', pct(job.passRate)),
        card('spend', usd(job.costUsd)),
        card('ETA', job.etaMs === null ? '—' : dur(job.etaMs)),
        card('wall', dur((job.finishedMs || body.nowMs) - (job.startedMs || job.createdMs))),
      );
      if (job.reason) summary.append(card('reason', job.reason));
      actions.replaceChildren();
      if (troupe.info.allowActions && (job.state === 'RUNNING' || job.state === 'QUEUED')) {
        actions.append(
          h(
            'button',
            {
              class: 'action',
              id: 'cancel-job',
              onclick: async () => {
                await action('jobs/' + enc(jobId) + '/cancel');
                refresh();
              },
            },
            'Cancel job',
          ),
        );
      }
      if (job.kind === 'evolve') {
        actions.append(
          ' ',
          h(
            'span',
            { class: 'muted' },
            'evolve job: open a task for its curves, lineage and diffs',
          ),
        );
      }
    }
    let pending = false;
    function scheduleRefresh() {
      if (pending) return;
      pending = true;
      setTimeout(() => {
        pending = false;
        refresh().catch(console.warn);
        reload().catch(console.warn);
      }, 700);
    }

    Promise.all([refresh(), reload()]).catch(fail);

    // Live events: EventSource resends Last-Event-ID on reconnect; the server resumes after it.
    let lastSeq = 0;
    let source;
    function connect() {
      source = new EventSource(
        // A first load shows the job's last 500 events, not its whole history (a 100,000-task
        // job has 300,000); a reconnect resumes after the last one shown.
        '/api/jobs/' + enc(jobId) + '/events' + (lastSeq ? '?after=' + lastSeq : '?tail=500'),
      );
      source.onopen = () => live.classList.add('on');
      source.onerror = () => live.classList.remove('on');
      source.addEventListener('job', (m) => {
        const e = JSON.parse(m.data);
        if (e.seq <= lastSeq) return; // never show one twice
        lastSeq = e.seq;
        troupe.eventSeqs.push(e.seq);
        events.prepend(
          h(
            'div',
            { 'data-seq': e.seq },
            '#' +
              e.seq +
              ' ' +
              new Date(e.timeMs).toLocaleTimeString() +
              ' ' +
              e.type +
              (e.taskId ? ' ' + e.taskId : '') +
              (e.message ? ' — ' + e.message : ''),
          ),
        );
        while (events.childElementCount > 500) events.lastElementChild.remove();
        scheduleRefresh();
      });
      source.addEventListener('end', () => {
        source.close();
        live.classList.remove('on');
        troupe.streamEnded = true;
      });
      source.addEventListener('failure', (m) => {
        events.prepend(h('div', { class: 'error' }, 'event stream: ' + JSON.parse(m.data).message));
      });
    }
    troupe.eventSeqs = [];
    troupe.streamEnded = false;
    connect();
    cleanup.push(() => {
      source.close();
      live.classList.remove('on');
    });
  }

  // ---- task page ---------------------------------------------------------------------------
  async function taskPage(jobId, taskId) {
    main.replaceChildren(h('p', { class: 'muted' }, 'Loading task…'));
    const base = 'jobs/' + enc(jobId) + '/tasks/' + enc(taskId);
    const [job, t] = await Promise.all([api('jobs/' + enc(jobId)), api(base)]);
    const artifactLink = (a) => '/api/jobs/' + enc(jobId) + '/artifact?path=' + enc(a);
    const nodes = [
      h('p', {}, h('a', { href: '#/job/' + enc(jobId) }, '← job ' + jobId)),
      h('h1', {}, 'Task ' + taskId),
      h(
        'div',
        { class: 'cards' },
        card('status', h('span', { class: 's-' + t.status }, t.status), 'task-status'),
        card('score', t.score === undefined || t.score === null ? '—' : Number(t.score).toFixed(4)),
        card('attempts', String(t.attempts)),
        card('cost', usd(t.costUsd)),
        card('tokens', String(t.tokens)),
        card('duration', dur(t.durationMs)),
        card('stop reason', t.stopReason || '—'),
      ),
    ];
    if (t.error) nodes.push(h('h2', {}, 'Error'), h('pre', {}, t.error));
    if (job.job.kind === 'evolve')
      nodes.push(
        h(
          'p',
          {},
          h(
            'a',
            { href: '#/evolve/' + enc(jobId) + '/' + enc(taskId), id: 'evolve-link' },
            'Evolution: fitness per island, lineage, diffs →',
          ),
        ),
      );
    const shots = t.artifacts.filter((a) => /\.(png|jpe?g)$/i.test(a));
    if (shots.length)
      nodes.push(
        h('h2', {}, 'Screenshots'),
        h(
          'div',
          { class: 'shots' },
          shots.map((a) =>
            h(
              'a',
              { href: artifactLink(a), target: '_blank' },
              h('img', { src: artifactLink(a), alt: a, loading: 'lazy' }),
            ),
          ),
        ),
      );
    nodes.push(
      h('h2', {}, 'Artifacts'),
      h(
        'ul',
        {},
        t.artifacts.map((a) =>
          h(
            'li',
            {},
            h(
              'a',
              { href: artifactLink(a), target: '_blank', rel: 'noopener' },
              a.split('/').slice(3).join('/'),
            ),
          ),
        ),
      ),
    );
    if (t.artifacts.length === 0) nodes.push(h('p', { class: 'muted' }, 'No artifacts.'));
    const d = t.details || {};
    const out = ['stdoutTail', 'stderrTail', 'sandboxOutput', 'testOutput'].filter(
      (k) => typeof d[k] === 'string' && d[k],
    );
    for (const k of out) nodes.push(h('h2', {}, k), h('pre', {}, d[k]));
    const traj = h('div', { id: 'trajectory' }, h('p', { class: 'muted' }, 'Loading trajectory…'));
    nodes.push(
      h('h2', {}, 'Trajectory'),
      traj,
      h('h2', {}, 'Details'),
      h('pre', {}, JSON.stringify(d, null, 2)),
    );
    main.replaceChildren(...nodes);
    const tv = await api(base + '/trajectory');
    if (tv.steps.length === 0) {
      traj.replaceChildren(h('p', { class: 'muted' }, 'No trajectory (this task ran no agent).'));
      return;
    }
    // The subagent tree: each session under the session that created or called it.
    const parents = tv.parents || {};
    const childrenOf = (parent) =>
      tv.sessions.filter((s, i) => (i === 0 ? null : parents[s] || null) === parent);
    const branch = (sessions, depth) =>
      h(
        'ul',
        { class: 'sessions' },
        sessions.map((s) =>
          h(
            'li',
            { 'data-session': s },
            (s === tv.sessions[0] ? 'root ' : 'subagent ') + s,
            depth < 20 && childrenOf(s).length > 0 ? branch(childrenOf(s), depth + 1) : null,
          ),
        ),
      );
    const tree = branch(childrenOf(null), 0);
    traj.replaceChildren(
      h(
        'p',
        {},
        tv.steps.length +
          ' steps, ' +
          tv.sessions.length +
          ' session(s), model cost ' +
          usd(tv.totalCostUsd) +
          (tv.cut ? ' (' + tv.cut + ' more steps not shown)' : ''),
      ),
      h('div', {}, h('strong', {}, 'Sessions'), tree),
      ...tv.steps.map((s) =>
        h(
          'div',
          { class: 'step', 'data-step': s.type },
          h(
            'div',
            { class: 'head' },
            h('span', { class: 'type' }, s.type),
            h('span', {}, '#' + s.seq),
            s.tool ? h('span', {}, 'tool ' + s.tool) : null,
            s.costUsd !== null
              ? h(
                  'span',
                  {
                    title: s.costEstimated
                      ? 'task cost spread evenly over its model calls'
                      : 'cost of this call',
                  },
                  (s.costEstimated ? '≈ ' : '') + usd(s.costUsd),
                )
              : null,
            s.tokens !== null ? h('span', {}, s.tokens + ' tokens') : null,
            s.sessionId && s.sessionId !== tv.sessions[0]
              ? h('span', {}, 'in ' + s.sessionId)
              : null,
            s.subagent ? h('span', {}, '→ subagent ' + s.subagent) : null,
          ),
          s.messages.map((m) =>
            h(
              'div',
              { class: 'msg' },
              h('div', { class: 'role' }, m.role),
              m.text ? h('pre', {}, m.text) : null,
              m.toolCalls.map((c) => h('pre', {}, '→ ' + c.name + '(' + c.args + ')')),
            ),
          ),
        ),
      ),
    );
    troupe.renders.task = performance.now();
  }

  // ---- evolution page ----------------------------------------------------------------------
  const PALETTE = [
    '#1f77b4',
    '#d62728',
    '#2ca02c',
    '#9467bd',
    '#ff7f0e',
    '#8c564b',
    '#e377c2',
    '#17becf',
  ];
  function svg(tag, attrs, ...children) {
    const el = document.createElementNS('http://www.w3.org/2000/svg', tag);
    for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
    for (const c of children) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
    return el;
  }
  function fitnessChart(gens) {
    const W = 760,
      H = 340,
      L = 60,
      R = 160,
      T = 16,
      B = 40;
    const islands = Math.max(0, ...gens.map((g) => g.islands.length));
    const ys = [];
    for (const g of gens)
      for (const i of g.islands) {
        if (i.best !== null) ys.push(i.best);
        if (i.mean !== null) ys.push(i.mean);
      }
    const root = svg('svg', {
      class: 'chart',
      id: 'fitness-chart',
      width: W,
      height: H,
      viewBox: '0 0 ' + W + ' ' + H,
    });
    if (ys.length === 0) {
      root.append(svg('text', { x: 20, y: 30 }, 'no scored generations yet'));
      return root;
    }
    let lo = Math.min(...ys),
      hi = Math.max(...ys);
    if (hi === lo) {
      lo -= 1;
      hi += 1;
    }
    const x0 = Math.min(...gens.map((g) => g.generation)),
      x1 = Math.max(x0 + 1, ...gens.map((g) => g.generation));
    const X = (v) => L + ((v - x0) / (x1 - x0)) * (W - L - R);
    const Y = (v) => T + (1 - (v - lo) / (hi - lo)) * (H - T - B);
    root.append(
      svg('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#999' }),
      svg('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#999' }),
    );
    for (let k = 0; k <= 4; k++) {
      const v = lo + ((hi - lo) * k) / 4;
      root.append(
        svg(
          'text',
          { x: L - 6, y: Y(v) + 4, 'text-anchor': 'end', 'font-size': 11 },
          v.toPrecision(4),
        ),
      );
    }
    root.append(
      svg(
        'text',
        { x: (L + W - R) / 2, y: H - 8, 'text-anchor': 'middle', 'font-size': 12 },
        'generation',
      ),
    );
    for (let i = 0; i < islands; i++) {
      const colour = PALETTE[i % PALETTE.length];
      for (const [key, dash] of [
        ['best', ''],
        ['mean', '4 3'],
      ]) {
        const pts = gens
          .filter((g) => g.islands[i] && g.islands[i][key] !== null)
          .map((g) => X(g.generation).toFixed(1) + ',' + Y(g.islands[i][key]).toFixed(1));
        // A dot per point, so a curve of one generation is visible too.
        if (key === 'best')
          for (const pt of pts) {
            const [cx, cy] = pt.split(',');
            root.append(svg('circle', { cx, cy, r: 3, fill: colour, 'data-point': 'island' + i }));
          }
        if (pts.length)
          root.append(
            svg('polyline', {
              points: pts.join(' '),
              fill: 'none',
              stroke: colour,
              'stroke-width': 2,
              'stroke-dasharray': dash,
              'data-series': 'island' + i + '-' + key,
            }),
          );
      }
      root.append(
        svg(
          'text',
          { x: W - R + 8, y: T + 14 + i * 16, fill: colour, 'font-size': 12 },
          'island ' + i,
        ),
      );
    }
    root.append(
      svg(
        'text',
        { x: W - R + 8, y: T + 20 + islands * 16, 'font-size': 11, fill: '#555' },
        'solid best, dashed mean',
      ),
    );
    return root;
  }
  function diffPre(text) {
    return h(
      'pre',
      { class: 'diff' },
      text.split('\n').map((l) =>
        h(
          'span',
          {
            class:
              l.startsWith('+') && !l.startsWith('+++')
                ? 'add'
                : l.startsWith('-') && !l.startsWith('---')
                  ? 'del'
                  : '',
          },
          l + '\n',
        ),
      ),
    );
  }
  /**
   * While the search runs its journal artifacts do not exist yet: draw the curves from the
   * TASK_PROGRESS events the evolve driver sends per closed generation (payload.evolve), and
   * switch to the full page (lineage, diffs) once the task has finished and stored them.
   */
  function evolveLivePage(jobId, taskId) {
    const gens = new Map();
    let attempt = 0;
    const status = h(
      'p',
      { class: 'muted', id: 'evolve-live' },
      'Waiting for the first generation…',
    );
    const chartBox = h('div', {}, fitnessChart([]));
    main.replaceChildren(
      h('p', {}, h('a', { href: '#/task/' + enc(jobId) + '/' + enc(taskId) }, '← task ' + taskId)),
      h('h1', {}, 'Evolution of ' + taskId + ' (live)'),
      status,
      h('h2', {}, 'Best and mean fitness per island'),
      chartBox,
      h('p', { class: 'muted' }, 'Lineage and code diffs appear when the task has finished.'),
    );
    troupe.evolveLive = { points: 0, history: [], finished: false };
    let drawTimer;
    function draw() {
      drawTimer = undefined;
      const list = [...gens.values()].sort((a, b) => a.generation - b.generation);
      chartBox.replaceChildren(fitnessChart(list));
      const last = list[list.length - 1];
      if (last)
        status.textContent =
          'Generation ' +
          last.generation +
          ' closed, ' +
          last.evaluations +
          ' evaluations, best ' +
          (last.bestScore === null ? '—' : Number(last.bestScore).toPrecision(5));
      troupe.evolveLive.points = list.length;
      troupe.evolveLive.history.push(list.length);
      troupe.renders.evolveLive = performance.now();
    }
    let lastSeq = 0;
    let source;
    let done = false;
    function finished() {
      if (done) return;
      done = true;
      source.close();
      live.classList.remove('on');
      troupe.evolveLive.finished = true;
      // The task stored its artifacts before its grade was recorded: show the full page (the
      // server's results cache may lag a second behind the event, hence a few tries).
      let tries = 0;
      const full = () =>
        evolvePage(jobId, taskId, false)
          .then((shown) => {
            if (shown || ++tries >= 5) {
              if (!shown) status.textContent = 'The task finished without a journal summary.';
              return;
            }
            const timer = setTimeout(full, 1500);
            cleanup.push(() => clearTimeout(timer));
          })
          .catch(fail);
      full();
    }
    function connect() {
      source = new EventSource(
        '/api/jobs/' + enc(jobId) + '/events' + (lastSeq ? '?after=' + lastSeq : ''),
      );
      source.onopen = () => live.classList.add('on');
      source.onerror = () => live.classList.remove('on');
      source.addEventListener('job', (m) => {
        const e = JSON.parse(m.data);
        if (e.seq <= lastSeq) return;
        lastSeq = e.seq;
        if (e.taskId !== taskId) return;
        if (e.type === 'TASK_GRADED' || e.type === 'TASK_FINISHED') return finished();
        const p = e.payload;
        if (e.type !== 'TASK_PROGRESS' || !p || !p.evolve) return;
        // A retried attempt starts its curves again.
        if (p.attempt > attempt) {
          attempt = p.attempt;
          gens.clear();
        }
        if (p.attempt < attempt || !Array.isArray(p.evolve.islands)) return;
        gens.set(p.evolve.generation, p.evolve);
        drawTimer ??= setTimeout(draw, 100); // a replay burst draws once
      });
      source.addEventListener('end', finished);
    }
    connect();
    cleanup.push(() => {
      done = true;
      clearTimeout(drawTimer);
      source.close();
      live.classList.remove('on');
    });
  }

  /**
   * The evolution page from the task's journal artifacts; without them (404) it follows the
   * search live when `liveAllowed`, and otherwise returns false and leaves the page as it is.
   */
  async function evolvePage(jobId, taskId, liveAllowed = true) {
    if (liveAllowed) main.replaceChildren(h('p', { class: 'muted' }, 'Loading evolution…'));
    const res = await fetch('/api/jobs/' + enc(jobId) + '/tasks/' + enc(taskId) + '/evolve', {
      credentials: 'same-origin',
    });
    if (res.status === 401) {
      location.href = '/login';
      throw new Error('logged out');
    }
    const v = await res.json();
    if (res.status === 404 && /journal-summary/.test(v.message || '')) {
      // No journal summary yet: the search is running (or has not started) — follow it live.
      if (liveAllowed) evolveLivePage(jobId, taskId);
      return false;
    }
    if (!res.ok) throw new Error(v.message || res.statusText);
    const facts = Object.entries(v.summary).filter(([, x]) => x === null || typeof x !== 'object');
    main.replaceChildren(
      h('p', {}, h('a', { href: '#/task/' + enc(jobId) + '/' + enc(taskId) }, '← task ' + taskId)),
      h('h1', {}, 'Evolution of ' + taskId),
      h('h2', {}, 'Best and mean fitness per island'),
      fitnessChart(v.generations),
      h(
        'table',
        { class: 'facts' },
        h(
          'tbody',
          {},
          facts.map(([k, x]) =>
            h('tr', {}, h('th', {}, k), h('td', { class: 'wrap' }, x === null ? '—' : String(x))),
          ),
        ),
      ),
      h('h2', {}, 'Lineage of the selected program'),
      v.lineage.length === 0
        ? h(
            'p',
            { class: 'muted' },
            'No lineage (no journal.jsonl: the job ran with saveJournal: false).',
          )
        : h(
            'table',
            { id: 'lineage' },
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                ['node', 'generation', 'island', 'operator', 'score'].map((x) => h('th', {}, x)),
              ),
            ),
            h(
              'tbody',
              {},
              v.lineage.map((n) =>
                h(
                  'tr',
                  {},
                  h('td', {}, n.id),
                  h('td', {}, n.generation),
                  h('td', {}, n.island),
                  h('td', {}, n.operator),
                  h('td', {}, n.score === null ? '—' : n.score.toPrecision(5)),
                ),
              ),
            ),
          ),
      h('h2', {}, 'Code diffs, parent → child'),
      ...v.lineage
        .filter((n) => n.diffFromParent)
        .map((n) =>
          h(
            'div',
            { class: 'step' },
            h(
              'div',
              { class: 'head' },
              h('span', { class: 'type' }, n.id),
              h('span', {}, n.operator),
            ),
            diffPre(n.diffFromParent),
          ),
        ),
    );
    troupe.renders.evolve = performance.now();
    return true;
  }

  // ---- nodes and budget ----------------------------------------------------------------------
  function nodesPage() {
    const tbody = h('tbody', { id: 'nodes-body' });
    main.replaceChildren(
      h('h1', {}, 'Nodes'),
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [
              'Host',
              'State',
              'Kinds',
              'Slots used / total',
              'CPU',
              'Memory',
              'Backends',
              'Heartbeat',
              '',
            ].map((x) => h('th', {}, x)),
          ),
        ),
        tbody,
      ),
    );
    // Heartbeat ages move with the clock, not with updates: redrawn every second from the list.
    let nodes = [];
    const list = liveList(
      'nodes',
      (n) => n.hostId,
      (all) => {
        nodes = all.sort((a, b) => (a.hostId < b.hostId ? -1 : 1));
        draw();
      },
    );
    const ago = (ms) =>
      ms ? Math.max(0, Math.round((list.serverNow() - ms) / 1000)) + ' s ago' : '—';
    const ticker = setInterval(() => {
      for (const td of tbody.querySelectorAll('td[data-heartbeat]')) {
        td.textContent = ago(Number(td.getAttribute('data-heartbeat')));
      }
    }, 1000);
    cleanup.push(() => clearInterval(ticker));
    function draw() {
      tbody.replaceChildren(
        ...nodes.map((n) => {
          const slots = Object.keys(n.slots)
            .map((k) => k + ' ' + (n.used[k] || 0) + '/' + n.slots[k])
            .join(', ');
          const saturated = Object.keys(n.slots).some(
            (k) => (n.used[k] || 0) >= n.slots[k] && n.slots[k] > 0,
          );
          return h(
            'tr',
            { 'data-host': n.hostId },
            h('td', {}, n.hostId),
            h('td', {}, String(n.state).replace('NODE_', '')),
            h('td', { class: 'wrap' }, n.kinds.join(', ')),
            h('td', { class: saturated ? 'error' : '' }, slots + (saturated ? ' (saturated)' : '')),
            h('td', {}, n.cpu),
            h('td', {}, n.memMb + ' MB'),
            h('td', {}, n.backends.join(', ')),
            h('td', { 'data-heartbeat': n.lastHeartbeatUnixMs }, ago(n.lastHeartbeatUnixMs)),
            h(
              'td',
              {},
              troupe.info.allowActions && String(n.state) === 'NODE_READY'
                ? h(
                    'button',
                    { class: 'action', onclick: () => action('nodes/' + enc(n.hostId) + '/drain') },
                    'Drain',
                  )
                : null,
            ),
          );
        }),
      );
    }
  }
  function budgetBar(spent, reserved, limit) {
    if (limit === null || limit === undefined || limit <= 0) return '—';
    return bar(spent + reserved, spent, limit);
  }
  function budgetPage() {
    const cards = h('div', { class: 'cards', id: 'budget-cards' });
    const scopes = h('tbody', { id: 'budget-body' });
    const held = h('tbody', { id: 'reservations-body' });
    const none = h('p', { class: 'muted', id: 'reservations-none' }, 'No reservation is held.');
    main.replaceChildren(
      h('h1', {}, 'Budget'),
      cards,
      h('h2', {}, 'Scopes'),
      h(
        'table',
        { id: 'budget' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            [
              'Scope',
              'Job',
              'Spent',
              'Reserved',
              'Limit (USD)',
              'Tokens spent / limit',
              'Calls',
              'Spent + reserved vs limit',
            ].map((x) => h('th', {}, x)),
          ),
        ),
        scopes,
      ),
      h('h2', {}, 'Reservations held by model calls in flight'),
      h(
        'table',
        { id: 'reservations' },
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            ['Reservation', 'Scope', 'USD', 'Tokens', 'Holder', 'Expires in'].map((x) =>
              h('th', {}, x),
            ),
          ),
        ),
        held,
      ),
      none,
      h(
        'p',
        { class: 'muted' },
        'From the coordinator’s budget ledgers (WatchBudget), updated as they change; a search’s scopes, held in its job’s own ledger, are listed under the job. A model call reserves its worst case before it is sent and settles with what it cost.',
      ),
    );
    // Kept by push (WatchBudget and the newest jobs, relayed as one list of keyed entries):
    // scopes and reservations of every ledger, and the jobs that name them.
    let entries = [];
    const list = liveList(
      'budget',
      (e) => e.key,
      (all) => {
        entries = all;
        draw();
      },
    );
    const expiresIn = (ms) => dur(Math.max(0, ms - list.serverNow()));
    // Times to expiry move with the clock, not with updates.
    const ticker = setInterval(() => {
      for (const td of held.querySelectorAll('td[data-expires]')) {
        td.textContent = expiresIn(Number(td.getAttribute('data-expires')));
      }
    }, 1000);
    cleanup.push(() => clearInterval(ticker));
    function scopeRow(s, job, search) {
      return h(
        'tr',
        {
          'data-scope': s.scope,
          'data-ledger': s.ledger,
          class: (s.exhausted ? 'error' : '') + (search ? ' search-scope' : ''),
        },
        h('td', {}, search ? '└ ' + s.scope + ' (search)' : s.scope),
        h('td', {}, job ? h('a', { href: '#/job/' + enc(job.jobId) }, job.name) : '—'),
        h('td', {}, usd(s.spent.usd)),
        h('td', {}, usd(s.reserved.usd)),
        h('td', {}, usd(s.limit.usd)),
        h('td', {}, s.spent.tokens + ' / ' + (s.limit.tokens === undefined ? '∞' : s.limit.tokens)),
        h('td', {}, s.spent.calls + (s.reserved.calls ? ' (+' + s.reserved.calls + ')' : '')),
        h('td', {}, budgetBar(s.spent.usd, s.reserved.usd, s.limit.usd)),
      );
    }
    function draw() {
      const byId = (a, b) =>
        a.scope !== b.scope ? (a.scope < b.scope ? -1 : 1) : a.ledger < b.ledger ? -1 : 1;
      const all = entries.filter((e) => e.type === 'scope').sort(byId);
      const cluster = all.filter((s) => s.ledger === 'cluster');
      // A search's scopes live in its job's own ledger: shown under the job's row.
      const searches = all.filter((s) => s.ledger !== 'cluster');
      const reservations = entries
        .filter((e) => e.type === 'reservation')
        .sort((a, b) =>
          a.ledger !== b.ledger
            ? a.ledger === 'cluster'
              ? -1
              : b.ledger === 'cluster'
                ? 1
                : a.ledger < b.ledger
                  ? -1
                  : 1
            : a.id.length - b.id.length || (a.id < b.id ? -1 : 1),
        );
      const jobs = new Map(
        entries.filter((e) => e.type === 'job').map((j) => ['job:' + j.jobId, j]),
      );
      const root = cluster.find((s) => s.parent === '') || null;
      cards.replaceChildren(
        card('spent (cluster)', usd(root ? root.spent.usd : 0), 'budget-spent'),
        card('reserved now', usd(root ? root.reserved.usd : 0), 'budget-reserved'),
        card('open reservations', reservations.length, 'budget-open'),
        card('scopes', all.length),
      );
      const shown = new Set();
      const underJob = (scope, job) =>
        searches
          .filter((s) => s.parent === scope)
          .map((s) => {
            shown.add(s);
            return scopeRow(s, job, true);
          });
      const rows = [];
      for (const s of cluster) {
        const job = jobs.get(s.scope);
        rows.push(scopeRow(s, job, false));
        if (s.scope.startsWith('job:')) rows.push(...underJob(s.scope, job));
      }
      // Finished jobs' scopes, folded into the cluster's by the ledger: from the job records.
      const inLedger = new Set(cluster.map((s) => s.scope));
      for (const [scope, c] of jobs) {
        if (inLedger.has(scope) || !c.budgeted) continue;
        rows.push(
          h(
            'tr',
            { 'data-scope': scope, 'data-closed': '' },
            h('td', {}, scope + ' (closed)'),
            h('td', {}, h('a', { href: '#/job/' + enc(c.jobId) }, c.name)),
            h('td', {}, usd(c.spentUsd)),
            h('td', {}, '—'),
            h('td', {}, usd(c.limitUsd)),
            h('td', {}, '— / ' + (c.limitTokens === null ? '∞' : c.limitTokens)),
            h('td', {}, '—'),
            h('td', {}, budgetBar(c.spentUsd, 0, c.limitUsd)),
          ),
        );
        rows.push(...underJob(scope, c));
      }
      for (const s of searches) if (!shown.has(s)) rows.push(scopeRow(s, jobs.get(s.parent), true));
      scopes.replaceChildren(...rows);
      held.replaceChildren(
        ...reservations.map((r) =>
          h(
            'tr',
            { 'data-reservation': r.id, 'data-ledger': r.ledger },
            h('td', {}, r.id),
            h('td', {}, r.scope + (r.ledger !== 'cluster' ? ' (ledger ' + r.ledger + ')' : '')),
            h('td', {}, usd(r.usd)),
            h('td', {}, r.tokens),
            h('td', { class: 'wrap' }, r.holder),
            h('td', { 'data-expires': r.expiresUnixMs }, expiresIn(r.expiresUnixMs)),
          ),
        ),
      );
      none.hidden = reservations.length > 0;
      troupe.renders.budget = performance.now();
    }
  }

  // ---- router --------------------------------------------------------------------------------
  async function route() {
    for (const c of cleanup) c();
    cleanup = [];
    const parts = location.hash.replace(/^#\/?/, '').split('/').map(decodeURIComponent);
    try {
      if (parts[0] === 'job' && parts[1]) jobPage(parts[1]);
      else if (parts[0] === 'task' && parts[2]) await taskPage(parts[1], parts.slice(2).join('/'));
      else if (parts[0] === 'evolve' && parts[2])
        await evolvePage(parts[1], parts.slice(2).join('/'));
      else if (parts[0] === 'nodes') nodesPage();
      else if (parts[0] === 'budget') budgetPage();
      else await jobsPage();
    } catch (e) {
      fail(e);
    }
  }
  window.addEventListener('hashchange', route);
  api('info')
    .then((info) => {
      troupe.info = info;
    })
    .catch(() => undefined)
    .finally(route);
})();
