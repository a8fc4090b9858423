#!/usr/bin/env node
// Browser test of the SVG's interactivity in headless chromium: search highlights the right
// frames and shows the right "Matched" share, Ctrl-F prompts, the case toggle works, a click
// zooms, Reset Zoom restores, ?s= and ?x=&y= are applied on load, tooltips fill the details line.
'use strict';
const fs = require('fs');
const path = require('path');
const { ok, is, done, requireDeps, render, launch, tmpdir } = require('./lib.js');

const FOLDED = [
    'main;alpha;leaf1 30',
    'main;alpha;beta 10',
    'main;gamma;alpha 20',
    'main;delta 40',
].join('\n') + '\n';
const SEARCH_FILL = 'rgb(230,0,230)';

async function frames(page) {
    return page.evaluate(() => Array.from(document.querySelectorAll('#frames > g')).map(g => {
        const r = g.querySelector('rect'), t = g.querySelector('title').textContent;
        return { name: t.substring(0, t.lastIndexOf(' (')), title: t, x: +r.getAttribute('x'),
                 width: +r.getAttribute('width'), y: +r.getAttribute('y'),
                 fill: r.getAttribute('fill'), cls: g.getAttribute('class') || '',
                 label: g.querySelector('text').textContent };
    }));
}
const matched = page => page.evaluate(() => {
    const m = document.getElementById('matched');
    return m.classList.contains('hide') ? null : m.textContent;
});
const byName = (fs_, name) => fs_.filter(f => f.name === name);

