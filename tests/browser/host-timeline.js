#!/usr/bin/env node
// Not a test file by itself: tests/e2e/host.t runs it on the timeline of a real recording.
//   host-timeline.js TIMELINE.svg CONTAINER [LIMIT [LIMITED]]
// Loads the SVG in headless chromium (TAP on stdout): no script error; hovering a CPU cell of
// CONTAINER shows the container and "tid N (vtid M)" in the details line; clicking it highlights
// CONTAINER's cells and dims every other; clicking again shows all. What is drawn: every
// container its own hue, the same in the CPU band, the legend and its row; a time axis in
// seconds under both bands; LIMITED's row (default CONTAINER) scaled to its CPU limit LIMIT
// (cores), drawn as a line at 80 % of the row's height, each bar as high as its cores say on that
// scale.
'use strict';
const fs = require('fs');
const { ok, is, done, requireDeps, launch, tmpdir } = require('./lib.js');

(async () => {
    const [svg, name, limitArg, limitedArg] = process.argv.slice(2);
    const limited = limitedArg || name;
    const { playwright, exe } = requireDeps();
    ok(fs.existsSync(svg), 'timeline written');
    const tmp = tmpdir();
    const ctx = await launch(playwright, exe, tmp);
    try {
        const page = await ctx.newPage();
        const errors = [];
        page.on('pageerror', e => errors.push(String(e)));
        await page.goto('file://' + svg, { timeout: 90000 }); // a loaded 2-core machine
        // the container's largest cell: a cell a pixel or less high (a bucket where it barely ran)
        // may not be the element under the pointer at its own centre, and hover then times out
        const cells = page.locator(`#cpus rect[data-c="${name}"]`);
        const areas = await cells.evaluateAll(rs => rs.map(r => (+r.getAttribute('width')) * (+r.getAttribute('height'))));
        ok(areas.length > 0, `a CPU cell of ${name} (${areas.length})`);
        const cell = cells.nth(areas.indexOf(Math.max(...areas)));
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

        // what is drawn, read from the rendered document
        const d = await page.evaluate(([n, l]) => {
            const fillOf = sel => Array.from(document.querySelectorAll(sel)).map(e => e.getAttribute('fill'));
            const legend = Array.from(document.querySelectorAll('#legend rect[data-c]')).map(e =>
                ({ name: e.getAttribute('data-c'), fill: e.getAttribute('fill') }));
            const cells = {};
            for (const e of document.querySelectorAll('#cpus rect[data-c]'))
                (cells[e.getAttribute('data-c')] = cells[e.getAttribute('data-c')] || new Set()).add(e.getAttribute('fill'));
            const ticks = Array.from(document.querySelectorAll('g.axis text')).map(e => e.textContent);
            const lim = Array.from(document.querySelectorAll('line.limit')).filter(e => e.getAttribute('data-for') === l)
                .map(e => ({ v: +e.getAttribute('data-limit'), s: +e.getAttribute('data-scale'), y: +e.getAttribute('y1') }));
            const bars = Array.from(document.querySelectorAll('#rows rect[data-c]')).filter(e => e.getAttribute('data-c') === l)
                .map(e => ({ y: +e.getAttribute('y'), h: +e.getAttribute('height'), cores: +/\| ([0-9.]+) cores/.exec(e.getAttribute('data-t'))[1] }));
            return { legend, cells: Object.fromEntries(Object.entries(cells).map(([k, v]) => [k, Array.from(v)])), ticks, lim, bars,
                     rowFills: fillOf(`#rows rect[data-c="${n}"]`) };
        }, [name, limited]);
        const mine = d.legend.find(e => e.name === name);
        ok(mine && d.cells[name] && d.cells[name].length === 1 && d.cells[name][0] === mine.fill &&
           d.rowFills.every(f => f === mine.fill),
           `${name}: one colour in the CPU band, the legend and its row`, JSON.stringify({ mine, cells: d.cells[name] }));
        // plugin/host_timeline.c has 14 hues: past them (a busy host), they repeat
        const hued = d.legend.filter(e => e.name !== 'host' && e.name !== '(exited)').slice(0, 14);
        ok(hued.length >= 2 && new Set(hued.map(e => e.fill)).size === hued.length,
           `every container its own hue, up to the palette's 14 (${hued.map(e => e.name + ' ' + e.fill).join(', ')})`);
        ok(d.ticks.filter(t => / s$/.test(t)).length >= 4 && d.ticks.includes('0 s'),
           `a time axis in seconds (${d.ticks.slice(0, 6).join(' ')} ...)`);
        if (limitArg !== undefined) {
            const limit = +limitArg;
            ok(d.lim.length === 1 && Math.abs(d.lim[0].v - limit) < 1e-9,
               `${limited}: its CPU limit ${limit} drawn`, JSON.stringify(d.lim));
            // bars stand on the row's base; the limit line is at 80 % of the plot (36 px)
            const base = d.bars.length ? Math.max(...d.bars.map(b => b.y + b.h)) : 0;
            const peak = Math.max(...d.bars.map(b => b.cores));
            // the row's scale: the limit at 80 %, or the peak when a bucket went over it (CFS
            // periods are not aligned with buckets). The tooltips round cores to 0.01, so the
            // exact scale comes from the line's data-scale, checked against the rounded peak.
            const scale = d.lim.length === 1 ? d.lim[0].s : NaN;
            ok(Math.abs(scale - Math.max(limit / 0.8, peak)) <= 0.006,
               `${limited}: its row's scale ${scale} cores = max(limit / 0.8, peak ${peak})`);
            ok(d.lim.length === 1 && Math.abs(base - d.lim[0].y - 36 * limit / scale) < 0.05,
               `${limited}: the limit line at ${(100 * limit / scale).toFixed(0)} % of its row`);
            const off = d.bars.filter(b => Math.abs(b.h - 36 * Math.min(b.cores / scale, 1)) > 0.6);
            ok(d.bars.length > 0 && off.length === 0,
               `${limited}: ${d.bars.length} bars, each as high as its cores on the limit's scale`, JSON.stringify(off.slice(0, 3)));
        }
        is(errors.join('\n'), '', 'no script error');
    } finally {
        await ctx.close();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})().catch(e => { ok(false, 'exception', e.stack); done(); });
