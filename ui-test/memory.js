#!/usr/bin/env node
// Checks the /ui page's Memory view in Debian's headless Chromium: it opens
// /ui?view=memory, checks that the namespace list holds --namespace, clicks
// it, and checks that the items table shows --items items, each with its
// key, update time and value as formatted JSON (cut past the page's bound).
// Prints a JSON summary on the last line of stdout (the items as the page
// shows them, their values parsed unless cut); failures go to stderr with
// exit status 1 (2 for bad usage).
//
//   node ui-test/memory.js --url http://127.0.0.1:7878 --namespace '["users","u1"]' \
//     --items 3 [--key KEY] [--screenshot .cache/ui/memory.png | --no-screenshot]
'use strict';

const path = require('node:path');
const { parseArgs } = require('node:util');
const { check, loopback, main, screenshot } = require('./browser');

const USAGE =
  'usage: node ui-test/memory.js --url URL --namespace JSON --items N [--key KEY] ' +
  '[--screenshot FILE | --no-screenshot] [--timeout-ms MS]';

function options() {
  const { values } = parseArgs({
    options: {
      url: { type: 'string' },
      namespace: { type: 'string' },
      items: { type: 'string' },
      key: { type: 'string' },
      screenshot: { type: 'string', default: path.join(__dirname, '..', '.cache', 'ui', 'memory.png') },
      'no-screenshot': { type: 'boolean', default: false },
      'timeout-ms': { type: 'string', default: '30000' },
    },
    strict: true,
  });
  const items = Number(values.items);
  const timeout = Number(values['timeout-ms']);
  let namespace;
  try {
    namespace = JSON.parse(values.namespace || '');
  } catch {
    throw new Error(USAGE);
  }
  if (!values.url || !Array.isArray(namespace) || !Number.isInteger(items) || items < 0 || !(timeout > 0)) {
    throw new Error(USAGE);
  }
  return {
    base: loopback(values.url),
    namespace,
    items,
    key: values.key,
    screenshot: values['no-screenshot'] ? null : path.resolve(values.screenshot),
    timeout,
  };
}

async function run(opts, page) {
  const wait = (sel) => page.waitForSelector(sel, { timeout: opts.timeout, state: 'attached' });
  const nsJSON = JSON.stringify(opts.namespace);

  const url = new URL('ui', opts.base);
  url.searchParams.set('view', 'memory');
  await page.goto(url.href, { timeout: opts.timeout });
  check(await page.locator('#memory-view').isVisible(), 'the Memory view is not shown');
  check(!(await page.locator('#tree-view').isVisible()), 'the tree view is shown with the Memory view');

  if (opts.key) {
    await wait('#ns-list[data-error]');
    const said = await page.locator('#status').innerText();
    check(/API key/.test(said), `without a key the page should ask for one, it says: ${said}`);
    await page.fill('#key', opts.key);
    await page.click('#auth button[type=submit]');
  }
  await wait('#ns-list[data-ready], #ns-list[data-error]');
  const error = await page.locator('#ns-list').getAttribute('data-error');
  check(error === null, `the page shows an error: ${error}`);

  const namespaces = (await page.locator('#ns-list button.ns').evaluateAll((bs) => bs.map((b) => b.dataset.ns))).map(
    (s) => JSON.parse(s),
  );
  check(
    namespaces.some((ns) => JSON.stringify(ns) === nsJSON),
    `the namespace list lacks ${nsJSON}: ${JSON.stringify(namespaces)}`,
  );
  const button = page.locator('#ns-list button.ns').filter({ hasText: opts.namespace.join('.') }).first();
  await button.click();
  await wait('#items[data-ready]');
  check((await page.locator('#items').getAttribute('data-ns')) === nsJSON, 'the items shown are of another namespace');
  check(new URL(page.url()).searchParams.getAll('ns').join('.') === opts.namespace.join('.'), `the URL does not name the namespace: ${page.url()}`);

  const rows = await page.locator('#items tr.item').evaluateAll((trs) =>
    trs.map((tr) => ({
      key: tr.dataset.key,
      namespace: JSON.parse(tr.dataset.ns),
      updated_at: tr.querySelector('time').getAttribute('datetime'),
      shown_updated: tr.querySelector('time').innerText,
      text: tr.querySelector('pre.json').innerText,
      clipped: tr.hasAttribute('data-clipped'),
      note: (tr.querySelector('.clip') || { innerText: '' }).innerText,
    })),
  );
  check(rows.length === opts.items, `expected ${opts.items} items, the page shows ${rows.length}`);
  const items = rows.map((r) => {
    check(r.shown_updated === r.updated_at.slice(0, 19).replace('T', ' '), `item ${r.key}: updated ${r.shown_updated}, the API says ${r.updated_at}`);
    if (r.clipped) {
      check(/more characters/.test(r.note), `item ${r.key} is cut without saying so`);
      return { key: r.key, namespace: r.namespace, updated_at: r.updated_at, value: null, shown_chars: r.text.length };
    }
    check(r.text.includes('\n') || r.text === '{}', `item ${r.key}: the value is not formatted: ${r.text}`);
    return { key: r.key, namespace: r.namespace, updated_at: r.updated_at, value: JSON.parse(r.text), shown_chars: r.text.length };
  });
  await screenshot(page, opts.screenshot);
  return { namespaces, items, screenshot: opts.screenshot };
}

main(options, run).then((code) => {
  process.exitCode = code;
});
