#!/usr/bin/env node
// Checks the service's /ui page in Debian's headless Chromium (playwright-core
// drives it; no browser is downloaded). It opens /ui?thread=ID, waits for the
// tree, and checks that the page shows the expected number of checkpoints,
// marks the live path and the abandoned branches as the tree API says, moves
// with the keyboard, and shows a clicked checkpoint's metadata and writes;
// the summary also gives the DeltaChannels, values and messages the head's
// panel shows.
// Prints a JSON summary on the last line of stdout; failures go to stderr
// with exit status 1 (2 for bad usage).
//
//   node ui-test/tree.js --url http://127.0.0.1:7878 --thread ID --nodes 15 \
//     [--key KEY] [--screenshot .cache/ui/tree.png | --no-screenshot]
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { check, loopback, main, screenshot } = require('./browser');

const USAGE =
  'usage: node ui-test/tree.js --url URL --thread ID --nodes N [--key KEY] ' +
  '[--screenshot FILE | --no-screenshot] [--timeout-ms MS]';

function options() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      thread: { type: 'string' },
      nodes: { type: 'string' },
      key: { type: 'string' },
      screenshot: { type: 'string', default: path.join(__dirname, '..', '.cache', 'ui', 'tree.png') },
      'no-screenshot': { type: 'boolean', default: false },
      'timeout-ms': { type: 'string', default: '30000' },
    },
    strict: true,
  });
  const nodes = Number(values.nodes);
  const timeout = Number(values['timeout-ms']);
  if (!values.url || !values.thread || !Number.isInteger(nodes) || nodes < 0 || !(timeout > 0)) {
    throw new Error(USAGE);
  }
  return {
    base: loopback(values.url),
    thread: values.thread,
    nodes,
    key: values.key,
    screenshot: values['no-screenshot'] ? null : path.resolve(values.screenshot),
    timeout,
  };
}

// api reads a /v1 route directly, for the answers the page is checked against.
async function api(opts, route) {
  const headers = { Accept: 'application/json' };
  if (opts.key) headers.Authorization = `Bearer ${opts.key}`;
  const res = await fetch(new URL(route, opts.base), { headers });
  check(res.ok, `GET ${route}: HTTP ${res.status}`);
  return res.json();
}

