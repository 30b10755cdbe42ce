// The /ui page: draws one thread's checkpoint tree from the service's tree and
// checkpoint routes, and shows a checkpoint's metadata, channel sizes and
// pending writes, and their values as the service decodes them for display
// (messages as a conversation); its Memory view lists the Store's namespaces and a
// namespace's items through the batch route. Read-only; no dependencies, no
// build step, no other origin. The server names the views it offers in the
// body's data-views.
'use strict';

(() => {
  const ROW = 26; // px per checkpoint row
  const LANE = 18; // px per branch column
  const PAD = 16; // px left of lane 0 and above row 0
  const DOT = 5; // node radius
  const KEY_STORAGE = 'saver.apiKey';
  const RECENT_TUPLES = 200; // the most checkpoints read to list recent threads
  const RECENT_THREADS = 50;
  const SVG = 'http://www.w3.org/2000/svg'; // a namespace name, never fetched
  const NS_LIMIT = 1000; // namespaces listed at once; a prefix narrows them
  const ITEM_PAGE = 50; // items per page
  const MAX_OFFSET = 10000; // the service's largest search offset
  const VALUE_CHARS = 4000; // of a value's formatted JSON shown; the rest is cut

  const $ = (sel) => document.querySelector(sel);
  const pick = $('#pick');
  const threadInput = $('#thread');
  const recent = $('#recent-threads');
  const keyInput = $('#key');
  const statusEl = $('#status');
  const graph = $('#graph');
  const details = $('#details');
  const nsList = $('#ns-list');
  const nsPrefix = $('#ns-prefix');
  const itemsEl = $('#items');
  const views = (document.body.dataset.views || '').split(' ').filter(Boolean);

  let view = null; // {tid, nodes, byKey, head} of the thread on screen
  let loads = 0; // bumps on every thread load; stale answers are dropped
  let detailLoads = 0;
  let nsLoads = 0;
  let itemLoads = 0;

  // ---- helpers ---------------------------------------------------------------

  // h builds an element: h('td', {class: 'n'}, 'text', child, ...). Text goes
  // in as text nodes, never as markup.
  function h(tag, attrs, ...kids) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null && v !== false) el.setAttribute(k, v === true ? '' : v);
    }
    el.append(...kids.flat().filter((k) => k !== null && k !== undefined && k !== false));
    return el;
  }

  function s(tag, attrs, ...kids) {
    const el = document.createElementNS(SVG, tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v !== undefined && v !== null) el.setAttribute(k, v);
    }
    el.append(...kids.filter((k) => k !== null && k !== undefined));
    return el;
  }

  function setStatus(text, kind) {
    statusEl.textContent = text;
    statusEl.className = kind || '';
  }

  const keyOf = (ns, id) => `${ns}\u0000${id}`;
  const nsName = (ns) => ns.split('|').pop().split(':')[0];

  // bytes of a base64 string without decoding it.
  function b64Bytes(b64) {
    if (!b64) return 0;
    const pad = b64.endsWith('==') ? 2 : b64.endsWith('=') ? 1 : 0;
    return Math.floor((b64.length * 3) / 4) - pad;
  }

  function fmtBytes(n) {
    if (n < 1024) return `${n} B`;
    if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KiB`;
    return `${(n / 1024 / 1024).toFixed(1)} MiB`;
  }

  // api calls a /v1 route relative to the page, so a service mounted under a
  // prefix works too, with the key kept for this tab.
  async function api(path, body) {
    const headers = { Accept: 'application/json' };
    const key = sessionStorage.getItem(KEY_STORAGE);
    if (key) headers.Authorization = `Bearer ${key}`;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(new URL(path, document.baseURI), {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      cache: 'no-store',
      credentials: 'omit',
    });
    let data = null;
    try {
      data = await res.json();
    } catch {
      // not JSON: reported below by status
    }
    if (!res.ok) {
      const err = new Error((data && data.error && data.error.message) || `HTTP ${res.status}`);
      err.status = res.status;
      throw err;
    }
    return data;
  }

  const threadPath = (tid) => `v1/threads/${encodeURIComponent(tid)}`;

  // ---- the model -------------------------------------------------------------

  // build links the entries (parents before children) and works out, for each
  // checkpoint, what it is part of:
  //   live      on the live path, from the root to the head;
  //   abandoned a root-graph checkpoint off the live path, or a subgraph run
  //             whose result was abandoned;
  //   sub       a subgraph run of the live path (or of nothing we can tell).
  function build(tree) {
    const nodes = tree.nodes.map((e, row) => ({
      ...e,
      row,
      key: keyOf(e.ns, e.id),
      depth: e.ns ? e.ns.split('|').length : 0,
      up: null,
      children: [],
    }));
    const byKey = new Map(nodes.map((n) => [n.key, n]));
    for (const n of nodes) {
      n.up = n.parent ? byKey.get(keyOf(n.parent_ns, n.parent)) || null : null;
      if (n.up) n.up.children.push(n);
    }
    // next: the child that continues a checkpoint's own graph, drawn in its
    // column: the live one, else the newest (children come in id order).
    for (const n of nodes) {
      const same = n.children.filter((c) => c.ns === n.ns);
      n.next = same.find((c) => c.on_live_path) || same[same.length - 1] || null;
    }
    // A subtree is a run of rows; note where it ends and its newest id.
    for (let i = nodes.length - 1; i >= 0; i--) {
      const n = nodes[i];
      n.end = n.row;
      n.maxId = n.id;
      for (const c of n.children) {
        n.end = Math.max(n.end, c.end);
        if (c.maxId > n.maxId) n.maxId = c.maxId;
      }
    }
    // top: the first checkpoint of the outermost subgraph run a node is in
    // (parents come first, so a parent's is known).
    for (const n of nodes) n.top = n.up && n.up.ns !== '' ? n.up.top : n;
    const head = tree.head ? byKey.get(keyOf(tree.head.ns, tree.head.id)) || null : null;
    for (const n of nodes) n.kind = kindOf(n, head);
    return { tid: tree.thread_id, nodes, byKey, head, lanes: layout(nodes) };
  }

  // kindOf: see build. LangGraph records no link from a subgraph run to the
  // parent-graph checkpoint it produced, but checkpoint ids grow with time:
  // the run's result is the first "loop" child of the checkpoint that ran it
  // created after the run's last checkpoint. With none, the run is current
  // only if that checkpoint is the head (it stopped inside the subgraph).
  function kindOf(n, head) {
    if (n.on_live_path) return 'live';
    if (n.ns === '') return 'abandoned';
    const top = n.top;
    const runner = top.up;
    if (!runner) return 'sub';
    const result = runner.children.find(
      (c) => c.ns === '' && c.source === 'loop' && c.id > top.maxId,
    );
    if (result) return result.on_live_path ? 'sub' : 'abandoned';
    return runner === head ? 'sub' : 'abandoned';
  }

  // layout gives each node a column, git-graph style: a chain of checkpoints
  // that continue one another shares a column and the live path's is column
  // 0. Root-graph chains come first, each in the leftmost column right of its
  // parent's that is free from the parent's row to the chain's last row; then
  // subgraph chains, right of every column busy over their rows, so that a
  // subgraph's band never covers another branch.
  function layout(nodes) {
    const chains = [];
    for (const n of nodes) {
      if (n.up && n.up.next === n) continue;
      const chain = { nodes: [], start: n.up ? n.up.row : n.row, first: n.row, up: n.up };
      for (let m = n; m; m = m.next) {
        chain.nodes.push(m);
        m.chain = chain;
      }
      chain.end = chain.nodes[chain.nodes.length - 1].row;
      chain.live = n.on_live_path;
      chain.root = n.ns === '';
      chains.push(chain);
    }
    chains.sort(
      (a, b) => b.root - a.root || b.live - a.live || a.start - b.start || a.first - b.first,
    );
    const placed = [];
    const overlaps = (a, b) => a.start <= b.end && b.start <= a.end;
    let lanes = 1;
    for (const c of chains) {
      let col = c.up ? c.up.chain.lane + 1 : 0;
      if (!c.root) {
        for (const p of placed) if (overlaps(p, c)) col = Math.max(col, p.lane + 1);
      }
      while (placed.some((p) => p.lane === col && overlaps(p, c))) col++;
      c.lane = col;
      placed.push(c);
      lanes = Math.max(lanes, col + 1);
    }
    for (const n of nodes) n.lane = n.chain.lane;
    return lanes;
  }

  // ---- drawing ---------------------------------------------------------------

  const cx = (lane) => PAD + lane * LANE;
  const cy = (row) => PAD + row * ROW + ROW / 2;

  function describe(n, head) {
    const bits = [`step ${n.step}`, n.source || 'no source'];
    if (n.status !== 'ok') bits.push(n.status);
    if (n.kind === 'abandoned') bits.push('abandoned');
    if (n === head) bits.push('head');
    if (n.orphan) bits.push('orphan');
    return bits;
  }

  function draw(model) {
    const { nodes, head, lanes } = model;
    const textX = cx(lanes - 1) + LANE + 8;
    let width = textX + 600; // until the labels are measured
    const height = PAD * 2 + nodes.length * ROW;
    const svg = s('svg', {
      width,
      height,
      viewBox: `0 0 ${width} ${height}`,
      role: 'listbox',
      'aria-label': `Checkpoints of thread ${model.tid}`,
      class: 'tree',
    });
    const bands = s('g', { class: 'bands' });
    const edges = s('g', { class: 'edges', 'aria-hidden': 'true' });
    const rows = s('g', { class: 'rows' });
    svg.append(bands, edges, rows);

    // A band behind each subgraph run, nested bands for nested subgraphs.
    for (const n of nodes) {
      if (n.ns === '' || (n.up && n.up.ns === n.ns)) continue;
      let lo = n.lane;
      for (let r = n.row; r <= n.end; r++) lo = Math.min(lo, nodes[r].lane);
      const x = cx(lo) - LANE / 2 + (n.depth - 1) * 3;
      bands.append(
        s(
          'rect',
          {
            class: `band ${n.kind}`,
            x,
            y: cy(n.row) - ROW / 2 + 1,
            width: width - x - 4 - (n.depth - 1) * 3,
            'data-inset': (n.depth - 1) * 3,
            height: (n.end - n.row + 1) * ROW - 2,
            rx: 6,
          },
          s('title', {}, `subgraph ${n.ns}`),
        ),
      );
    }

    for (const n of nodes) {
      if (!n.up) continue;
      const x1 = cx(n.up.lane);
      const y1 = cy(n.up.row);
      const x2 = cx(n.lane);
      const y2 = cy(n.row);
      let d = `M${x1} ${y1}`;
      if (x1 === x2) d += ` L${x2} ${y2}`;
      else {
        const yb = y1 + ROW;
        d += ` C${x1} ${y1 + ROW * 0.7} ${x2} ${yb - ROW * 0.7} ${x2} ${yb}`;
        if (y2 > yb) d += ` L${x2} ${y2}`;
      }
      const cross = n.up.ns !== n.ns ? ' cross' : '';
      edges.append(s('path', { d, class: `edge ${n.kind}${cross}` }));
    }

    for (const n of nodes) {
      const y = cy(n.row);
      const label = describe(n, head);
      const classes = ['node', n.kind, `status-${n.status}`];
      if (n === head) classes.push('head');
      if (n.orphan) classes.push('orphan');
      const g = s('g', {
        class: classes.join(' '),
        'data-checkpoint-id': n.id,
        'data-ns': n.ns,
        'data-step': String(n.step),
        'data-status': n.status,
        'data-kind': n.kind,
        role: 'option',
        'aria-selected': 'false',
        'aria-label': `${label.join(', ')}${n.ns ? `, subgraph ${nsName(n.ns)}` : ''}, ${n.id}`,
        tabindex: '-1',
      });
      n.el = g;
      g.append(
        s(
          'title',
          {},
          `${n.id}\n${n.ns ? `namespace ${n.ns}` : 'root graph'}\n${label.join(' · ')}`,
        ),
        s('rect', { class: 'row-bg', x: 0, y: y - ROW / 2, width, height: ROW }),
      );
      if (n === head) g.append(s('circle', { class: 'ring', cx: cx(n.lane), cy: y, r: DOT + 4 }));
      g.append(s('circle', { class: 'dot', cx: cx(n.lane), cy: y, r: DOT }));

      const text = s('text', { class: 'label', x: textX + n.depth * 14, y, dy: '0.35em' });
      const first = n.ns !== '' && (!n.up || n.up.ns !== n.ns);
      if (first) text.append(s('tspan', { class: 'ns' }, `${nsName(n.ns)} ▸ `));
      text.append(s('tspan', { class: 'step' }, `step ${n.step}`));
      text.append(s('tspan', { class: 'source' }, ` · ${n.source || '—'}`));
      if (n.status !== 'ok') text.append(s('tspan', { class: `st ${n.status}` }, ` · ${n.status}`));
      if (n.kind === 'abandoned' && n.ns === '') text.append(s('tspan', { class: 'gone' }, ' · abandoned'));
      if (n === head) text.append(s('tspan', { class: 'tag' }, ' · head'));
      if (n.orphan) text.append(s('tspan', { class: 'tag' }, ' · orphan'));
      g.append(text);
      g.append(s('text', { class: 'id', x: textX, y, dy: '0.35em' }, n.id));
      rows.append(g);
    }

    svg.addEventListener('click', (ev) => {
      const g = ev.target.closest('.node');
      if (g) select(model.byKey.get(keyOf(g.dataset.ns, g.dataset.checkpointId)), true);
    });
    svg.addEventListener('keydown', (ev) => onKey(ev, model));
    graph.replaceChildren(svg);

    // The ids line up in a column after the longest label, once measured.
    let idX = textX + 200;
    for (const t of rows.querySelectorAll('text.label')) {
      idX = Math.max(idX, Number(t.getAttribute('x')) + t.getComputedTextLength() + 24);
    }
    for (const t of rows.querySelectorAll('text.id')) t.setAttribute('x', idX);
    let right = idX;
    for (const t of rows.querySelectorAll('text.id')) right = Math.max(right, idX + t.getComputedTextLength());
    width = Math.ceil(right + 12);
    svg.setAttribute('width', width);
    svg.setAttribute('viewBox', `0 0 ${width} ${height}`);
    for (const r of svg.querySelectorAll('.row-bg')) r.setAttribute('width', width);
    for (const b of bands.children) b.setAttribute('width', width - Number(b.getAttribute('x')) - 4 - Number(b.dataset.inset));
  }

  function onKey(ev, model) {
    const cur = document.activeElement && document.activeElement.closest('.node');
    if (!cur) return;
    const n = model.byKey.get(keyOf(cur.dataset.ns, cur.dataset.checkpointId));
    const last = model.nodes.length - 1;
    const moves = {
      ArrowDown: Math.min(n.row + 1, last),
      ArrowUp: Math.max(n.row - 1, 0),
      Home: 0,
      End: last,
      ArrowLeft: n.up ? n.up.row : n.row,
    };
    if (ev.key in moves) {
      select(model.nodes[moves[ev.key]], true);
    } else if (ev.key === 'Enter' || ev.key === ' ') {
      select(n, true);
    } else {
      return;
    }
    ev.preventDefault();
  }

  // ---- selection and the side panel -----------------------------------------

  function select(n, focus) {
    if (!n || !view) return;
    for (const el of graph.querySelectorAll('.node.selected')) {
      el.classList.remove('selected');
      el.setAttribute('aria-selected', 'false');
      el.setAttribute('tabindex', '-1');
    }
    n.el.classList.add('selected');
    n.el.setAttribute('aria-selected', 'true');
    n.el.setAttribute('tabindex', '0');
    if (focus) n.el.focus();
    else n.el.scrollIntoView({ block: 'nearest' });
    showDetails(n);
  }

  async function showDetails(n) {
    const tid = view.tid;
    const mine = ++detailLoads;
    details.setAttribute('aria-busy', 'true');
    delete details.dataset.checkpointId;
    const q = new URLSearchParams({ checkpoint_ns: n.ns, checkpoint_id: n.id });
    let t;
    let shown;
    try {
      // The values decoded by the service (valueview), next to the tuple;
      // a failure there is shown in their place, the rest still is.
      [t, shown] = await Promise.all([
        api(`${threadPath(tid)}/checkpoint?${q}`),
        api(`${threadPath(tid)}/checkpoint/values?${q}`).catch((err) => ({ error: err.message })),
      ]);
    } catch (err) {
      if (mine !== detailLoads) return;
      details.replaceChildren(h('h2', { id: 'details-title' }, 'Checkpoint'), h('p', { class: 'error' }, err.message));
      details.setAttribute('aria-busy', 'false');
      return;
    }
    if (mine !== detailLoads) return;
    // DeltaChannels hold no value at most checkpoints: LangGraph rebuilds
    // them from the writes since their snapshot, which the service counts.
    const valued = new Set(t.values.map((v) => v.channel));
    const counted = Object.keys((t.metadata || {}).counters_since_delta_snapshot || {});
    const deltaChannels = counted.filter((ch) => ch in t.channel_versions && !valued.has(ch)).sort();
    let deltas = null;
    if (deltaChannels.length) {
      try {
        deltas = await api(`${threadPath(tid)}/delta-history`, {
          checkpoint_ns: n.ns,
          checkpoint_id: n.id,
          channels: deltaChannels,
        });
      } catch (err) {
        deltas = { error: err.message };
      }
      if (mine !== detailLoads) return;
    }

    const facts = h('dl', { class: 'facts' });
    const fact = (k, ...v) => facts.append(h('dt', {}, k), h('dd', {}, ...v));
    fact('namespace', n.ns ? h('code', { title: n.ns }, n.ns) : 'root graph');
    fact('step', String(n.step));
    fact('source', n.source || '—');
    fact('status', h('span', { class: `chip ${n.status}` }, n.status));
    fact('branch', { live: 'live path', abandoned: 'abandoned', sub: 'subgraph run' }[n.kind]);
    if (n.up) {
      const b = h('button', { type: 'button', class: 'link', title: n.up.id }, n.up.id);
      b.addEventListener('click', () => select(n.up, true));
      fact('parent', b);
    } else {
      fact('parent', n.orphan ? 'missing (orphan)' : 'none (root)');
    }
    if (t.expires_at) fact('expires', new Date(t.expires_at * 1000).toISOString());

    const values = [...t.values].sort((a, b) => a.channel.localeCompare(b.channel));
    const total = values.reduce((sum, v) => sum + b64Bytes(v.value.data), 0);
    const channels = table(
      ['channel', 'version', 'type', 'bytes'],
      values.map((v) => [
        v.channel,
        h('span', { title: v.version }, v.version.replace(/^0+(?=\d)/, '')),
        v.value.type,
        fmtBytes(b64Bytes(v.value.data)),
      ]),
      'channels',
    );
    let deltaTable = null;
    if (deltas && deltas.error) {
      deltaTable = h('p', { class: 'error' }, deltas.error);
    } else if (deltas) {
      deltaTable = table(
        ['channel', 'writes', 'bytes', 'from'],
        deltaChannels.map((ch) => {
          const d = deltas.channels[ch] || { writes: [], seed: null };
          const bytes = d.writes.reduce((sum, w) => sum + b64Bytes(w.value.data), 0);
          return [ch, String(d.writes.length), fmtBytes(bytes), d.seed ? `a snapshot of ${fmtBytes(b64Bytes(d.seed.data))}` : 'the start (no snapshot yet)'];
        }),
        'deltas',
      );
    }
    const writes = table(
      ['task', 'idx', 'channel', 'type', 'bytes'],
      t.writes.map((w) => [
        h('code', { title: `${w.task_id}${w.task_path ? `\npath ${w.task_path}` : ''}` }, w.task_id.slice(0, 8)),
        String(w.idx),
        w.channel,
        w.value.type,
        fmtBytes(b64Bytes(w.value.data)),
      ]),
      'writes',
    );

    details.replaceChildren(
      h('h2', { id: 'details-title' }, 'Checkpoint'),
      h('p', { class: 'cid' }, h('code', {}, n.id)),
      facts,
      h('h3', {}, 'Metadata'),
      h('pre', { class: 'json', tabindex: '0' }, JSON.stringify(t.metadata, null, 2)),
      h('h3', {}, 'Channels ', h('small', {}, `${values.length} · ${fmtBytes(total)}`)),
      values.length ? channels : h('p', { class: 'none' }, 'No channel values.'),
      ...(deltaTable
        ? [h('h3', {}, 'DeltaChannels ', h('small', {}, 'rebuilt from the writes since their snapshot')), deltaTable]
        : []),
      h('h3', {}, 'Pending writes ', h('small', {}, String(t.writes.length))),
      t.writes.length ? writes : h('p', { class: 'none' }, 'None.'),
      ...shownSections(shown),
    );
    details.dataset.checkpointId = n.id;
    details.setAttribute('aria-busy', 'false');
  }

  // shownSections are the checkpoint's values and writes as the service
  // decoded them: each rendered (bounded by the service), the messages a
  // value holds as a conversation. All of it is stored data, added as text.
  function shownSections(shown) {
    if (shown.error) return [h('h3', {}, 'Values'), h('p', { class: 'error' }, shown.error)];
    const values = [...shown.values].sort((a, b) => a.channel.localeCompare(b.channel));
    return [
      h('h3', {}, 'Values ', h('small', {}, 'decoded for display, read-only')),
      values.length
        ? h('div', { class: 'shown-list' }, values.map((v) => shownBlock(v.channel, v)))
        : h('p', { class: 'none' }, 'No channel values.'),
      h('h3', {}, 'Writes ', h('small', {}, 'what the tasks from here wrote')),
      shown.writes.length
        ? h('div', { class: 'shown-list' }, shown.writes.map((w) => shownBlock(`${taskName(w)} → ${w.channel}`, w)))
        : h('p', { class: 'none' }, 'None.'),
    ];
  }

  // taskName is the node a write's task ran, from its path
  // ("~__pregel_pull, agent"), or its task id.
  function taskName(w) {
    const parts = (w.task_path || '').replace(/^~/, '').split(', ');
    if (parts[0] === '__pregel_pull' && parts[1]) return parts[1];
    return `task ${w.task_id.slice(0, 8)}`;
  }

  function shownBlock(label, v) {
    const body = v.messages && v.messages.length
      ? h('ol', { class: 'conversation' }, v.messages.map((m) => h(
        'li',
        { class: `msg ${m.role}`, title: m.id || null },
        h('span', { class: 'role' }, m.role),
        m.text ? h('div', { class: 'text' }, m.text) : null,
        (m.tool_calls || []).map((c) => h('div', { class: 'call' }, h('code', {}, `→ ${c}`))),
      )))
      : h('pre', { class: 'value', tabindex: '0' }, v.value);
    return h(
      'div',
      { class: 'shown', 'data-channel': v.channel },
      h('div', { class: 'label' }, h('code', {}, label), ' ', h('small', {}, `${v.type} · ${fmtBytes(v.bytes)}`)),
      body,
    );
  }

  function table(head, rows, cls) {
    return h(
      'table',
      { class: cls },
      h('thead', {}, h('tr', {}, head.map((c) => h('th', { scope: 'col' }, c)))),
      h('tbody', {}, rows.map((r) => h('tr', {}, r.map((c) => h('td', {}, c))))),
    );
  }

  // ---- memory: the Store's namespaces and items ----------------------------------

  // A namespace is written as LangGraph writes it, its labels joined by dots
  // (labels hold none).
  const nsText = (ns) => ns.join('.');
  const nsFromURL = () => new URLSearchParams(location.search).getAll('ns');

  async function storeOp(op) {
    const data = await api('v1/store/batch', { ops: [op] });
    return data.results[0];
  }

  // failed reports an error of a load in the status line.
  function failed(err) {
    if (err.status === 401) {
      setStatus('This service needs an API key: enter it above.', 'error');
      keyInput.focus();
    } else {
      setStatus(err.message, 'error');
    }
  }

  async function showNamespaces() {
    const mine = ++nsLoads;
    delete nsList.dataset.ready;
    delete nsList.dataset.error;
    nsList.setAttribute('aria-busy', 'true');
    const prefix = nsPrefix.value.split('.').filter((l) => l !== '');
    const op = { op: 'list_namespaces', limit: NS_LIMIT };
    if (prefix.length) op.match_conditions = [{ match_type: 'prefix', path: prefix }];
    let r;
    try {
      r = await storeOp(op);
    } catch (err) {
      if (mine !== nsLoads) return;
      nsList.replaceChildren();
      nsList.dataset.error = err.message;
      nsList.setAttribute('aria-busy', 'false');
      failed(err);
      return;
    }
    if (mine !== nsLoads) return;
    const namespaces = r.namespaces || [];
    const current = JSON.stringify(nsFromURL());
    nsList.replaceChildren(
      ...namespaces.map((ns) => {
        const b = h(
          'button',
          { type: 'button', class: 'ns', 'data-ns': JSON.stringify(ns), title: nsText(ns) },
          ns.flatMap((l, i) => (i ? [h('span', { class: 'sep' }, '.'), l] : [l])),
        );
        if (JSON.stringify(ns) === current) b.setAttribute('aria-current', 'true');
        b.addEventListener('click', () => pickNamespace(ns));
        return h('li', {}, b);
      }),
    );
    if (!namespaces.length) {
      nsList.append(h('li', { class: 'none' }, prefix.length ? 'No namespace under this prefix holds items.' : 'No namespace holds items yet.'));
    }
    const n = namespaces.length;
    setStatus(
      `${n} namespace${n === 1 ? '' : 's'} hold${n === 1 ? 's' : ''} items` +
        (prefix.length ? ` under ${nsText(prefix)}` : '') +
        (n === NS_LIMIT ? ` (the first ${NS_LIMIT}; narrow them with a prefix)` : ''),
    );
    nsList.dataset.ready = 'true';
    nsList.setAttribute('aria-busy', 'false');
  }

  function pickNamespace(ns) {
    const url = new URL(location.href);
    const q = new URLSearchParams({ view: 'memory' });
    for (const l of ns) q.append('ns', l);
    url.search = q.toString();
    history.pushState(null, '', url);
    for (const b of nsList.querySelectorAll('button.ns')) {
      if (b.dataset.ns === JSON.stringify(ns)) b.setAttribute('aria-current', 'true');
      else b.removeAttribute('aria-current');
    }
    showItems(ns, 0);
  }

  // clipped is a value as formatted JSON, cut to VALUE_CHARS: [text, chars cut].
  function clipped(value) {
    const text = JSON.stringify(value, null, 2);
    if (text.length <= VALUE_CHARS) return [text, 0];
    return [text.slice(0, VALUE_CHARS), text.length - VALUE_CHARS];
  }

  function itemRow(ns, it) {
    const [text, cut] = clipped(it.value);
    const below = it.namespace.slice(ns.length);
    return h(
      'tr',
      { class: 'item', 'data-key': it.key, 'data-ns': JSON.stringify(it.namespace), 'data-clipped': cut > 0 },
      h(
        'td',
        {},
        h('code', { class: 'key' }, it.key === '' ? '""' : it.key),
        below.length ? h('div', { class: 'below', title: nsText(it.namespace) }, `in …${nsText(below)}`) : null,
      ),
      h(
        'td',
        {},
        h('time', { datetime: it.updated_at, title: `created ${it.created_at}\nupdated ${it.updated_at}` },
          it.updated_at.slice(0, 19).replace('T', ' ')),
      ),
      h(
        'td',
        {},
        h('pre', { class: 'json', tabindex: '0' }, text),
        cut > 0 ? h('p', { class: 'hint clip' }, `… ${cut.toLocaleString('en')} more characters (saver inspect item shows the whole value)`) : null,
      ),
    );
  }

  async function showItems(ns, offset) {
    const mine = ++itemLoads;
    delete itemsEl.dataset.ready;
    delete itemsEl.dataset.error;
    itemsEl.setAttribute('aria-busy', 'true');
    const title = h('h2', { id: 'items-title' }, 'Items ', h('code', { title: nsText(ns) }, nsText(ns)));
    let r;
    try {
      r = await storeOp({ op: 'search', namespace_prefix: ns, limit: ITEM_PAGE, offset });
    } catch (err) {
      if (mine !== itemLoads) return;
      itemsEl.replaceChildren(title, h('p', { class: 'error' }, err.message));
      itemsEl.dataset.error = err.message;
      itemsEl.setAttribute('aria-busy', 'false');
      failed(err);
      return;
    }
    if (mine !== itemLoads) return;
    const items = r.items || [];
    const pager = h('p', { class: 'pager' });
    if (offset > 0) {
      const prev = h('button', { type: 'button', class: 'prev' }, `← newer ${ITEM_PAGE}`);
      prev.addEventListener('click', () => showItems(ns, Math.max(0, offset - ITEM_PAGE)));
      pager.append(prev);
    }
    if (items.length === ITEM_PAGE && offset + ITEM_PAGE <= MAX_OFFSET) {
      const next = h('button', { type: 'button', class: 'next' }, `older ${ITEM_PAGE} →`);
      next.addEventListener('click', () => showItems(ns, offset + ITEM_PAGE));
      pager.append(next);
    }
    itemsEl.replaceChildren(
      title,
      h('p', { class: 'hint' }, items.length
        ? `Items ${offset + 1}–${offset + items.length}, newest update first, with those of the namespaces under it.`
        : offset ? 'No more items.' : 'No items: they may have expired or been deleted.'),
      items.length
        ? h(
          'table',
          { class: 'items' },
          h('thead', {}, h('tr', {}, ['key', 'updated (UTC)', 'value'].map((c) => h('th', { scope: 'col' }, c)))),
          h('tbody', {}, items.map((it) => itemRow(ns, it))),
        )
        : null,
      pager,
    );
    itemsEl.dataset.ns = JSON.stringify(ns);
    itemsEl.dataset.offset = String(offset);
    itemsEl.dataset.ready = 'true';
    itemsEl.setAttribute('aria-busy', 'false');
  }

  function resetItems() {
    ++itemLoads;
    delete itemsEl.dataset.ns;
    delete itemsEl.dataset.ready;
    itemsEl.replaceChildren(
      h('h2', { id: 'items-title' }, 'Items'),
      h('p', { class: 'hint' }, 'Pick a namespace to see its items (and those of the namespaces under it), newest update first.'),
    );
  }

  // ---- views -----------------------------------------------------------------

  // currentView is the view the URL asks for, among those the server offers.
  function currentView() {
    const asked = new URLSearchParams(location.search).get('view');
    if (asked === 'memory' && views.includes('memory')) return 'memory';
    return views.includes('tree') ? 'tree' : 'memory';
  }

  function showView(v) {
    for (const el of document.querySelectorAll('main[data-view], form[data-view]')) el.hidden = el.dataset.view !== v;
    for (const a of document.querySelectorAll('#views a')) {
      a.hidden = views.length < 2 || !views.includes(a.dataset.view);
      if (a.dataset.view === v) a.setAttribute('aria-current', 'page');
      else a.removeAttribute('aria-current');
    }
    document.title = v === 'memory' ? 'saver · memory' : 'saver · checkpoint tree';
  }

  // ---- loading ---------------------------------------------------------------

  async function show(tid) {
    const mine = ++loads;
    view = null;
    threadInput.value = tid;
    delete graph.dataset.ready;
    delete graph.dataset.error;
    graph.setAttribute('aria-busy', 'true');
    setStatus(`Loading ${tid}…`);
    let model;
    try {
      model = build(await api(`${threadPath(tid)}/tree`));
    } catch (err) {
      if (mine !== loads) return;
      graph.replaceChildren();
      graph.dataset.error = err.message;
      graph.setAttribute('aria-busy', 'false');
      if (err.status === 401) {
        setStatus('This service needs an API key: enter it above.', 'error');
        keyInput.focus();
      } else {
        setStatus(err.message, 'error');
      }
      return;
    }
    if (mine !== loads) return;
    view = model;
    draw(model);
    const count = (k) => model.nodes.filter((n) => n.kind === k).length;
    const errors = model.nodes.filter((n) => n.status === 'error').length;
    const bits = [
      `${model.nodes.length} checkpoint${model.nodes.length === 1 ? '' : 's'}`,
      `${count('live')} on the live path`,
      `${count('abandoned')} abandoned`,
    ];
    if (count('sub')) bits.push(`${count('sub')} in subgraph runs`);
    if (errors) bits.push(`${errors} error${errors === 1 ? '' : 's'}`);
    if (model.head) bits.push(`head at step ${model.head.step} (${model.head.status})`);
    setStatus(bits.join(' · '));
    graph.dataset.ready = 'true';
    graph.setAttribute('aria-busy', 'false');
    select(model.head || model.nodes[model.nodes.length - 1], false);
  }

  // loadRecent fills the thread picker with the threads of the newest
  // checkpoints (a few pages of search at most).
  async function loadRecent() {
    const seen = new Set();
    let cursor = null;
    let read = 0;
    try {
      do {
        const page = await api('v1/checkpoints/search', { limit: RECENT_TUPLES - read, cursor });
        for (const t of page.tuples) seen.add(t.thread_id);
        read += page.tuples.length;
        cursor = page.next_cursor;
      } while (cursor && read < RECENT_TUPLES && seen.size < RECENT_THREADS);
    } catch {
      return; // no key yet, or no store: the picker simply stays empty
    }
    recent.replaceChildren(...[...seen].slice(0, RECENT_THREADS).map((id) => h('option', { value: id })));
  }

  function fromURL() {
    const v = currentView();
    showView(v);
    if (v === 'memory') {
      showNamespaces();
      const ns = nsFromURL();
      if (ns.length) showItems(ns, 0);
      else resetItems();
      return;
    }
    const tid = new URLSearchParams(location.search).get('thread');
    if (tid) show(tid);
    else {
      threadInput.value = '';
      graph.replaceChildren();
      setStatus('Pick a thread to see its checkpoints.');
    }
  }

  pick.addEventListener('submit', (ev) => {
    ev.preventDefault();
    const tid = threadInput.value.trim();
    if (!tid) return;
    const url = new URL(location.href);
    url.search = new URLSearchParams({ thread: tid }).toString();
    history.pushState(null, '', url);
    show(tid);
  });

  $('#auth').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const key = keyInput.value.trim();
    if (key) sessionStorage.setItem(KEY_STORAGE, key);
    else sessionStorage.removeItem(KEY_STORAGE);
    if (currentView() === 'memory') {
      fromURL();
      return;
    }
    loadRecent();
    if (threadInput.value.trim()) show(threadInput.value.trim());
  });

  $('#ns-filter').addEventListener('submit', (ev) => {
    ev.preventDefault();
    showNamespaces();
  });

  $('#forget').addEventListener('click', () => {
    sessionStorage.removeItem(KEY_STORAGE);
    keyInput.value = '';
  });

  window.addEventListener('popstate', fromURL);
  keyInput.value = sessionStorage.getItem(KEY_STORAGE) || '';
  fromURL();
  if (views.includes('tree')) loadRecent();
})();
