#!/usr/bin/env node
// `docker flame serve`'s page in headless chromium, on a store written by build/store-gen (no
// Docker): two containers of one image with known stacks, a JVM restart, empty windows, a gap, a
// container whose name and stacks are hostile and an hour compacted into 1-min buckets. Every
// figure the page shows is checked against what `docker flame show --format folded` writes for
// the same range (the CLI is the reference): a dragged range's total, the search share, a zoomed
// node, the function table, callers/callees, the compare totals, the host view's bands (their CPU
// seconds, a click's graph), the compacted hour's mark and graph; a copied URL reopens the same
// view; back and forward; hostile names stay text (no element, no dialog), no script error, no
// CSP violation. With SERVE_SHOTS=DIR, writes light, dark, compare, host and wall screenshots there
// for a person to look at.
'use strict';
const fs = require('fs');
const path = require('path');
const { spawn, execFileSync } = require('child_process');
const { ok, is, done, skipAll, requireDeps, launch, tmpdir, ROOT } = require('./lib.js');

const BIN = path.join(ROOT, 'build/docker-flame');
const GEN = path.join(ROOT, 'build/store-gen');
const MIN = 60000;
// the known stacks: what the two web containers run
const FIXTURE = [
    'java.lang.Thread.run;com.example.Work.run;com.example.Work.step;com.example.Hash.mix 50',
    'java.lang.Thread.run;com.example.Work.run;com.example.Hash.mix 20',
    'java.lang.Thread.run;com.example.Work.run;com.example.Work.step 15',
    'java.lang.Thread.run;com.example.Idle.park 15',
].join('\n') + '\n';

function gen(store, args) {
    execFileSync(GEN, ['--store', store, '--window-ms', '10000', '--samples', '200', ...args],
                 { stdio: ['ignore', 'ignore', 'pipe'] });
}

// show's output for a range (the reference): folded by default; mode: a stored type (--mode)
function showBytes(store, since, until, containers, mode, format) {
    return execFileSync(BIN, ['show', '--store', store, ...containers, '--since', since, '--until', until,
                              ...(mode ? ['--mode', mode] : []), '--format', format || 'folded', '-o', '-'],
                        { stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 1 << 28 });
}
// show's folded output for a range: [[frames, count], ...]
function showFolded(store, since, until, containers, mode) {
    const out = showBytes(store, since, until, containers, mode);
    return out.toString().split('\n').filter(l => l).map(l => {
        const sp = l.lastIndexOf(' ');
        return [l.slice(0, sp).split(';'), Number(l.slice(sp + 1))];
    });
}
const sum = (rows, pred) => rows.reduce((s, [f, n]) => s + (pred(f) ? n : 0), 0);

function startServer(store) {
    return new Promise((resolve, reject) => {
        const p = spawn(BIN, ['serve', '--store', store], { stdio: ['ignore', 'pipe', 'pipe'] });
        let out = '', err = '';
        const t = setTimeout(() => reject(new Error('no URL in 30 s: ' + err)), 30000);
        p.stderr.on('data', d => { err += d; });
        p.stdout.on('data', d => {
            out += d;
            const nl = out.indexOf('\n');
            if (nl >= 0) {
                clearTimeout(t);
                resolve({ proc: p, url: out.slice(0, nl) });
            }
        });
        p.on('exit', c => reject(new Error('serve exited ' + c + ': ' + err)));
    });
}

const view = page => page.evaluate(() => window.dfView());
// wait until the page's view satisfies pred (bounded)
async function until(page, pred, what, arg) {
    try {
        await page.waitForFunction(pred, arg === undefined ? null : arg, { timeout: 60000, polling: 100 });
        return true;
    } catch (e) {
        return ok(false, 'waiting for ' + what, e.message);
    }
}
const param = (url, k) => new URL(url).searchParams.get(k);

// A new page of ctx at url whose requests matching re are held until release() (page.route):
// what the page does while that answer is out. Script errors go to errors, tagged.
async function heldPage(ctx, errors, tag, re, url) {
    const page = await ctx.newPage();
    page.on('pageerror', e => errors.push(tag + ': ' + String(e)));
    let release;
    const held = new Promise(r => { release = r; });
    await page.route(re, async r => { await held; await r.continue(); });
    await page.goto(url, { timeout: 90000 });
    return { page, release };
}

