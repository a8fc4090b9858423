#!/usr/bin/env node
// speedscope's own importer (the `speedscope` npm package, run in headless chromium the way its
// CLI opens a file: index.html#localProfilePath=<js calling speedscope.loadFileFromBase64>) must
// accept our speedscope JSON export and our folded export. A truncated file must be refused, so
// the check can fail.
'use strict';
const fs = require('fs');
const path = require('path');
const { ok, is, done, requireDeps, render, launch, tmpdir } = require('./lib.js');

const FOLDED = [
    'java;start_thread;Work.run_[j];Work.step_[j] 70',
    'java;start_thread;Work.run_[j];<inlined> "q" &_[i] 20',
    'java;\u00e9t\u00e9;vfs_read_[k] 10',
].join('\n') + '\n';

// Import `bytes` as file `name` and open speedscope's Sandwich view (a DOM table of every
// function's total and self weight); resolves to {title, alerts, errors, table}, table mapping
// each symbol to "TOTAL/SELF" as speedscope computed them.
async function importInto(ctx, tmp, name, bytes) {
    const index = require.resolve('speedscope/dist/release/index.html');
    const js = path.join(tmp, `load-${Math.random().toString(36).slice(2)}.js`);
    fs.writeFileSync(js, `speedscope.loadFileFromBase64(${JSON.stringify(name)}, ${JSON.stringify(
        Buffer.from(bytes).toString('base64'))})`);
    const page = await ctx.newPage();
    const alerts = [], errors = [];
    page.on('dialog', d => { alerts.push(d.message()); d.dismiss(); });
    page.on('console', m => { if (m.type() === 'error' || /Failed to load/.test(m.text())) errors.push(m.text()); });
    await page.goto('file://' + index + '#localProfilePath=' + js + '&view=sandwich');
    let title = null, table = {};
    try {
        await page.waitForFunction(() => / - speedscope$/.test(document.title), null, { timeout: 15000 });
        title = await page.title();
        await page.waitForFunction(() => document.body.innerText.includes('Symbol Name'), null,
                                   { timeout: 10000 });
        const lines = (await page.evaluate(() => document.body.innerText)).split('\n')
            .map(l => l.trim()).filter(l => l);
        const i = lines.indexOf('Total\tSelf\tSymbol Name') >= 0 ? lines.indexOf('Total\tSelf\tSymbol Name')
            : lines.findIndex(l => /^Total\s+Self\s+Symbol Name$/.test(l));
        for (let k = i + 1; k + 2 < lines.length + 1; k += 3) {
            const tot = /^(\d+) /.exec(lines[k]), self = /^(\d+) /.exec(lines[k + 1] || '');
            if (!tot || !self) break;
            table[lines[k + 2]] = `${tot[1]}/${self[1]}`;
        }
    } catch (e) {
        title = title || null;
    }
    await page.close();
    return { title, alerts, errors, table };
}

(async () => {
    const { playwright, exe } = requireDeps();
    const tmp = tmpdir();
    const json = render(['--format', 'speedscope', '--title', 'svc <a&b>'], FOLDED);
    const folded = render(['--format', 'folded'], FOLDED);
    JSON.parse(json.toString()); // our own sanity: it is JSON at all
    const ctx = await launch(playwright, exe, tmp);
    try {
        // what speedscope must compute from FOLDED: total/self per function
        const want = {
            'Work.step_[j]': '70/70', '<inlined> "q" &_[i]': '20/20', 'vfs_read_[k]': '10/10',
            '\u00e9t\u00e9': '10/0', 'Work.run_[j]': '90/0', 'start_thread': '90/0', 'java': '100/0',
        };
        const sorted = t => JSON.stringify(Object.fromEntries(Object.entries(t).sort()));
        const wantSorted = sorted(want);

        let r = await importInto(ctx, tmp, 'cpu.speedscope.json', json);
        is(r.title, 'svc <a&b> - speedscope', 'speedscope imports our JSON export (profile name shown)');
        is(r.alerts.join('|'), '', 'no import alert for the JSON export');
        is(sorted(r.table), wantSorted, 'speedscope computes the right totals and self weights');

        r = await importInto(ctx, tmp, 'cpu.txt', folded);
        is(r.title, 'cpu.txt - speedscope', 'speedscope imports our folded export');
        is(r.alerts.join('|'), '', 'no import alert for the folded export');
        is(sorted(r.table), wantSorted, 'same weights from the folded export');

        const svg = render([], FOLDED);
        const back = render(['--format', 'speedscope'], svg);
        r = await importInto(ctx, tmp, 'from-svg.json', back);
        ok(r.title !== null, 'an export made from our SVG imports too');

        r = await importInto(ctx, tmp, 'broken.json', json.subarray(0, json.length / 2));
        ok(r.title === null, 'a truncated export is refused (the check can fail)', JSON.stringify(r));
    } finally {
        await ctx.close();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})().catch(e => {
    ok(false, 'speedscope test ran', e && e.stack);
    done();
});
