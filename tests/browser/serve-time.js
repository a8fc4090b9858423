#!/usr/bin/env node
// Used by bench/bench-serve.sh: opens the URL `docker flame serve` printed (with the view's
// parameters) in headless chromium and prints, one "name: value" line each, how long the first
// flame graph took to paint (from navigation; the timeline is asked after it), the nodes drawn, and the
// median time the page spends on a hover and on a zoom click over the graph (synchronous
// handlers: what the user waits for), and one search's round trip (server included).
'use strict';
const { requireDeps, launch, tmpdir } = require('./lib.js');
const median = a => a.sort((x, y) => x - y)[Math.floor(a.length / 2)];
(async () => {
    const url = process.argv[2];
    const { playwright, exe } = requireDeps();
    const tmp = tmpdir();
    // the scratch dir (chromium's profile) goes on every way out: an error, SIGTERM, SIGINT
    process.on('exit', () => require('fs').rmSync(tmp, { recursive: true, force: true }));
    for (const sig of ['SIGTERM', 'SIGINT'])
        process.on(sig, () => process.exit(1));
    const ctx = await launch(playwright, exe, tmp);
    const page = await ctx.newPage();
    await page.setViewportSize({ width: 1400, height: 900 });
    // SERVE_TIME_WARM=S: a browser that has run for S seconds first (on about:blank), as a user's
    // has; a chromium just started spends its first seconds on its own start-up work, which on 2
    // cores was most of the CPU while the server merged (docs/SERVE.md "Figures")
    const warm = Number(process.env.SERVE_TIME_WARM || 0);
    if (warm > 0) {
        await page.goto('about:blank');
        await new Promise(r => setTimeout(r, warm * 1000));
    }
    await page.goto(url, { timeout: 120000 });
    await page.waitForFunction(() => performance.getEntriesByName('flame-painted').length > 0, null,
                               { timeout: 120000, polling: 20 });
    const first = await page.evaluate(() => performance.getEntriesByName('flame-painted')[0].startTime);
    const v = await page.evaluate(() => window.dfView());
    // the page asks the timeline once the graph's answer is in: wait for it to paint too
    // (a timeline that fails costs its figure only, not the others)
    await page.waitForFunction(() => performance.getEntriesByName('timeline-painted').length > 0, null,
                               { timeout: 120000, polling: 20 }).catch(() => {});
    console.log(`first graph painted: ${(first / 1000).toFixed(2)} s`);
    // where it went: the flamegraph request (sent, answered), the server's own split
    // (Server-Timing: merge, tree, json) and what the page did after the answer
    const w = await page.evaluate(() => {
        const r = performance.getEntriesByType('resource').find(e => /\/api\/v1\/flamegraph/.test(e.name));
        const tl = performance.getEntriesByName('timeline-painted')[0];
        return r ? { start: r.startTime, end: r.responseEnd, timeline: tl ? tl.startTime : null,
                     server: r.serverTiming.map(t => `${t.name} ${Math.round(t.duration)} ms`).join(', ') } : null;
    });
    if (w)
        console.log(`first graph: asked at ${(w.start / 1000).toFixed(2)} s, answered at ${(w.end / 1000).toFixed(2)} s ` +
                    `(server: ${w.server}), page ${Math.round(first - w.end)} ms; timeline painted at ` +
                    `${w.timeline === null ? '-' : (w.timeline / 1000).toFixed(2)} s`);
    console.log(`nodes: ${v.nodes} sent, ${v.drawn} drawn; ${v.total} samples`);
    // hover and click: dispatched on the canvas, timed around the synchronous handlers
    const t = await page.evaluate(() => {
        const c = document.getElementById('graph'), r = c.getBoundingClientRect();
        const ev = (type, x, y) => c.dispatchEvent(new MouseEvent(type, {
            bubbles: true, clientX: r.left + x, clientY: r.top + y, button: 0 }));
        const hover = [], zoom = [];
        for (let i = 0; i < 21; i++) {
            const t0 = performance.now();
            ev('mousemove', 50 + (i * 37) % (r.width - 100), 40 + (i * 13) % 200);
            hover.push(performance.now() - t0);
        }
        for (let i = 0; i < 7; i++) {
            const t0 = performance.now();
            ev('click', r.width / 2 + i * 3, 60);
            zoom.push(performance.now() - t0);
            history.back();
        }
        return { hover, zoom };
    });
    console.log(`hover: ${median(t.hover).toFixed(1)} ms (median of ${t.hover.length})`);
    console.log(`zoom click: ${median(t.zoom).toFixed(1)} ms (median of ${t.zoom.length})`);
    const s0 = Date.now();
    await page.fill('#search', 'm1');
    await page.press('#search', 'Enter');
    await page.waitForFunction(() => window.dfView().search, null, { timeout: 120000, polling: 10 });
    console.log(`search round trip: ${Date.now() - s0} ms`);
    await ctx.close();
    process.exit(0);
})().catch(e => { console.log('serve-time: ' + e.message); process.exit(1); });
