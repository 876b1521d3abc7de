// Opens a study report in headless Chromium (Debian's /usr/bin/chromium,
// driven by playwright-core) and checks that every figure rendered: an SVG
// with a non-empty box, as many drawn <g class="series"> as its
// data-series says, the series counts the caller expects, the first screen
// naming data sets, machine and versions, no console errors, and that no
// script ran (the page has no <script>, its Content-Security-Policy forbids
// script, and no dialog opened: the hostile-strings test's payloads call alert).
// usage: node report_test.js REPORT.html EXPECT.json
//   EXPECT: {"figures": {"<figure id>": <series>, ...}, "min_figures": N, "bindings": [names],
//            "tables": [table ids, a section's suffix allowed] (default: the tables every report has)}
// Prints "N passed, N failed".
'use strict';
const fs = require('fs');
const path = require('path');
const { chromium } = require('playwright-core');

async function main() {
  const [page_path, expect_path] = process.argv.slice(2);
  const expect = JSON.parse(fs.readFileSync(expect_path, 'utf8'));
  let passed = 0, failed = 0;
  const check = (name, ok, detail) => {
    if (ok) passed++; else { failed++; console.log(`FAIL ${name}${detail ? ': ' + detail : ''}`); }
  };
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
           '--disable-component-update', '--disable-sync'],
  });
  try {
    const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    const errors = [];
    page.on('console', (m) => { if (m.type() === 'error') errors.push(m.text()); });
    page.on('pageerror', (e) => errors.push(String(e)));
    page.on('requestfailed', (r) => errors.push('request failed: ' + r.url()));
    const dialogs = [];
    page.on('dialog', (d) => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
    await page.goto('file://' + path.resolve(page_path), { waitUntil: 'load' });
    const figures = await page.$$eval('figure.chart', (figs) => figs.map((f) => {
      const svg = f.querySelector('svg');
      const box = svg ? svg.getBoundingClientRect() : { width: 0, height: 0 };
      const series = Array.from(f.querySelectorAll('g.series'));
      const drawn = series.filter((g) => {
        const b = g.getBBox();
        return g.childElementCount > 0 && (b.width > 0 || b.height > 0);
      }).length;
      return { id: f.id, declared: Number(f.dataset.series), series: series.length, drawn,
               width: box.width, height: box.height, caption: (f.querySelector('figcaption') || {}).textContent };
    }));
    check('the report has figures', figures.length >= (expect.min_figures || 1),
          `${figures.length} figures, expected at least ${expect.min_figures}`);
    for (const f of figures) {
      check(`figure ${f.id} is a visible SVG`, f.width > 50 && f.height > 50, `${f.width}x${f.height}`);
      check(`figure ${f.id} has its declared series`, f.declared > 0 && f.series === f.declared,
            `declared ${f.declared}, found ${f.series}`);
      check(`figure ${f.id}: every series is drawn`, f.drawn === f.series, `${f.drawn} of ${f.series} drawn`);
      check(`figure ${f.id} has a caption`, !!(f.caption && f.caption.trim()));
    }
    for (const [id, n] of Object.entries(expect.figures || {})) {
      const f = figures.find((x) => x.id === id);
      check(`figure ${id} is present with ${n} series`, f && f.series === n, f ? `found ${f.series}` : 'missing');
    }
    // The first screen: data sets (stand-ins named as such), machine, threads, versions.
    const top = await page.$eval('#summary', (s) => ({ text: s.innerText, bottom: s.getBoundingClientRect().bottom }));
    check('the first screen names the data sets', /Data sets/.test(top.text) && /STAND-IN/.test(top.text), top.text.slice(0, 200));
    check('the first screen names the machine and threads', /cores online/.test(top.text) && /threads/.test(top.text));
    for (const b of expect.bindings || []) check(`the first screen gives ${b}'s version`, top.text.includes(b));
    check('the summary fits the first screen', top.bottom <= 900, `ends at ${top.bottom}px`);
    const tables = await page.$$eval('table', (t) => t.map((x) => x.id));
    // The per-framework sections' tables carry the section in their id (t-dtw-fw1, t-dtw-cross).
    for (const t of expect.tables || ['t-final_models', 't-reproduction', 't-inference_time', 't-bindings',
                                      't-subactivities', 't-supported_features', 't-failures'])
      check(`table ${t} is present`, tables.some((x) => x === t || x.startsWith(t + '-')));
    check('table ids are unique', new Set(tables).size === tables.length, tables.join(' '));
    check('no console errors', errors.length === 0, errors.join(' | '));
    const scripts = await page.evaluate(() => ({
      n: document.scripts.length,
      csp: (document.querySelector('meta[http-equiv="Content-Security-Policy"]') || {}).content || '',
      handlers: Array.from(document.querySelectorAll('*')).filter((e) =>
        Array.from(e.attributes).some((a) => /^on/i.test(a.name) || /^(href|src|xlink:href|action|formaction)$/i.test(a.name))).length,
    }));
    check('the page holds no script', scripts.n === 0 && scripts.handlers === 0,
          `${scripts.n} <script>, ${scripts.handlers} elements with event handlers or links`);
    check('its Content-Security-Policy forbids script', /default-src 'none'/.test(scripts.csp) && !/script-src/.test(scripts.csp),
          scripts.csp || 'none');
    check('no script ran', dialogs.length === 0, dialogs.join(' | '));
    if (process.env.SCREENSHOT) await page.screenshot({ path: process.env.SCREENSHOT, fullPage: true });
  } finally {
    await browser.close();
  }
  console.log(`${passed} passed, ${failed} failed`);
  process.exit(failed ? 1 : 0);
}

main().catch((e) => { console.log(`FAIL browser: ${e.message}`); console.log('0 passed, 1 failed'); process.exit(1); });
