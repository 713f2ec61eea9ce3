#!/usr/bin/env node
// The daemon's status page in a real headless Chromium (Debian's, driven by playwright-core):
// it loads with the token from its link, shows the indexed project, and updates by itself
// after a file is added. Keeps a screenshot.
// Every indexed project is listed (those not loaded too), with its embedder and last
// activity; indexing and embedding show progress bars with percentages and time left.
// Usage: node browser_status.mjs SHIM PROJECT STATUS_URL SCREENSHOT OTHER_PROJECT
// Chromium: $AMANMCP_TEST_CHROMIUM, else /usr/bin/chromium.
import { chromium } from 'playwright-core';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [, project, url, screenshot, other] = process.argv.slice(2);
function check(cond, what, detail = '') {
  if (!cond) {
    console.log(`FAIL ${what}: ${JSON.stringify(detail).slice(0, 600)}`);
    process.exit(1);
  }
  console.log(`PASS ${what}`);
}

const browser = await chromium.launch({
  executablePath: process.env.AMANMCP_TEST_CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox'],
});
try {
  const page = await browser.newPage({ viewport: { width: 1280, height: 480 } });
  const errors = [];
  page.on('pageerror', e => errors.push(String(e)));
  const reply = await page.goto(url);
  check(reply.status() === 200, 'the page loads', reply.status());
  check((await page.title()) === 'amanmcp status', 'title', await page.title());

  const cellOf = (root, cls) =>
    page.evaluate(([root, cls]) => {
      const row = [...document.querySelectorAll('#projects tr')].find(r => r.dataset.root === root);
      return row ? row.querySelector(`td.${cls}`)?.textContent ?? null : null;
    }, [root, cls]);
  const until = async (what, f, ms = 60000) => {
    const deadline = Date.now() + ms;
    for (;;) {
      const value = await f();
      if (value) return value;
      if (Date.now() > deadline) check(false, what, await page.content());
      await new Promise(r => setTimeout(r, 100));
    }
  };
  await until('the project is listed and ready', async () => (await cellOf(project, 'ready')) === 'ready');
  const daemon = await page.textContent('#daemon');
  check(/amanmcpd .* pid \d+ .* memory \d/.test(daemon), 'daemon line with memory', daemon);
  const files = Number(await cellOf(project, 'files'));
  check(files >= 1, 'files shown', files);
  check(/indexed, 1 loaded/.test(daemon), 'indexed and loaded counted apart', daemon);
  check((await cellOf(other, 'idle')) === 'not loaded', 'a project indexed earlier is listed',
    await cellOf(other, 'state'));
  check(/ago$/.test(await cellOf(other, 'activity') || ''), 'its last activity',
    await cellOf(other, 'activity'));
  const embedder = await cellOf(project, 'embedder');
  check(embedder && embedder.length > 0, 'the embedder is named', embedder);
  check(/ago$/.test(await cellOf(project, 'activity') || ''), 'last activity shown');

  // Progress as the page draws it for a project mid-pass (the page's own renderer, fed a
  // status as /status.json gives it; read back before the next poll redraws).
  const drawn = await page.evaluate(() => {
    render({
      version: 'x', pid: 1, uptime_ms: 5000, rss_bytes: 1, projects: [{
        root: '/p', state: 'indexing', files: 10, chunks: 20, files_done: 45, files_total: 100,
        index_bytes: 1, last_pass_ms: 0, watch: 'events',
        embedding: { embedded: 250, pending: 750, chunks_per_second: 50, eta_seconds: 15,
          embedder: 'builtin', health: 'ok' },
      }],
    });
    const row = document.querySelector('#projects tr');
    const bars = [...row.querySelectorAll('progress')].map(b => [b.value, b.max]);
    return { bars, state: row.querySelector('td.state').textContent,
      vectors: row.querySelector('td.vectors').textContent };
  });
  check(JSON.stringify(drawn.bars) === '[[45,100],[250,1000]]', 'two progress bars', drawn);
  check(drawn.state.includes('45%') && drawn.vectors.includes('25%') &&
    drawn.vectors.includes('15 s left'), 'percentages and time left', drawn);

  writeFileSync(join(project, 'added_later.py'), 'def added_later():\n    return 42\n');
  await until('the page updates after a file is added', async () =>
    Number(await cellOf(project, 'files')) === files + 1);
  check(errors.length === 0, 'no script errors', errors);
  check((await page.textContent('#problem')) === '', 'no status error shown');
  await page.screenshot({ path: screenshot, fullPage: true });
  console.log(`screenshot: ${screenshot}`);
} finally {
  await browser.close();
}
console.log('OK');