async function run(opts, page) {
  const ids = (sel) => page.locator(sel).evaluateAll((els) => els.map((e) => e.dataset.checkpointId));
  const wait = (sel) => page.waitForSelector(sel, { timeout: opts.timeout, state: 'attached' });

  const url = new URL('ui', opts.base);
  url.searchParams.set('thread', opts.thread);
  await page.goto(url.href, { timeout: opts.timeout });

  if (opts.key) {
    // The service wants a key: the page says so, then draws with the typed key.
    await wait('#graph[data-error]');
    const said = await page.locator('#status').innerText();
    check(/API key/.test(said), `without a key the page should ask for one, it says: ${said}`);
    await page.fill('#key', opts.key);
    await page.click('#auth button[type=submit]');
  }
  await wait('#graph[data-ready], #graph[data-error]');
  const error = await page.locator('#graph').getAttribute('data-error');
  check(error === null, `the page shows an error: ${error}`);

  // The count.
  const shown = await page.locator('#graph .node[data-checkpoint-id]').count();
  check(shown === opts.nodes, `expected ${opts.nodes} nodes, the page shows ${shown}`);

  // The marks, against the tree API.
  const tid = encodeURIComponent(opts.thread);
  const tree = await api(opts, `v1/threads/${tid}/tree`);
  const branches = (await api(opts, `v1/threads/${tid}/tree/abandoned`)).branches;
  const live = await ids('#graph .node.live');
  const abandoned = await ids('#graph .node.abandoned');
  const wantLive = tree.nodes.filter((n) => n.on_live_path).map((n) => n.id);
  check(
    JSON.stringify(live) === JSON.stringify(wantLive),
    `live path marked ${JSON.stringify(live)}, the API says ${JSON.stringify(wantLive)}`,
  );
  for (const b of branches) {
    for (const id of b.checkpoint_ids) {
      check(abandoned.includes(id), `abandoned checkpoint ${id} is not marked abandoned`);
    }
  }
  check(!live.some((id) => abandoned.includes(id)), 'a checkpoint is marked both live and abandoned');

  // The first selection is the head, shown in the panel.
  await wait('#details[data-checkpoint-id]');
  const selected = await page.locator('#details').getAttribute('data-checkpoint-id');
  const marked = await ids('#graph .node.selected');
  check(marked.length === 1 && marked[0] === selected, `selected ${marked}, panel shows ${selected}`);
  if (tree.head) check(selected === tree.head.id, `first selection ${selected}, the head is ${tree.head.id}`);
  // The head's DeltaChannels, as the panel lists them: [channel, writes, bytes, from].
  const headDeltas = await page
    .locator('#details table.deltas tbody tr')
    .evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.innerText)));

  // The head's values as the panel shows them, decoded by the service:
  // {channel: rendering} for plain values, [role, text] for the messages of
  // its conversations, and the elements a value could have injected.
  const headValues = await page
    .locator('#details .shown pre.value')
    .evaluateAll((els) => Object.fromEntries(els.map((e) => [e.closest('.shown').dataset.channel, e.textContent])));
  const headMessages = await page
    .locator('#details .shown ol.conversation li.msg')
    .evaluateAll((lis) => lis.map((li) => [li.querySelector('.role').textContent, (li.querySelector('.text') || {}).textContent || '']));
  const injected = await page.locator('#details script, #details img, #details iframe').count();

  // The keyboard: up from the selection selects the row above.
  const rows = await ids('#graph .node');
  const at = rows.indexOf(selected);
  if (at > 0) {
    await page.locator('#graph .node.selected').focus();
    await page.keyboard.press('ArrowUp');
    await wait(`#details[data-checkpoint-id="${rows[at - 1]}"]`);
    const focused = await page.evaluate(() => document.activeElement.dataset.checkpointId);
    check(focused === rows[at - 1], `ArrowUp focused ${focused}, want ${rows[at - 1]}`);
  }

  // A click: an abandoned error if there is one, and its panel.
  let target = null;
  for (const sel of ['.node.abandoned.status-error', '.node.abandoned', '.node']) {
    target = page.locator(`#graph ${sel}`).first();
    if ((await target.count()) > 0) break;
  }
  const clicked = await target.getAttribute('data-checkpoint-id');
  const step = Number(await target.getAttribute('data-step'));
  const status = await target.getAttribute('data-status');
  await target.click();
  await wait(`#details[data-checkpoint-id="${clicked}"]`);
  const meta = JSON.parse(await page.locator('#details pre.json').innerText());
  check(meta.step === step, `panel metadata step ${meta.step}, the node says ${step}`);
  check(typeof meta.source === 'string', 'panel metadata has no source');
  const panel = await page.locator('#details').innerText();
  check(panel.includes(clicked), 'the panel does not name the clicked checkpoint');
  check(/channels/i.test(panel) && /pending writes/i.test(panel), 'the panel lacks channels or writes');
  if (status === 'error') {
    const channels = await page.locator('#details table.writes td:nth-child(3)').allInnerTexts();
    check(channels.includes('__error__'), `an error checkpoint's writes lack __error__: ${channels}`);
  }

  await screenshot(page, opts.screenshot);
  return {
    nodes: shown,
    live: live.length,
    abandoned,
    error: await ids('#graph .node[data-status="error"]'),
    interrupted: await ids('#graph .node[data-status="interrupted"]'),
    selected,
    head_deltas: headDeltas,
    head_values: headValues,
    head_messages: headMessages,
    injected,
    clicked,
    screenshot: opts.screenshot,
  };
}

main(options, run).then((code) => {
  process.exitCode = code;
});
