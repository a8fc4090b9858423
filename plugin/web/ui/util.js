// docker flame serve: what the page's other scripts share, pure (no DOM): numbers and times as
// people read them, the page's state <-> its URL, the CLI command of a view, shell quoting.
// Tested with `node --test` (tests/browser/serve-util.test.js).
"use strict";
var DF = typeof DF !== "undefined" ? DF : {};

DF.util = (function () {
    // 12345.6 -> "12,346"
    function count(n) {
        if (!isFinite(n)) return "?";
        var s = String(Math.round(Math.abs(n))), out = "";
        while (s.length > 3) {
            out = "," + s.slice(-3) + out;
            s = s.slice(0, -3);
        }
        return (n < 0 ? "-" : "") + s + out;
    }

    // a share in percent: "12.34%", "100%", "0.01%", "<0.01%"
    function pct(part, whole) {
        if (!(whole > 0)) return "0%";
        var p = 100 * part / whole;
        if (p === 100) return "100%";
        if (p > 0 && p < 0.01) return "<0.01%";
        return p.toFixed(2) + "%";
    }

    function two(n) {
        return n < 10 ? "0" + n : String(n);
    }

    // "2026-11-24 14:03:05" in local time (".250" when not whole seconds)
    function time(ms) {
        var d = new Date(ms);
        var s = d.getFullYear() + "-" + two(d.getMonth() + 1) + "-" + two(d.getDate()) + " " +
            two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
        var frac = ms % 1000;
        return frac ? s + "." + String(1000 + frac).slice(1) : s;
    }

    // "14:03:05" (the date when it is not the same day as `ref`)
    function clock(ms, ref) {
        var t = time(ms);
        return ref !== undefined && time(ref).slice(0, 10) === t.slice(0, 10) ? t.slice(11) : t;
    }

    // unix ms -> "2026-11-24T14:03:05Z" / "...05.250Z": a form `show --since` reads
    function iso(ms) {
        var s = new Date(ms).toISOString();
        return s.endsWith(".000Z") ? s.slice(0, -5) + "Z" : s;
    }

    // 90000 -> "1 min 30 s"
    function duration(ms) {
        var s = Math.round(ms / 1000);
        if (s < 60) return s + " s";
        var m = Math.floor(s / 60);
        if (m < 60) return m + " min" + (s % 60 ? " " + (s % 60) + " s" : "");
        var h = Math.floor(m / 60);
        if (h < 48) return h + " h" + (m % 60 ? " " + (m % 60) + " min" : "");
        return Math.round(h / 24) + " d";
    }

    // The page's state and its URL. Keys as the API names them; `c` and `b.c` repeat.
    var KEYS = ["from", "to", "since", "until", "host", "pid", "type", "view", "zoom", "q", "icase", "fn",
        "b.since", "b.until", "b.host", "b.pid", "norm", "flame", "palette", "sort"];

    function parseState(search) {
        var st = { c: [], "b.c": [] };
        var q = (search || "").replace(/^\?/, "");
        if (!q) return st;
        q.split("&").forEach(function (kv) {
            if (!kv) return;
            var eq = kv.indexOf("=");
            var k, v;
            try {
                k = decodeURIComponent((eq < 0 ? kv : kv.slice(0, eq)).replace(/\+/g, " "));
                v = eq < 0 ? "" : decodeURIComponent(kv.slice(eq + 1).replace(/\+/g, " "));
            } catch (e) {
                return; // a malformed escape: that pair is dropped
            }
            if (k === "c" || k === "b.c") st[k].push(v);
            else if (KEYS.indexOf(k) >= 0) st[k] = v;
        });
        return st;
    }

    function enc(s) {
        return encodeURIComponent(s).replace(/%3A/gi, ":").replace(/%2F/gi, "/").replace(/%40/g, "@");
    }

    // the state as a query string ("?from=...&c=web"), keys in a fixed order, empty ones left out
    function stateQuery(st) {
        var parts = [];
        function add(k) {
            if (k === "c" || k === "b.c")
                (st[k] || []).forEach(function (c) { parts.push(k + "=" + enc(c)); });
            else if (st[k])
                parts.push(k + "=" + enc(st[k]));
        }
        ["from", "to", "since", "until", "host", "pid", "c", "type", "view", "zoom", "q", "icase", "fn",
            "b.since", "b.until", "b.host", "b.pid", "b.c", "norm", "flame", "palette", "sort"]
            .forEach(add);
        return parts.length ? "?" + parts.join("&") : "";
    }

    // A word for a POSIX shell: as is when it is safe, else single-quoted.
    function shq(s) {
        s = String(s);
        if (/^[A-Za-z0-9_.:\/@%+=,-]+$/.test(s)) return s;
        return "'" + s.replace(/'/g, "'\\''") + "'";
    }

    // The `docker flame show` command that writes this view's range as a file of format fmt.
    // r: {since, until} in ms.
    function cliShow(st, r, fmt, store) {
        var w = ["docker", "flame", "show"];
        (st.c || []).forEach(function (c) { w.push(shq(c)); });
        w.push("--since", iso(r.since), "--until", iso(r.until));
        if (st.host) w.push("--host", shq(st.host));
        if (st.pid) w.push("--pid", shq(st.pid));
        if (store) w.push("--store", shq(store));
        if (st.type && st.type !== "cpu") w.push("--mode", shq(st.type));
        if (fmt === "svg" || fmt === undefined) w.push("--colors", shq(st.palette || "java"));
        w.push("--format", fmt || "svg", "-o", "-");
        return w.join(" ");
    }

    // `docker flame diff A B` of a comparison (one container a side: a stored input is
    // CONTAINER@SINCE..UNTIL), or null when the view cannot be said that way.
    function cliDiff(st, a, b) {
        var ca = st.c || [], cb = (st["b.c"] && st["b.c"].length) ? st["b.c"] : ca;
        if (ca.length !== 1 || cb.length !== 1 || st.host || st.pid) return null;
        var w = ["docker", "flame", "diff",
            shq(ca[0] + "@" + iso(a.since) + ".." + iso(a.until)),
            shq(cb[0] + "@" + iso(b.since) + ".." + iso(b.until))];
        if (st.type && st.type !== "cpu") w.push("--mode", shq(st.type));
        if (st.norm === "absolute") w.push("--no-normalize");
        return w.join(" ");
    }

    // An amount in its unit, exact, and for ns also as people read it:
    // "3,850 samples", "30,000,000,000 ns (30.0 s)"
    function amount(n, unit) {
        var s = count(n) + " " + (unit || "samples");
        if (unit !== "ns" || !isFinite(n)) return s;
        var a = Math.abs(n);
        var h = a >= 1e9 ? (n / 1e9).toFixed(1) + " s" : a >= 1e6 ? (n / 1e6).toFixed(1) + " ms"
            : a >= 1e3 ? (n / 1e3).toFixed(1) + " \u00b5s" : null;
        return h ? s + " (" + h + ")" : s;
    }

    // A node's label: its name without the annotation the server says it has (_[j], _[int]...).
    function label(names, strip, i) {
        var n = names[i];
        return strip && strip[i] ? n.slice(0, n.length - strip[i]) : n;
    }

    // 0xRRGGBB -> "#rrggbb"
    function rgb(c) {
        return "#" + (0x1000000 + (c & 0xffffff)).toString(16).slice(1);
    }

    return { count: count, pct: pct, time: time, clock: clock, iso: iso, duration: duration,
        parseState: parseState, stateQuery: stateQuery, shq: shq, cliShow: cliShow,
        cliDiff: cliDiff, label: label, rgb: rgb, amount: amount };
})();

if (typeof module !== "undefined") module.exports = DF.util;
