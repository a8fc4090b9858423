#!/usr/bin/env node
// speedscope's own importer (the `speedscope` npm package, run in headless chromium the way its
// CLI opens a file: index.html#localProfilePath=<js calling speedscope.loadFileFromBase64>) must
// accept our speedscope JSON export, our folded export and our pprof export. A truncated file must be refused, so
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
            // a count ("70 (70%)") or, for weights in time units, a duration ("707.07ms (70%)")
            const tot = /^([\d.]+(?:[nmµ]?s)?) /.exec(lines[k]);
            const self = /^([\d.]+(?:[nmµ]?s)?) /.exec(lines[k + 1] || '');
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

        // pprof: speedscope's pprof importer (gzip'd profile.proto, detected by content). It
        // weighs by the last sample type (cpu nanoseconds: 99 Hz = 10.10 ms a sample) and shows
        // one function per location, the outermost: the inlined frame's time is its host's self
        // time there (docs/PPROF.md); _[j] marks are gone, _[k] stays.
        const pb = render(['--format', 'pprof'], FOLDED);
        r = await importInto(ctx, tmp, 'cpu.pb.gz', pb);
        is(r.title, 'cpu.pb.gz - speedscope', 'speedscope imports our pprof export');
        is(r.alerts.join('|') + r.errors.join('|'), '', 'no import alert or error for pprof');
        is(sorted(r.table), sorted({
            'Work.step': '707.07ms/707.07ms', 'Work.run': '909.09ms/202.02ms',
            'vfs_read_[k]': '101.01ms/101.01ms', '\u00e9t\u00e9': '101.01ms/0.00ns',
            'start_thread': '909.09ms/0.00ns', 'java': '1.01s/0.00ns',
        }), 'speedscope computes the cpu time per function from the pprof export');
        r = await importInto(ctx, tmp, 'cut.pb.gz', pb.subarray(0, pb.length - 20));
        ok(r.title === null || Object.keys(r.table).length === 0, 'a truncated pprof file is refused', JSON.stringify(r));

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