// Type a search and press Enter; wait for the page to show the server's answer to it.
async function search(page, text) {
    const answer = page.waitForResponse(r => r.url().includes('/api/v1/flamegraph') &&
                                        new URL(r.url()).searchParams.get('q') === text, { timeout: 60000 });
    await page.fill('#search', text);
    await page.press('#search', 'Enter');
    const j = await (await answer).json();
    await until(page, m => window.dfView().search && window.dfView().search.matched === m,
                'the page to show the search ' + text, j.search ? j.search.matched : -1);
    return view(page);
}

(async () => {
    // ~85 s alone; a store to write and a dozen views to load: bounded for a loaded machine
    const { playwright, exe } = requireDeps(360);
    for (const b of [BIN, GEN])
        if (!fs.existsSync(b)) skipAll(b + ' missing: run make');
    const tmp = tmpdir();
    const store = path.join(tmp, 'p.db');
    const fixture = path.join(tmp, 'known.folded');
    fs.writeFileSync(fixture, FIXTURE);
    const now = Date.now();
    const t = m => String(now - m * MIN);
    const common = ['--workload', 'fixture', '--fixture', fixture, '--image', 'shop:1'];
    // web: pid 1 for 20 min, then a restart (pid 7) for 20 min, every 4th window empty
    gen(store, [...common, '--container', 'web', '--pid', '1', '--start', t(55), '--windows', '120',
                '--seed', '1', '--empty-every', '4']);
    gen(store, [...common, '--container', 'web', '--pid', '7', '--start', t(35), '--windows', '120',
                '--seed', '2']);
    // web2 (same image): a gap of 10 min
    gen(store, [...common, '--container', 'web2', '--start', t(50), '--windows', '60', '--seed', '3']);
    gen(store, [...common, '--container', 'web2', '--start', t(30), '--windows', '120', '--seed', '4']);
    // web2's wall-clock windows (record --mode wall: ns of its threads' time), 50..20 min ago
    gen(store, [...common, '--container', 'web2', '--start', t(50), '--windows', '180', '--seed', '8',
                '--type', 'wall']);
    gen(store, ['--workload', 'hostile', '--container', 'hostile', '--start', t(40), '--windows', '60',
                '--seed', '5']);
    // old: 2 h of windows from 4 h ago, compacted as a recorder does at their end (2 h ago): the
    // first hour is 1-min buckets (outside the default range of the last hour)
    // (from a whole minute: a first bucket cut short by where the minute falls, 40 or 50 s of
    // windows, would be a compacted run of its own next to the 1-min ones, half of the runs)
    const oldStart = String(Math.floor((now - 240 * MIN) / MIN) * MIN);
    gen(store, [...common, '--container', 'old', '--start', oldStart, '--windows', '720', '--seed', '6',
                '--batch', '360', '--compact-every', '720']);
    ok(true, 'store written');

    const { proc, url } = await startServer(store);
    // the server and the scratch store go also when the file's bound ends it halfway
    process.on('exit', () => {
        proc.kill('SIGINT');
        fs.rmSync(tmp, { recursive: true, force: true });
    });
    ok(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/.test(url), 'serve printed its URL: ' + url);
    const ctx = await launch(playwright, exe, tmp);
    const errors = [], dialogs = [];
    try {
        const page = await ctx.newPage();
        await page.setViewportSize({ width: 1400, height: 900 });
        page.on('pageerror', e => errors.push(String(e)));
        page.on('console', m => { if (m.type() === 'error') errors.push(m.text()); });
        page.on('dialog', d => { dialogs.push(d.message()); d.dismiss().catch(() => {}); });
        await page.addInitScript(() => {
            window.__csp = [];
            document.addEventListener('securitypolicyviolation',
                                      e => window.__csp.push(e.violatedDirective + ' ' + e.blockedURI));
        });
        await page.goto(url, { timeout: 90000 });
        is(param(page.url(), 'token'), null, 'the token left the address bar');
        await until(page, () => window.dfView && window.dfView().total !== undefined &&
                    window.dfView().timeline, 'the first graph');
        let v = await view(page);
        // the page asks its view first and alone: the timeline and the sources (the store's
        // listing) only once the graph's answer is in, so that on a small machine their queries
        // do not take the cores from the graph's merge (docs/SERVE.md)
        await until(page, () => ['timeline', 'sources'].every(n => performance.getEntriesByType('resource')
            .some(e => new RegExp('/api/v1/' + n + '(\\?|$)').test(e.name) && e.responseEnd > 0)),
            'the timeline and the sources');
        const order = await page.evaluate(() => {
            const t = {};
            for (const e of performance.getEntriesByType('resource')) {
                const m = /\/api\/v1\/(\w+)(\?|$)/.exec(e.name);
                if (m && !(m[1] in t)) t[m[1]] = { start: e.startTime, end: e.responseEnd };
            }
            const k = performance.getEntriesByName('rest-asked')[0];
            t.asked = k ? { at: k.startTime, why: k.detail } : null;
            t.painted = performance.getEntriesByName('flame-painted')[0].startTime;
            return t;
        });
        // (on a loaded machine the graph may take longer than the page waits: then the timer asked
        // them, while the graph was still out: before it painted, in the same task as its answer)
        ok(order.flamegraph && order.timeline && order.sources && order.asked &&
           (order.asked.why === 'answer'
               ? order.timeline.start >= order.flamegraph.end && order.sources.start >= order.flamegraph.end
               : order.asked.why === 'timer' && order.asked.at < order.painted &&
                 order.timeline.start >= order.asked.at && order.sources.start >= order.asked.at),
           'the graph was asked first and alone: the timeline and the sources after its answer', JSON.stringify(order));

        // -- the timeline: every JVM, the marks
        // the hostile workload names its container itself (markup, invalid UTF-8)
        const hs = v.timeline.series.find(s => s.name !== 'web' && s.name !== 'web2');
        const hostile = hs && hs.name;
        ok(hostile && hostile.includes('<script>'), 'the hostile container is there: ' + JSON.stringify(hostile));
        const names = v.timeline.series.map(s => s.name + '/' + s.pid).sort();
        is(JSON.stringify(names), JSON.stringify([hostile + '/1', 'web/1', 'web/7', 'web2/1'].sort()),
           'the timeline has a row per JVM: both containers of the image, the restart, the hostile one');
        const kinds = new Set(v.timeline.marks.map(m => m.kind));
        ok(kinds.has('restart'), 'a JVM restart is marked', JSON.stringify(v.timeline.marks));
        ok(kinds.has('gap'), 'the gap is marked', JSON.stringify([...kinds]));

        // -- the whole range: the graph's total is show's
        const wholeSince = new Date(v.range.since).toISOString(), wholeUntil = new Date(v.range.until).toISOString();
        let ref = showFolded(store, wholeSince, wholeUntil, []);
        is(v.total, sum(ref, () => true), 'the first graph\'s total = show --format folded over the range');

        // -- drag a range on the timeline
        const box = await page.locator('#timeline').boundingBox();
        const x0 = await page.evaluate(ms => window.dfGeometry.timelineX(ms), now - 45 * MIN);
        const x1 = await page.evaluate(ms => window.dfGeometry.timelineX(ms), now - 25 * MIN);
        const y = box.y + box.height - 30;
        await page.mouse.move(box.x + x0, y);
        await page.mouse.down();
        await page.mouse.move(box.x + (x0 + x1) / 2, y, { steps: 4 });
        await page.mouse.move(box.x + x1, y, { steps: 4 });
        await page.mouse.up();
        await until(page, () => new URL(location.href).searchParams.get('since') &&
                    window.dfView().range && window.dfView().range.since > 0 &&
                    Math.abs(window.dfView().range.since - Date.parse(new URL(location.href).searchParams.get('since'))) < 1,
                    'the dragged range\'s graph');
        const since = param(page.url(), 'since'), untilT = param(page.url(), 'until');
        ok(Math.abs(Date.parse(since) - (now - 45 * MIN)) < 2 * MIN &&
           Math.abs(Date.parse(untilT) - (now - 25 * MIN)) < 2 * MIN,
           `the drag chose about the range dragged: ${since} .. ${untilT}`);
        v = await view(page);
        ref = showFolded(store, since, untilT, []);
        const total = sum(ref, () => true);
        ok(total > 0, `show has samples in that range (${total})`);
        is(v.total, total, 'the dragged range\'s graph total = show --format folded for that range');
        ok(v.drawn > 0, `the graph is drawn (${v.drawn} nodes on the canvas)`);

        // -- search: the share the server computes, exactly
        v = await search(page, 'Hash');
        const hashed = sum(ref, f => f.some(n => n.includes('Hash')));
        is(v.search && v.search.matched, hashed, `search "Hash": matched samples = show's stacks holding it (${hashed})`);
        ok(/Matched: /.test(await page.locator('#matched').textContent()), 'the Matched line is shown');
        v = await search(page, '/Work\\.st.p$/');
        is(v.search && v.search.matched, sum(ref, f => f.some(n => /Work\.st.p$/.test(n))), 'a /regex/ search too');
        await page.fill('#search', '');
        await page.press('#search', 'Enter');
        await until(page, () => !window.dfView().search, 'search cleared');

        // -- zoom: click a node, its total is show's for that prefix
        const zpath = ['java.lang.Thread.run', 'com.example.Work.run'];
        const g = await page.evaluate(p => window.dfGeometry.node(p), zpath);
        ok(g !== null, 'the node to zoom is in the graph');
        const gbox = await page.locator('#graph').boundingBox();
        await page.mouse.click(gbox.x + g.x + g.w / 2, gbox.y + g.y + g.h / 2);
        await until(page, () => (new URL(location.href).searchParams.get('zoom') || '').includes('Work.run'), 'the zoom');
        v = await view(page);
        is(v.zoomTotal, sum(ref, f => f[0] === zpath[0] && f[1] === zpath[1]), 'zoomed node total = show\'s samples under it');
        ok(/Work\.run/.test(await page.locator('#crumbs').textContent()), 'the breadcrumb names it');
        const zoomedUrl = page.url();

        // -- a copied URL reopens the same view
        const page2 = await ctx.newPage();
        page2.on('pageerror', e => errors.push('page2: ' + String(e)));
        await page2.goto(zoomedUrl, { timeout: 90000 });
        await until(page2, () => window.dfView && window.dfView().zoomTotal !== null && window.dfView().total !== undefined,
                    'the reopened view');
        const v2 = await view(page2);
        is(JSON.stringify([v2.total, v2.zoomTotal, v2.zoomLabel]), JSON.stringify([v.total, v.zoomTotal, v.zoomLabel]),
           'the copied URL reopens the same range and zoom');
        await page2.close();

        // -- the profile type: web2 has wall windows in the dragged range, web none
        const page3 = await ctx.newPage();
        page3.on('pageerror', e => errors.push('page3: ' + String(e)));
        const wUrl = new URL(zoomedUrl);
        wUrl.searchParams.delete('zoom');
        wUrl.searchParams.append('c', 'web');
        await page3.goto(wUrl.toString(), { timeout: 90000 });
        // (the types offered come from the sources, asked after the graph: wait for them)
        await until(page3, () => window.dfView && window.dfView().total !== undefined && window.dfView().range &&
                    document.getElementById('store').textContent !== '', 'web\'s cpu view');
        let v3 = await view(page3);
        is(JSON.stringify([v3.type, v3.unit, v3.types]), JSON.stringify(['cpu', 'samples', ['cpu']]),
           'web alone: cpu, in samples, the only type offered');
        wUrl.searchParams.set('c', 'web2');
        await page3.goto(wUrl.toString(), { timeout: 90000 });
        await until(page3, () => window.dfView && window.dfView().total !== undefined && window.dfView().range &&
                    window.dfView().types.length === 2, 'web2\'s types');
        v3 = await view(page3);
        is(JSON.stringify(v3.types), '["cpu","wall"]', 'web2: cpu and wall offered');
        const cpuTotal = sum(showFolded(store, since, untilT, ['web2']), () => true);
        is(v3.total, cpuTotal, 'cpu by default: web2\'s samples = show --format folded');
        await page3.selectOption('#type', 'wall');
        await until(page3, () => window.dfView().range && window.dfView().range.type === 'wall' &&
                    window.dfView().timeline && window.dfView().timeline.type === 'wall', 'the wall view');
        v3 = await view(page3);
        const wref = showFolded(store, since, untilT, ['web2'], 'wall');
        const wallTotal = sum(wref, () => true);
        ok(wallTotal > cpuTotal, `show --mode wall has web2's wall ns in that range (${wallTotal})`);
        is(v3.total, wallTotal, 'switched to wall: the graph\'s total = show --mode wall --format folded');
        is(JSON.stringify([v3.unit, v3.timeline.unit, v3.timeline.load]), '["ns","ns","threads"]',
           'in ns; the timeline in threads (ns per ns), not cores');
        is(param(page3.url(), 'type'), 'wall', 'the URL says type=wall');
        const unitText = await page3.evaluate(() => document.getElementById('status').textContent + ' | ' +
                                              document.getElementById('tl-unit').textContent);
        ok(/wall clock .* ns/.test(unitText) && /threads/.test(unitText) && !/samples/.test(unitText),
           'the status and the timeline say wall clock, ns, threads', unitText);
        if (process.env.SERVE_SHOTS) {
            fs.mkdirSync(process.env.SERVE_SHOTS, { recursive: true });
            await page3.screenshot({ path: path.join(process.env.SERVE_SHOTS, 'serve-wall.png') });
        }
        // the timeline's threads: a bucket's ns over its ns (not its samples at the windows' 99 Hz)
        const tls = await page3.evaluate(() => fetch('/api/v1/timeline?since=' + (Date.now() - 48 * 60000) +
            '&until=' + (Date.now() - 42 * 60000) + '&c=web2&type=wall&width=10').then(r => r.json()));
        const ts = tls.series[0];
        const full = ts.cores.map((c, i) => [c, ts.samples[i], ts.covered[i]]).filter(x => x[2] === tls.step && x[1] > 0);
        ok(full.length > 0 && full.every(([c, ns]) => Math.abs(c - ns / 1e9 / (tls.step / 1000)) <= 1e-9 * c),
           'a wall bucket: its ns per ns of the bucket (threads)', JSON.stringify(full));
        // the exports are show --mode wall's bytes
        for (const f of ['folded', 'pprof']) {
            const href = await page3.getAttribute('#ex-' + f, 'href');
            const got = await page3.evaluate(h => fetch(h).then(r => r.arrayBuffer())
                .then(b => Array.from(new Uint8Array(b))), href);
            const r = await page3.evaluate(() => window.dfView().exportRange);
            const want = showBytes(store, new Date(r.since).toISOString(), new Date(r.until).toISOString(),
                                   ['web2'], 'wall', f);
            ok(Buffer.from(got).equals(want), `the ${f} export = show --mode wall --format ${f}'s bytes`,
               `${got.length} vs ${want.length} bytes`);
        }
        // the URL reopens the wall view; back returns to cpu
        const wallUrl = page3.url();
        const page4 = await ctx.newPage();
        page4.on('pageerror', e => errors.push('page4: ' + String(e)));
        await page4.goto(wallUrl, { timeout: 90000 });
        await until(page4, () => window.dfView && window.dfView().range && window.dfView().range.type === 'wall' &&
                    window.dfView().timeline, 'the reopened wall view');
        const v4 = await view(page4);
        is(JSON.stringify([v4.type, v4.total, v4.timeline && v4.timeline.type]), JSON.stringify(['wall', wallTotal, 'wall']),
           'the copied URL reopens the wall view (graph and timeline)');
        await page4.close();

        // -- a view slow to come does not hold the timeline back: the graph's answer is held
        // here until the timeline has painted (the page asks it anyway after LATER_MS)
        const root = new URL(wallUrl).origin + '/';
        const { page: page5, release } = await heldPage(ctx, errors, 'page5', /\/api\/v1\/flamegraph/, root);
        const tlFirst = await until(page5, () => window.dfView && window.dfView().timeline &&
                                    window.dfView().timeline.series.length > 0, 'the timeline while the graph is held');
        is(await page5.evaluate(() => window.dfView().total), undefined, 'the timeline painted before the graph came');
        release();
        if (tlFirst)
            await until(page5, () => window.dfView().total !== undefined, 'the held graph');
        await page5.close();

        // -- the host view chosen before the graph came (held): it gets its timeline all the same
        const { page: page7, release: release7 } = await heldPage(ctx, errors, 'page7', /\/api\/v1\/flamegraph/, root);
        await page7.click('#tabs button[data-view="host"]');
        if (await until(page7, () => performance.getEntriesByName('host-painted').length > 0 &&
                        window.dfView().host && window.dfView().host.rows.length > 0,
                        'the host view, chosen while the graph was held'))
            ok(true, 'the host view painted its rows with the first graph still out');
        release7();
        await page7.close();

        // -- "Copy CLI command" before the sources are in waits for them: the command names the
        // store (held here until the click)
        const { page: page6, release: releaseSrc } = await heldPage(ctx, errors, 'page6', /\/api\/v1\/sources/, root);
        await until(page6, () => window.dfView && window.dfView().range, 'the graph, the sources held');
        await page6.click('#copy-cli');
        releaseSrc();
        if (await until(page6, () => !document.getElementById('copied').hidden, 'the copied command')) {
            const cmd = await page6.locator('#copied').textContent();
            ok(cmd.startsWith('docker flame show ') && cmd.includes(' --store ' + store + ' '),
               'the command copied before the sources came names the store', cmd);
        }
        await page6.close();
        await page3.goBack();
        await until(page3, () => window.dfView().range && window.dfView().range.type === 'cpu' &&
                    window.dfView().timeline.type === 'cpu', 'back to cpu');
        v3 = await view(page3);
        is(JSON.stringify([v3.type, v3.total]), JSON.stringify(['cpu', cpuTotal]), 'back: the cpu view again');
        await page3.goForward();
        await until(page3, () => window.dfView().range && window.dfView().range.type === 'wall', 'forward to wall');
        is((await view(page3)).total, wallTotal, 'forward: the wall view again');
        await page3.close();

        // -- the function table
        await page.click('#tabs button[data-view="table"]');
        await until(page, () => window.dfView().view === 'table' && window.dfView().table, 'the table');
        v = await view(page);
        const rows = new Map(v.table.rows.map(r => [r[0], r]));
        const fnSelf = n => sum(ref, f => f[f.length - 1] === n);
        const fnTotal = n => sum(ref, f => f.includes(n));
        let tableOk = true, diag = '';
        for (const n of ['com.example.Hash.mix', 'com.example.Work.step', 'com.example.Idle.park']) {
            const r = rows.get(n);
            if (!r || r[1] !== fnSelf(n) || r[2] !== fnTotal(n)) {
                tableOk = false;
                diag += `${n}: page ${JSON.stringify(r)}, show self ${fnSelf(n)} total ${fnTotal(n)}\n`;
            }
        }
        ok(tableOk, 'the table\'s self and total = show\'s, per function', diag);
        ok(await page.locator('#table tbody tr').count() >= 4, 'the table has rows');

        // -- callers / callees of a function
        await page.locator('#table tbody tr', { hasText: 'com.example.Hash.mix' }).first().click();
        await until(page, () => window.dfView().view === 'sandwich' && window.dfView().sandwich, 'the sandwich');
        v = await view(page);
        is(JSON.stringify([v.sandwich.total, v.sandwich.self]),
           JSON.stringify([fnTotal('com.example.Hash.mix'), fnSelf('com.example.Hash.mix')]),
           'callers/callees of Hash.mix: total and self = show\'s');
        is(v.sandwich.callers, v.sandwich.total, 'its callers add up to its total');

        // -- back and forward
        await page.goBack();
        await until(page, () => window.dfView().view === 'table', 'back to the table');
        ok(true, 'back: the table again');
        await page.goForward();
        await until(page, () => window.dfView().view === 'sandwich', 'forward to the sandwich');
        ok(true, 'forward: callers/callees again');

        // -- compare: web against web2 over the range
        const cmpUrl = new URL(page.url());
        cmpUrl.search = '';
        for (const [k, val] of [['since', since], ['until', untilT], ['c', 'web'], ['view', 'diff'], ['b.c', 'web2'], ['norm', 'absolute']])
            cmpUrl.searchParams.append(k, val);
        await page.goto(cmpUrl.toString());
        if (!await until(page, () => window.dfView && window.dfView().diff && window.dfView().diff.after !== null, 'the compare view'))
            ok(false, 'the compare view\'s status', await page.locator('#diff-status').textContent());
        v = await view(page);
        const a = sum(showFolded(store, since, untilT, ['web']), () => true);
        const b = sum(showFolded(store, since, untilT, ['web2']), () => true);
        is(JSON.stringify([v.diff.before, v.diff.after]), JSON.stringify([a, b]),
           `compare web (A) with web2 (B): totals = show's (${a}, ${b})`);
        if (process.env.SERVE_SHOTS) {
            fs.mkdirSync(process.env.SERVE_SHOTS, { recursive: true });
            await page.screenshot({ path: path.join(process.env.SERVE_SHOTS, 'serve-diff.png') });
        }

        // -- the host view: a row per container (a JVM restart stays in its container's row), a
        // band where it was recorded, its CPU from the stored samples and rates; a click on a
        // band chooses that container and that time
        const hvUrl = new URL(page.url());
        hvUrl.search = '';
        hvUrl.searchParams.append('view', 'host');
        await page.goto(hvUrl.toString());
        await until(page, () => window.dfView && window.dfView().view === 'host' && window.dfView().host &&
                    performance.getEntriesByName('host-painted').length > 0, 'the host view');
        v = await view(page);
        const hrows = v.host.rows;
        is(JSON.stringify(hrows.map(r => r.name).sort()), JSON.stringify([hostile, 'web', 'web2'].sort()),
           'the host view has a row per container');
        const webRow = hrows.find(r => r.name === 'web'), w2 = hrows.find(r => r.name === 'web2');
        is(JSON.stringify(webRow.pids.slice().sort()), '[1,7]', 'web\'s row holds both its JVMs (the restart)');
        is(w2.bands.length, 2, 'web2 has two bands: the 10-min gap between them');
        // the first band: web2's first run (60 windows of 10 s at 99 Hz), every window inside it
        const band = w2.bands[0];
        const bandRef = sum(showFolded(store, new Date(band.from).toISOString(), new Date(band.to).toISOString(),
                                       ['web2']), () => true);
        const bandMs = band.to - band.from;
        ok(bandRef > 0 && bandMs >= 10 * MIN && bandMs <= 10 * MIN + 2 * v.host.step,
           `the band is web2's first run: ${bandMs / 1000} s, ${bandRef} samples in show`);
        ok(Math.abs(band.cpu - bandRef / 99) < 1e-6 * bandRef,
           `the band's CPU = show's samples / 99 Hz (${band.cpu} s, ${bandRef / 99} s)`);
        const hbox = await page.locator('#hostview').boundingBox();
        const bxy = await page.evaluate(id => window.dfGeometry.hostBand(id, 0), w2.id);
        ok(bxy !== null, 'the band is on the canvas');
        await page.mouse.click(hbox.x + bxy.x, hbox.y + bxy.y);
        await until(page, () => window.dfView().view === 'flame' && window.dfView().range &&
                    new URL(location.href).searchParams.get('c') === 'web2', 'the band\'s flame graph');
        v = await view(page);
        const isoS = ms => new Date(ms).toISOString().replace(/\.000Z$/, 'Z'); // as the page writes it
        is(JSON.stringify([param(page.url(), 'since'), param(page.url(), 'until')]),
           JSON.stringify([isoS(band.from), isoS(band.to)]),
           'the click chose the band\'s time');
        is(v.total, bandRef, 'and web2\'s graph of it: total = show --format folded');
        if (process.env.SERVE_SHOTS) {
            await page.goBack();
            await until(page, () => window.dfView().view === 'host', 'back to the host view');
            await page.screenshot({ path: path.join(process.env.SERVE_SHOTS, 'serve-host.png') });
        }

        // -- a compacted hour: marked on the timeline, and its graph is show's
        const oUrl = new URL(page.url());
        oUrl.search = '';
        for (const [k, val] of [['from', new Date(now - 250 * MIN).toISOString()], ['to', new Date(now - 110 * MIN).toISOString()],
                                ['c', 'old']])
            oUrl.searchParams.append(k, val);
        await page.goto(oUrl.toString());
        await until(page, () => window.dfView && window.dfView().timeline && window.dfView().range &&
                    window.dfView().timeline.series.some(s => s.name === 'old'), 'the old container\'s view');
        v = await view(page);
        const oi = v.timeline.series.findIndex(s => s.name === 'old');
        const cm = v.timeline.marks.filter(m => m.kind === 'compacted' && m.series === oi);
        // buckets on whole minutes: the run is the hour give or take a bucket at each end
        ok(cm.length === 1 && cm[0].bucket === MIN && Math.abs(cm[0].to - cm[0].from - 60 * MIN) <= 2 * MIN,
           'the compacted hour is marked: 1-min buckets for an hour', JSON.stringify(v.timeline.marks));
        const oref = sum(showFolded(store, new Date(v.range.since).toISOString(), new Date(v.range.until).toISOString(),
                                    ['old']), () => true);
        ok(oref > 0, `show has old's samples (${oref})`);
        is(v.total, oref, 'the graph over the compacted hour and the raw one = show --format folded');

        // -- hostile names: text only
        const hUrl = new URL(page.url());
        hUrl.search = '';
        // as the timeline chooses it: invalid UTF-8 in its name, so by its id
        hUrl.searchParams.append('c', hs.id);
        await page.goto(hUrl.toString());
        await until(page, () => window.dfView && window.dfView().total > 0, 'the hostile container\'s graph');
        await page.click('#tabs button[data-view="table"]');
        await until(page, () => window.dfView().view === 'table' && window.dfView().table, 'the hostile table');
        const found = await page.evaluate(() => ({
            imgs: document.querySelectorAll('img, iframe, object, embed, svg script').length,
            scripts: document.querySelectorAll('script').length,
            cells: document.querySelectorAll('#table tbody tr').length,
        }));
        await page.click('#tabs button[data-view="diff"]');
        // (its container list comes from the sources, asked after the graph: wait for them)
        await until(page, () => window.dfView().view === 'diff' &&
                    document.querySelectorAll('#diff-container option').length > 1, 'the compare tab');
        const opts = await page.locator('#diff-container option').allTextContents();
        ok(opts.some(o => o.includes(hostile)), 'the hostile container name is an option\'s text', JSON.stringify(opts));
        const hv = await page.locator('#diff-container option', { hasText: '<script>' }).first().getAttribute('value');
        is(hv, hs.id, 'and it chooses that container by id (its name is not valid UTF-8)');
        is(found.imgs, 0, 'no element made of a hostile name');
        is(found.scripts, 4, 'only the page\'s own 4 scripts');
        ok(found.cells > 0, 'hostile frame names fill the table as text');
        is(dialogs.length, 0, 'no dialog opened (no injected script ran)');

        // -- themes, for a person
        if (process.env.SERVE_SHOTS) {
            await page.goto(zoomedUrl);
            await until(page, () => window.dfView && window.dfView().total !== undefined, 'the light view');
            await page.screenshot({ path: path.join(process.env.SERVE_SHOTS, 'serve-light.png') });
            await page.click('#theme');
            await page.screenshot({ path: path.join(process.env.SERVE_SHOTS, 'serve-dark.png') });
        }
        const csp = await page.evaluate(() => window.__csp);
        ok(csp.length === 0, 'no CSP violation', csp.join('\n'));
    } catch (e) {
        ok(false, 'the test ran through', e.stack);
    } finally {
        ok(errors.length === 0, 'no script error', errors.join('\n'));
        await ctx.close();
        proc.kill('SIGINT');
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})();
