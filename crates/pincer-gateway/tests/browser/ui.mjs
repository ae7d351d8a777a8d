// The web UI in a real headless Chromium (Debian's, driven by
// playwright-core: no browser is downloaded). Run by scripts/ui-test.sh,
// which starts `pincer gateway` and passes:
//   PINCER_URL   the gateway's address (http://127.0.0.1:PORT)
//   PINCER_CODE  the pairing code it printed
//   SHOTS        where to keep the screenshots
//   CHROMIUM     the browser (default /usr/bin/chromium)
// The flow a person takes: pair, chat with the scripted model, approve the
// gated sensor read, see the approval in the audit view. Exits non-zero,
// with a screenshot of the page, at the first thing that is not so.
import { chromium } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const url = process.env.PINCER_URL;
const code = process.env.PINCER_CODE;
const shots = process.env.SHOTS || 'target/ui-test';
if (!url || !code) {
  console.error('PINCER_URL and PINCER_CODE must be set (scripts/ui-test.sh sets them)');
  process.exit(2);
}
mkdirSync(shots, { recursive: true });

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  headless: true,
  // Chromium's own sandbox cannot start as root (CI runs as root).
  args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
});
const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
const problems = [];
// Every failed request is a problem, except the one wrong pairing code the
// test sends on purpose (the browser logs each as a console error too).
let expect401 = 0;
page.on('response', (r) => {
  if (r.status() < 400) return;
  if (r.status() === 401 && r.url().endsWith('/pair') && expect401 > 0) { expect401 -= 1; return; }
  problems.push(r.status() + ' ' + r.request().method() + ' ' + r.url());
});
page.on('console', (m) => {
  if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push('console: ' + m.text());
});
page.on('pageerror', (e) => problems.push('page error: ' + e.message));

let step = 'start';
const shot = (name) => page.screenshot({ path: join(shots, name), fullPage: true });
async function expectText(locator, re, what) {
  step = what;
  await locator.filter({ hasText: re }).first().waitFor({ timeout: 20000 });
}

try {
  step = 'load';
  const resp = await page.goto(url);
  if (!resp.ok()) throw new Error('GET / answered ' + resp.status());
  const csp = resp.headers()['content-security-policy'] || '';
  if (!csp.includes("script-src 'self'")) throw new Error('no strict CSP on the page: ' + csp);

  step = 'accessibility basics';
  const a11y = await page.evaluate(() => {
    const bad = [];
    if (!document.documentElement.lang) bad.push('<html> has no lang');
    for (const e of document.querySelectorAll('input, textarea, select')) {
      if (!e.labels || e.labels.length === 0) bad.push('unlabelled ' + e.tagName + '#' + e.id);
    }
    for (const b of document.querySelectorAll('button')) {
      if (!(b.getAttribute('aria-label') || b.textContent.trim())) bad.push('nameless button #' + b.id);
    }
    if (!document.querySelector('main')) bad.push('no <main>');
    return bad;
  });
  if (a11y.length) throw new Error(a11y.join('; '));
  await shot('1-pair.png');

  step = 'a wrong code is refused';
  const wrong = String((Number(code) + 1) % 1000000).padStart(6, '0');
  expect401 = 1;
  await page.getByLabel('Pairing code').fill(wrong);
  await page.getByRole('button', { name: 'Pair' }).click();
  await expectText(page.locator('#pair-status'), /invalid or expired/, 'the refusal is shown');

  step = 'pair';
  await page.getByLabel('Pairing code').fill(code);
  await page.getByRole('button', { name: 'Pair' }).click();
  await expectText(page.locator('#who'), /token:[0-9a-f]{12} \(approver\)/, 'paired as an approver');
  await expectText(page.locator('#conn'), /^connected$/, 'the WebSocket connects');

  step = 'chat';
  await page.getByLabel('Message').fill('How warm is it in the greenhouse?');
  await page.getByRole('button', { name: 'Send' }).click();
  await expectText(page.locator('#log li'), /Let me read the greenhouse sensor/, 'the reply streams in');
  await expectText(page.locator('#log li'), /Waiting for approval: i2c_read/, 'the read waits for a person');
  await expectText(page.locator('#approvals-list li'), /i2c_read/, 'the approval is listed');
  await shot('2-approval.png');

  step = 'approve';
  await page.getByRole('button', { name: /^Approve i2c_read/ }).click();
  await expectText(page.locator('#approvals-status'), /Approved i2c_read \(recorded as token:[0-9a-f]{12}\)/, 'the answer is confirmed');
  await expectText(page.locator('#log li'), /✓ i2c_read/, 'the read ran');
  await expectText(page.locator('#log li'), /It is 23\.5 °C in the greenhouse/, 'the final reply');
  await expectText(page.locator('#approvals-empty'), /No calls are waiting/, 'the queue is empty again');
  if (await page.locator('#approvals-badge').isVisible()) throw new Error('the badge still shows a count');
  await shot('3-chat.png');

  step = 'audit';
  await page.getByRole('button', { name: 'Refresh and verify' }).click();
  await expectText(page.locator('#audit-verify'), /Chain intact: \d+ entries verified/, 'the trail verifies');
  const rows = page.locator('#audit-rows tr');
  await expectText(rows, /approval\.answer/, 'the answer is in the trail');
  const answer = rows.filter({ hasText: 'approval.answer' }).first();
  const actor = await answer.locator('td').nth(2).textContent();
  if (!/^token:[0-9a-f]{12}$/.test(actor)) throw new Error('approval.answer actor is ' + actor);
  const decision = rows.filter({ hasText: 'gate.decision' }).filter({ hasText: '"approved"' }).first();
  await decision.waitFor({ timeout: 5000 });
  const details = await decision.locator('td').nth(4).textContent();
  if (!details.includes('"by":"' + actor + '"')) throw new Error('gate.decision not by ' + actor + ': ' + details);
  await page.locator('#audit').scrollIntoViewIfNeeded();
  await shot('4-audit.png');

  step = 'hardware';
  await page.getByRole('button', { name: 'Show the board' }).click();
  await expectText(page.locator('#hw-board dd'), /^sim$/, 'the board is shown');
  await page.getByRole('button', { name: 'Read every GPIO pin' }).click();
  await expectText(page.locator('#hw-status'), /pins read on/, 'the GPIO snapshot');
  if ((await page.locator('#hw-rows tr').count()) === 0) throw new Error('no GPIO rows');

  step = 'memory';
  await page.getByLabel('Search memory').fill('greenhouse');
  await page.getByRole('button', { name: 'Search' }).click();
  await expectText(page.locator('#memory-status'), /page\(s\) found/, 'memory search answers');

  step = 'status';
  await expectText(page.locator('#status-facts dd'), /supervised/, 'the status shows the autonomy');
  await shot('5-all.png');

  if (problems.length) throw new Error(problems.join('\n'));
  console.log('ui test: ok (screenshots in ' + shots + ')');
  await browser.close();
} catch (e) {
  console.error('ui test failed at "' + step + '": ' + e.message);
  for (const p of problems) console.error(p);
  await shot('failure.png').catch(() => {});
  await browser.close();
  process.exit(1);
}
