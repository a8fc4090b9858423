#!/usr/bin/env node
// Used by bench/bench-render.sh: how long headless chromium takes to open each SVG given (until
// the graph's script has indexed every frame), and to run one search in it. Prints one line per file.
'use strict';
const path = require('path');
const { requireDeps, launch, tmpdir } = require('./lib.js');
(async () => {
    const { playwright, exe } = requireDeps();
    const tmp = tmpdir();
    const ctx = await launch(playwright, exe, tmp);
    const page = await ctx.newPage();
    for (const f of process.argv.slice(2)) {
        const t0 = Date.now();
        await page.goto('file://' + path.resolve(f), { timeout: 120000 });
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0,
                                   null, { timeout: 120000 });
        const t1 = Date.now();
        await page.evaluate(() => search('m1'));
        const t2 = Date.now();
        console.log(`${path.basename(f)}: opens in ${((t1 - t0) / 1000).toFixed(2)} s, ` +
                    `search in ${((t2 - t1) / 1000).toFixed(2)} s`);
    }
    await ctx.close();
    require('fs').rmSync(tmp, { recursive: true, force: true });
    process.exit(0);
})().catch(e => { console.log('open-time: ' + e.message); process.exit(1); });
