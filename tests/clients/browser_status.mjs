#!/usr/bin/env node
// The daemon's status page in a real headless Chromium (Debian's, driven by playwright-core):
// it loads with the token from its link, shows the indexed project, and updates by itself
// after a file is added. Keeps a screenshot.
// Usage: node browser_status.mjs SHIM PROJECT STATUS_URL SCREENSHOT
// Chromium: $AMANMCP_TEST_CHROMIUM, else /usr/bin/chromium.
import { chromium } from 'playwright-core';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const [, project, url, screenshot] = process.argv.slice(2);
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
