// What the browser tests share: Debian's headless Chromium driven by
// playwright-core (no browser is downloaded), on a page that may reach the
// service only, with page errors and console errors counted as failures.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { chromium } = require('playwright-core');

const CHROMIUM = '/usr/bin/chromium';
const FLAGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

class Failure extends Error {}

function check(ok, message) {
  if (!ok) throw new Failure(message);
}

// loopback parses --url: only a service on this machine, so that a test
// never sends traffic elsewhere.
function loopback(url) {
  const base = new URL(url);
  const host = base.hostname.replace(/^\[|\]$/g, '');
  if (!(host === 'localhost' || host === '::1' || /^127\.\d+\.\d+\.\d+$/.test(host))) {
    throw new Error(`--url must be a loopback address, not ${base.hostname}`);
  }
  return base;
}

// main parses the options (options() throws on bad usage: exit 2), runs
// run(opts, page) in a fresh browser profile and prints its summary as JSON
// on the last line of stdout; a failure goes to stderr with exit status 1.
async function main(options, run) {
  let opts;
  try {
    opts = options();
  } catch (err) {
    console.error(err.message);
    return 2;
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'saver-ui-'));
  let context;
  try {
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: FLAGS,
      viewport: { width: 1360, height: 860 },
      timeout: opts.timeout,
    });
    const problems = [];
    // Nothing but the service: any other request is refused and fails the run.
    await context.route('**/*', (route) => {
      const u = new URL(route.request().url());
      if (u.origin === opts.base.origin) return route.continue();
      problems.push(`request to another origin: ${u.href}`);
      return route.abort();
    });
    const page = context.pages()[0] || (await context.newPage());
    page.on('pageerror', (err) => problems.push(`page error: ${err.message}`));
    page.on('console', (msg) => {
      // The 401 before a key is typed is expected; anything else, such as a
      // CSP violation or a missing file, is a fault.
      const refused = /^Failed to load resource: .* 401 /.test(msg.text());
      if (msg.type() === 'error' && !(opts.key && refused)) {
        problems.push(`console: ${msg.text()}`);
      }
    });
    const summary = await run(opts, page);
    check(problems.length === 0, problems.join('\n'));
    console.log(JSON.stringify(summary));
    return 0;
  } catch (err) {
    console.error(err instanceof Failure ? `FAIL: ${err.message}` : err.stack || String(err));
    return 1;
  } finally {
    if (context) await context.close().catch(() => {});
    fs.rmSync(profile, { recursive: true, force: true });
  }
}

// screenshot saves the page, whole, to file (when given).
async function screenshot(page, file) {
  if (!file) return;
  fs.mkdirSync(path.dirname(file), { recursive: true });
  await page.screenshot({ path: file, fullPage: true });
}

module.exports = { Failure, check, loopback, main, screenshot };