(async () => {
    const { playwright, exe } = requireDeps();
    const tmp = tmpdir();
    const svgPath = path.join(tmp, 'graph.svg');
    fs.writeFileSync(svgPath, render(['--title', 'browser test'], FOLDED));
    const url = 'file://' + svgPath;
    const ctx = await launch(playwright, exe, tmp);
    try {
        const page = await ctx.newPage();
        const errors = [];
        page.on('pageerror', e => errors.push(String(e)));
        await page.goto(url, { timeout: 30000 });
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0,
                                   null, { timeout: 10000 });
        const orig = await frames(page);
        is(orig.length, 8, 'eight frames drawn (all, main, alpha x2, leaf1, beta, gamma, delta)');

        // tooltip -> details line
        await page.hover('#frames > g:has(title:text-matches("^delta \\\\("))');
        is(await page.textContent('#details'), 'Function: delta (40 samples, 40.00%)',
           'hovering a frame shows its details');

        // Ctrl-F opens the prompt; the answer is a regexp
        page.once('dialog', d => d.accept('alpha'));
        await page.keyboard.press('Control+f');
        await page.waitForFunction(() => document.getElementById('matched').textContent.startsWith('Matched'),
                                   null, { timeout: 5000 });
        let fr = await frames(page);
        is(fr.filter(f => f.fill === SEARCH_FILL).map(f => f.name).join(','), 'alpha,alpha',
           'search highlights exactly the two alpha frames');
        is(await matched(page), 'Matched: 60.0%', 'Matched counts 40 + 20 of 100 samples');
        is(await page.textContent('#search'), 'Reset Search', 'search button becomes Reset Search');
        ok(/[?&]s=alpha/.test(page.url()), 'search term kept in the URL', page.url());

        // nested matches count once: "a" matches main and everything below
        await page.click('#search'); // reset
        is(await matched(page), null, 'Reset Search hides Matched');
        fr = await frames(page);
        ok(fr.every((f, i) => f.fill === orig[i].fill), 'Reset Search restores the colours');
        page.once('dialog', d => d.accept('^(a|m)'));
        await page.keyboard.press('F3');
        await page.waitForFunction(() => !document.getElementById('matched').classList.contains('hide'));
        is(await matched(page), 'Matched: 100%', 'nested matches are not counted twice');
        await page.click('#search');

        // case toggle
        page.once('dialog', d => d.accept('LEAF'));
        await page.click('#search');
        await page.waitForFunction(() => !document.getElementById('matched').classList.contains('hide'));
        is(await matched(page), 'Matched: 0.0%', 'search is case sensitive by default');
        await page.click('#ignorecase');
        is(await matched(page), 'Matched: 30.0%', 'the ic toggle re-runs the search ignoring case');
        await page.click('#ignorecase');
        await page.click('#search');

        // zoom on gamma
        const gamma = byName(orig, 'gamma')[0];
        await page.click('#frames > g:has(title:text-matches("^gamma \\\\(")) rect', { force: true });
        fr = await frames(page);
        const g2 = byName(fr, 'gamma')[0];
        ok(Math.abs(g2.x - 10) < 0.01 && Math.abs(g2.width - 1180) < 0.01,
           'clicked frame spans the full width', JSON.stringify(g2));
        const a2 = fr.filter(f => f.name === 'alpha' && f.y < gamma.y)[0];
        ok(a2 && Math.abs(a2.width - 1180) < 0.01 && !a2.cls.includes('hide'),
           'its child is scaled with it', JSON.stringify(a2));
        ok(byName(fr, 'main')[0].cls.includes('parent') && byName(fr, 'all')[0].cls.includes('parent'),
           'ancestors are shown as parents');
        ok(['delta', 'leaf1', 'beta'].every(n => byName(fr, n)[0].cls.includes('hide')) &&
           fr.filter(f => f.name === 'alpha' && f.y > gamma.y - 1 && f.y === gamma.y)[0].cls.includes('hide'),
           'frames outside the zoomed one are hidden');
        ok(!(await page.getAttribute('#unzoom', 'class')).includes('hide'), 'Reset Zoom appears');
        const zoomUrl = page.url();
        ok(/[?&]x=/.test(zoomUrl) && /[?&]y=/.test(zoomUrl), 'zoom kept in the URL', zoomUrl);

        await page.click('#unzoom');
        fr = await frames(page);
        ok(fr.every((f, i) => f.x === orig[i].x && f.width === orig[i].width && f.cls === orig[i].cls &&
                              f.label === orig[i].label),
           'Reset Zoom restores every frame');
        ok((await page.getAttribute('#unzoom', 'class')).includes('hide'), 'Reset Zoom hides itself');

        // state restored from the URL on load
        const q = new URL(zoomUrl).search;
        await page.goto(url + q + '&s=delta');
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0);
        fr = await frames(page);
        ok(Math.abs(byName(fr, 'gamma')[0].width - 1180) < 0.01, '?x=&y= zooms on load');
        is(await matched(page), 'Matched: 40.0%', '?s= searches on load');
        is(errors.join('\n'), '', 'no script errors');

        // hostile names: markup stays text, nothing runs, search still works
        const hostile = Buffer.concat([
            Buffer.from('main;<script>window.pwned=1</script>;x 5\n'),
            Buffer.from('main;<img src=x onerror="window.pwned=2">;]]>;&amp; 5\n'),
            Buffer.from('main;bad\xff\x01utf8 5\n', 'latin1'),
        ]);
        const hpath = path.join(tmp, 'hostile.svg');
        fs.writeFileSync(hpath, render([], hostile));
        await page.goto('file://' + hpath);
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0);
        fr = await frames(page);
        is(fr.length, 9, 'hostile graph: every frame drawn (&amp; splits at its ;)');
        is(await page.evaluate(() => window.pwned), undefined, 'no injected script ran');
        ok(fr.some(f => f.name === '<script>window.pwned=1</script>') &&
           fr.some(f => f.name === ']]>') && fr.some(f => f.name === 'bad\ufffd\ufffdutf8'),
           'hostile names shown as text (invalid bytes as U+FFFD)', JSON.stringify(fr.map(f => f.name)));
        await page.evaluate(() => search('<script>'));
        is(await matched(page), 'Matched: 33.3%', 'searching for markup matches its frame');
        is(errors.join('\n'), '', 'no script errors on the hostile graph');

        // what the colours say, as the browser draws them: the java palette's legend names the
        // hues shown, and every label reads against its fill (WCAG contrast >= 4.5; the
        // differential's saturated blue gets white text)
        const contrast = (a, b) => {
            const lum = c => {
                const v = c.match(/\d+/g).map(x => +x / 255).map(x => x <= 0.03928 ? x / 12.92 : Math.pow((x + 0.055) / 1.055, 2.4));
                return 0.2126 * v[0] + 0.7152 * v[1] + 0.0722 * v[2];
            };
            const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
            return (x + 0.05) / (y + 0.05);
        };
        const labels = pg => pg.evaluate(() => Array.from(document.querySelectorAll('#frames > g')).map(g => ({
            name: g.querySelector('title').textContent, fill: g.querySelector('rect').getAttribute('fill'),
            text: getComputedStyle(g.querySelector('text')).fill })));
        const jpath = path.join(tmp, 'java.svg');
        fs.writeFileSync(jpath, render(['--colors', 'java'],
            'java;start_thread;JavaCalls::call_helper;A.run_[int];A.work_[j];A.isPrime_[i] 10\n' +
            'java;start_thread;JavaCalls::call_helper;A.run_[int];read_[k] 2\n'));
        await page.goto('file://' + jpath);
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0);
        const legend = await page.evaluate(() => Array.from(document.querySelectorAll('#legend text')).map(t => t.textContent));
        is(legend.join(', '), 'Java, compiled, inlined, interpreted, C++ (JVM), native, kernel',
           'java palette: a legend of the hues drawn');
        const lgBox = await page.evaluate(() => { const b = document.getElementById('legend').getBBox(); return b.y + b.height; });
        const topFrame = Math.min(...(await frames(page)).map(f => f.y));
        ok(lgBox <= topFrame, `the legend stays above the frames (${lgBox.toFixed(1)} <= ${topFrame})`);
        let low = (await labels(page)).filter(l => contrast(l.fill, l.text) < 4.5);
        ok(low.length === 0, 'java palette: every label reads against its fill', JSON.stringify(low));

        const dpath = path.join(tmp, 'diff.svg');
        fs.writeFileSync(dpath, render(['--negate'], 'a;b 10 10\na;b;c 5 15\na;d 8 4\n'));
        await page.goto('file://' + dpath);
        await page.waitForFunction(() => typeof all_frames !== 'undefined' && all_frames.length > 0);
        const dl = await labels(page);
        const c = dl.find(l => l.name.startsWith('c ('));
        ok(c && c.fill === 'rgb(0,0,255)' && c.text === 'rgb(255, 255, 255)',
           'mirror diff: the saturated blue frame has a white label', JSON.stringify(c));
        low = dl.filter(l => contrast(l.fill, l.text) < 4.5);
        ok(low.length === 0, 'mirror diff: every label reads against its fill', JSON.stringify(low));
        await page.evaluate(() => search('^c$'));
        ok(await page.evaluate(() => getComputedStyle(document.querySelector('#frames > g.w > text')).fill) === 'rgb(0, 0, 0)',
           'a white label turns black on the search colour');
        is(errors.join('\n'), '', 'no script errors on the legend and diff graphs');
    } finally {
        await ctx.close();
        fs.rmSync(tmp, { recursive: true, force: true });
    }
    done();
})().catch(e => {
    ok(false, 'browser test ran', e && e.stack);
    done();
});
