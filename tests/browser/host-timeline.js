#!/usr/bin/env node
// Not a test file by itself: tests/e2e/host.t runs it on the timeline of a real recording.
//   host-timeline.js TIMELINE.svg CONTAINER
// Loads the SVG in headless chromium (TAP on stdout): no script error; hovering a CPU cell of
// CONTAINER shows the container and "tid N (vtid M)" in the details line; clicking it highlights
// CONTAINER's cells and dims every other; clicking again shows all.
'use strict';
const fs = require('fs');
const { ok, is, done, requireDeps, launch, tmpdir } = require('./lib.js');

(async () => {
    const [svg, name] = process.argv.slice(2);
    const { playwright, exe } = requireDeps();
    ok(fs.existsSync(svg), 'timeline written');
    const tmp = tmpdir();
    const ctx = await launch(playwright, exe, tmp);
    try {
        const page = await ctx.newPage();
        const errors = [];
        page.on('pageerror', e => errors.push(String(e)));
        await page.goto('file://' + svg, { timeout: 90000 }); // a loaded 2-core machine
        const cell = page.locator(`#cpus rect[data-c="${name}"]`).first();
        ok(await cell.count() === 1, `a CPU cell of ${name}`);
        await cell.hover({ timeout: 30000 });
        const details = await page.locator('#details').textContent();
        ok(details.startsWith(name + ' | ') && /tid \d+ \(vtid \d+\)/.test(details),
           'hover: the details line names the container and tid/vtid', details);
        await cell.click({ timeout: 30000 });
        const op = await page.evaluate(n => {
            const r = Array.from(document.querySelectorAll('[data-c]'));
            return { mine: r.filter(e => e.getAttribute('data-c') === n).every(e => e.getAttribute('opacity') === '1'),
                     others: r.filter(e => e.getAttribute('data-c') !== n).every(e => e.getAttribute('opacity') === '0.2'),
                     nothers: r.filter(e => e.getAttribute('data-c') !== n).length,
                     label: document.getElementById('highlight').textContent };
        }, name);
        ok(op.mine && op.others && op.nothers > 0, `click: ${name} highlighted, the ${op.nothers} other cells dimmed`);
        is(op.label, 'highlighted: ' + name, 'click: says which container is highlighted');
        await cell.click({ timeout: 30000 });
        const all = await page.evaluate(() => Array.from(document.querySelectorAll('[data-c]')).every(e => e.getAttribute('opacity') === '1'));
        ok(all, 'second click: every container shown again');
        is(errors.join('\n'), '', 'no script error');
    } finally {
        await ctx.close();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})().catch(e => { ok(false, 'exception', e.stack); done(); });
