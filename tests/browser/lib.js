// Shared helpers for the browser tests (*.t): TAP output, finding the built renderer, launching
// Debian's headless chromium through playwright-core. Nothing here installs anything.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const { execFileSync } = require('child_process');

const ROOT = path.resolve(__dirname, '../..');
let n = 0, failed = 0;

function ok(cond, name, diag) {
    n++;
    if (!cond) failed++;
    console.log(`${cond ? '' : 'not '}ok ${n} - ${name}`);
    if (!cond && diag !== undefined) console.log('#   ' + String(diag).split('\n').join('\n#   '));
    return cond;
}
function is(got, want, name) {
    return ok(got === want, name, `got:  ${JSON.stringify(got)}\nwant: ${JSON.stringify(want)}`);
}
function done() {
    console.log(`1..${n}`);
    process.exit(failed ? 1 : 0);
}
// Skip the whole file, except under CI=true where a missing dependency is a failure.
function skipAll(why) {
    if (process.env.CI === 'true') {
        console.log(`not ok 1 - ${why} (CI=true: required)`);
        console.log('1..1');
        process.exit(1);
    }
    console.log(`1..0 # SKIP ${why}`);
    process.exit(0);
}

function chromiumPath() {
    for (const p of [process.env.CHROMIUM, '/usr/bin/chromium', '/usr/bin/chromium-browser'])
        if (p && fs.existsSync(p)) return p;
    return null;
}

function requireDeps(limitS = 180) {
    // every wait below is bounded; this bounds the whole file too
    setTimeout(() => {
        console.log(`not ok - the test did not finish within ${limitS} s`);
        done();
    }, limitS * 1000).unref();
    let playwright;
    try {
        playwright = require('playwright-core');
    } catch (e) {
        skipAll('playwright-core missing: run npm ci --prefix tests/browser');
    }
    const exe = chromiumPath();
    if (!exe) skipAll('chromium missing: apt-get install -y chromium');
    return { playwright, exe };
}

function renderer() {
    for (const p of [path.join(ROOT, 'build/flame-render'), path.join(ROOT, 'build/docker-flame')])
        if (fs.existsSync(p)) return p;
    skipAll('build/flame-render missing: run make');
}

// Run the renderer: `flame-render ARGS` or `docker-flame flame render ARGS`.
function render(args, input) {
    const exe = renderer();
    const argv = exe.endsWith('flame-render') ? args : ['flame', 'render', ...args];
    return execFileSync(exe, argv, { input, maxBuffer: 1 << 30 });
}

async function launch(playwright, exe, tmp) {
    // A fresh profile dir and no background traffic: the machine has no network but loopback.
    return playwright.chromium.launchPersistentContext(path.join(tmp, 'profile'), {
        executablePath: exe,
        headless: true,
        args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
               '--disable-background-networking', '--disable-component-update', '--disable-sync',
               '--enable-unsafe-swiftshader', '--allow-file-access-from-files'],
        timeout: 60000,
    });
}

function tmpdir() {
    return fs.mkdtempSync(path.join(os.tmpdir(), 'flame-browser-'));
}

module.exports = { ok, is, done, skipAll, requireDeps, render, launch, tmpdir, ROOT };
