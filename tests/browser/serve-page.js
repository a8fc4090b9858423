#!/usr/bin/env node
// Not a test file by itself: tests/e2e/serve.t runs it on a server of a real recording.
//   serve-page.js URL HOT-REGEX CONTAINER...
// Opens the URL `docker flame serve` printed in headless chromium (TAP on stdout): the timeline
// has a row for every CONTAINER, the flame graph of the range has samples, the function table
// names a method matching HOT-REGEX among its first ten by self time; no script error.
'use strict';
const fs = require('fs');
const { ok, done, requireDeps, launch, tmpdir } = require('./lib.js');

(async () => {
    const [url, hot, ...names] = process.argv.slice(2);
    const { playwright, exe } = requireDeps();
    const tmp = tmpdir();
    const ctx = await launch(playwright, exe, tmp);
    const errors = [];
    try {
        const page = await ctx.newPage();
        page.on('pageerror', e => errors.push(String(e)));
        await page.goto(url, { timeout: 90000 });
        await page.waitForFunction(() => window.dfView && window.dfView().timeline &&
                                   window.dfView().total !== undefined, null, { timeout: 90000 });
        let v = await page.evaluate(() => window.dfView());
        const rows = v.timeline.series.map(s => s.name);
        for (const n of names)
            ok(rows.includes(n), `the timeline has a row for ${n}`, JSON.stringify(rows));
        ok(v.total > 0, `the range's flame graph has samples (${v.total})`);
        await page.click('#tabs button[data-view="table"]');
        await page.waitForFunction(() => window.dfView().view === 'table' && window.dfView().table,
                                   null, { timeout: 90000 });
        v = await page.evaluate(() => window.dfView());
        const top = v.table.rows.slice(0, 10).map(r => r[0]);
        ok(top.some(n => new RegExp(hot).test(n)), `the table names the hot method (${hot})`, top.join('\n'));
        const shown = await page.locator('#table tbody').textContent();
        ok(new RegExp(hot).test(shown), 'and the page shows it');
    } catch (e) {
        ok(false, 'the page check ran through', e.stack);
    } finally {
        ok(errors.length === 0, 'no script error', errors.join('\n'));
        await ctx.close();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})();
