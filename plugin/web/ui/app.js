// docker flame serve: the page. State lives in the URL (util.js parseState/stateQuery): every
// change pushes a history entry, back and forward restore it, a copied link reopens the view.
// The server computes every figure (the API of plugin/web/web_api.c); this draws and wires.
// Strings from the store (container, host, frame names) reach the DOM only through textContent.
"use strict";
(function () {
    var U = DF.util;
    var $ = function (id) { return document.getElementById(id); };
    var PALETTES = ["java", "hot", "mem", "io", "wakeup", "chain", "js", "perl", "red", "green",
        "blue", "aqua", "yellow", "purple", "orange"];
    // the longest the timeline and the sources wait for the first view's answer (at start)
    var LATER_MS = 1500;

    var st = {};         // the state (URL)
    var sources = null;  // /api/v1/sources
    var tl = null;       // /api/v1/timeline
    var cur = {};        // what the views show now, for the tooltip, exports and tests
    var seq = 0;         // answers to older requests of the views are dropped
    var tlSeq = 0;       // the same for the timeline

    var timeline = new DF.Timeline($("timeline"));
    var hostview = new DF.HostView($("hostview"));
    var graph = new DF.Graph($("graph"));
    var diffg = new DF.Graph($("diffgraph"));
    var callers = new DF.Graph($("sw-callers"));
    var callees = new DF.Graph($("sw-callees"));
    callers.flame = true; // the function at the bottom, its callers growing up

    // ---- fetching ----

    function api(path, params) {
        return fetch("/api/v1/" + path + params, { credentials: "same-origin" }).then(function (r) {
            return r.json().catch(function () { return {}; }).then(function (j) {
                if (!r.ok) throw new Error(j.error || ("HTTP " + r.status));
                return j;
            });
        });
    }

    function enc(s) {
        return encodeURIComponent(s);
    }

    // The range the graphs show: the selection, else the timeline's whole range.
    function range() {
        if (st.since || st.until)
            return { since: st.since || (tl ? String(tl.since) : "-1h"), until: st.until || "now" };
        if (tl) return { since: String(tl.since), until: String(tl.until) };
        return { since: st.from || "-1h", until: st.to || "now" };
    }

    // since/until/c/host/pid of side A (prefix "") or B ("b.") as query parameters
    function sideParams(prefix, r, cs, host, pid) {
        var p = prefix + "since=" + enc(r.since) + "&" + prefix + "until=" + enc(r.until);
        (cs || []).forEach(function (c) { p += "&" + prefix + "c=" + enc(c); });
        if (host) p += "&" + prefix + "host=" + enc(host);
        if (pid) p += "&" + prefix + "pid=" + enc(pid);
        return p;
    }

    // the profile type (cpu unless the URL says another): every request of the views names it
    function typeParam() {
        return st.type && st.type !== "cpu" ? "&type=" + enc(st.type) : "";
    }

    function paramsA() {
        return "?" + sideParams("", range(), st.c, st.host, st.pid) + "&palette=" + enc(st.palette || "java") +
            typeParam();
    }

    // the unit of the values the views show: the server's word for the type (samples, ns, bytes)
    function unit() {
        return (cur.range && cur.range.unit) || (tl && tl.unit) || "samples";
    }

    function searchParams() {
        return st.q ? "&q=" + enc(st.q) + (st.icase ? "&icase=1" : "") : "";
    }

    // ---- state and history ----

    function go(changes, replace) {
        Object.keys(changes).forEach(function (k) { st[k] = changes[k]; });
        var url = location.pathname + U.stateQuery(st);
        if (replace) history.replaceState(null, "", url);
        else history.pushState(null, "", url);
        render();
    }

    function timelineKey() {
        return st.from + "|" + st.to + "|" + st.host + "|" + (st.type || "");
    }

    window.addEventListener("popstate", function () {
        var before = timelineKey();
        st = U.parseState(location.search);
        if (before !== timelineKey()) loadTimeline().then(render);
        else render();
    });

    // ---- the status line, the breadcrumb, the tooltip ----

    function status(el, text, isError) {
        el.textContent = text;
        el.classList.toggle("error", !!isError);
    }

    function whoText() {
        var cs = st.c || [];
        return cs.length ? cs.join(" + ") : "all containers";
    }

    function tooltip(lines, e) {
        var tt = $("tooltip");
        if (!lines) {
            tt.hidden = true;
            return;
        }
        tt.textContent = "";
        lines.forEach(function (l, i) {
            var d = document.createElement("div");
            if (i === 0) d.className = "name";
            d.textContent = l;
            tt.appendChild(d);
        });
        tt.hidden = false;
        var x = e.clientX + 14, y = e.clientY + 14;
        var r = tt.getBoundingClientRect();
        if (x + r.width > window.innerWidth - 8) x = Math.max(8, e.clientX - r.width - 14);
        if (y + r.height > window.innerHeight - 8) y = Math.max(8, e.clientY - r.height - 14);
        tt.style.left = x + "px";
        tt.style.top = y + "px";
    }

    function nodeLines(g, i, whole) {
        var n = g.info(i), lines = [n.label], un = unit();
        lines.push("total " + U.amount(n.total, un) + ": " + U.pct(n.total, whole) + " of all, " +
            U.pct(n.total, n.parentTotal) + " of its caller");
        lines.push("self " + U.amount(n.self, un) + ": " + U.pct(n.self, whole));
        if (n.before !== null) {
            var d = n.total - n.before;
            lines.push("A " + U.count(n.before) + " \u2192 B " + U.count(n.total) + " " + un + " (" +
                (d >= 0 ? "+" : "") + U.count(d) + "); self " + U.count(n.selfBefore) + " \u2192 " +
                U.count(n.self));
        }
        if (n.other) lines.push("frames the node budget cut here: zoom in to see them");
        return lines;
    }

    [graph, diffg, callers, callees].forEach(function (g) {
        g.onhover = function (i, e) {
            var whole = g === graph ? cur.total : g === diffg ? cur.diffTotal : cur.swTotal;
            tooltip(i >= 0 ? nodeLines(g, i, whole) : null, e);
        };
    });

    timeline.onhover = function (info, e) {
        if (!info) return tooltip(null, e);
        var lines = [info.row];
        if (info.from !== undefined) {
            lines.push(U.clock(info.from) + " \u2013 " + U.clock(info.to, info.from));
            lines.push(info.covered > 0 ? loadText(info.samples, info.covered) : "not recording");
        }
        info.marks.forEach(function (m) {
            lines.push(m.kind === "restart" ? "JVM restarted here (was " + tl.series[m.other].pid + ")"
                : m.kind === "recreated" ? "container recreated here" : m.kind === "gap"
                    ? "not recording " + U.clock(m.from) + " \u2013 " + U.clock(m.to, m.from)
                    : "windows compacted into " + U.duration(m.bucket) + " buckets");
        });
        tooltip(lines, e);
    };

    function crumbs(g, onpick) {
        var nav = $("crumbs");
        nav.textContent = "";
        if (!g.n || g.z === 0) return;
        var chain = [];
        for (var a = g.z; a >= 0; a = g.parent[a]) chain.unshift(a);
        chain.forEach(function (i) {
            var b = document.createElement("button");
            b.textContent = i === 0 ? "all" : g.label(i);
            b.title = b.textContent;
            b.addEventListener("click", function () { onpick(i); });
            nav.appendChild(b);
        });
    }

    // ---- the timeline ----

    // A bucket's value as its type reads: samples per second (cpu), the threads a wall or
    // off-CPU time stands for (ns per ns recorded), bytes per second
    function loadText(v, coveredMs) {
        var un = tl && tl.unit || "samples", secs = coveredMs / 1000;
        if (un === "ns")
            return U.amount(v, "ns") + ", " + (v / 1e6 / coveredMs).toFixed(2) + " threads (ns per ns)";
        return U.amount(v, un) + ", " + (v / secs).toFixed(1) + " " + (un === "samples" ? "samples" : un) +
            " per second";
    }

    function timelineUnit(t) {
        $("tl-unit").textContent = t.what + " (" + t.unit + ")" + (t.unit === "ns"
            ? ": bars are threads (ns per ns of wall time)." : t.unit === "samples"
                ? ": bars are samples per second." : ": bars are " + t.unit + " per second.");
        $("timeline").setAttribute("aria-label", "timeline: " + t.what + " of each recorded JVM over time; drag to choose a range");
    }

    function loadTimeline() {
        var my = ++tlSeq;
        var p = "?since=" + enc(st.from || "-1h") + "&until=" + enc(st.to || "now") +
            (st.host ? "&host=" + enc(st.host) : "") + typeParam() + "&width=" +
            Math.max(50, Math.min(1500, Math.floor(($("timeline").clientWidth || 900) - 200)));
        return api("timeline", p).then(function (t) {
            if (my !== tlSeq) return;
            tl = t;
            timelineUnit(t);
            timeline.setData(t);
            hostview.setData(t);
            if (st.view === "host") renderHost();
            $("from").value = st.from || U.time(t.since);
            $("to").value = st.to || "now";
            timeline.draw();
            fillTypes();
            performance.mark("timeline-painted");
        }).catch(function (e) {
            status($("status"), "timeline: " + e.message, true);
        });
    }

    timeline.onselect = function (s) {
        var ch = { since: U.iso(s.since), until: U.iso(s.until), zoom: "" };
        // a name that was not valid UTF-8 reads back here with U+FFFD, which names nothing in
        // the store: such a container is chosen by its id
        if (s.row) ch.c = [s.row.name.indexOf("\uFFFD") >= 0 && s.row.id ? s.row.id : s.row.name];
        go(ch);
    };

    // ---- the views ----

    function showView(v) {
        ["flame", "table", "sandwich", "diff", "host"].forEach(function (k) {
            $("view-" + k).hidden = k !== v;
        });
        Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function (b) {
            b.setAttribute("aria-selected", b.dataset.view === v ? "true" : "false");
        });
    }

    function rangeText(r) {
        return U.time(r.since) + " \u2013 " + U.clock(r.until, r.since) + " (" + U.duration(r.until - r.since) + ")";
    }

    function infoText(r) {
        var what = r.type && r.type !== "cpu" ? " of type " + r.type : "";
        if (!r.windows) return "nothing stored" + what + " for " + whoText() + " in " + rangeText(r);
        return whoText() + ", " + rangeText(r) + ": " + U.count(r.windows) + " windows, " +
            (r.unit && r.unit !== "samples" ? r.what + " " : "") + U.amount(r.total, r.unit) +
            (r.missing ? " (" + U.count(r.missing) + " samples without their stacks)" : "");
    }

    function cutText(t) {
        if (!t.cut) return "";
        return "; showing " + U.count(t.full - t.cut) + " of " + U.count(t.full) + " frames, " +
            U.pct(t.cut_total, t.total) + " of the " + unit() + " in \u201cother\u201d (click to zoom in)";
    }

    function renderFlame() {
        var my = ++seq;
        var p = paramsA() + searchParams() + (st.zoom ? "&root=" + enc(st.zoom) : "");
        status($("status"), "loading\u2026");
        return api("flamegraph", p).then(function (j) {
            if (my !== seq) return;
            cur.range = j.range;
            cur.total = j.range.total;
            cur.tree = j.tree;
            graph.flame = st.flame === "1";
            graph.setData(j.tree);
            var z = 0;
            if (st.zoom) {
                z = graph.find(st.zoom.split(";"));
                if (z < 0) z = 0;
            }
            graph.z = z;
            graph.draw();
            performance.mark("flame-painted");
            cur.search = j.search || null;
            $("matched").textContent = j.search ? "Matched: " + U.pct(j.search.matched, j.search.total) +
                " (" + U.amount(j.search.matched, j.range.unit) + ")" : "";
            status($("status"), infoText(j.range) + (j.range.windows && !j.range.total ? " (the JVMs were idle)" : "") +
                cutText(j.tree));
            crumbs(graph, function (i) { zoomTo(graph, i); });
            selText(j.range);
            exports(j.range);
        }).catch(function (e) {
            if (my === seq) status($("status"), e.message, true);
        });
    }

    // Zoom the main graph into node i: at once from what is here, then, when frames were cut
    // under it, the server's exact subtree.
    function zoomTo(g, i) {
        if (g !== graph) return;
        var path = graph.path(i).join(";");
        var refetch = graph.hasCut(i);
        graph.zoom(i);
        crumbs(graph, function (k) { zoomTo(graph, k); });
        history.pushState(null, "", location.pathname + U.stateQuery(Object.assign(st, { zoom: path })));
        if (refetch) renderFlame();
    }

    graph.onclick = function (i) {
        zoomTo(graph, i);
    };

    function renderTable() {
        var my = ++seq;
        var sort = st.sort === "total" ? "total" : "self";
        status($("status"), "loading\u2026");
        return api("table", paramsA() + searchParams() + "&sort=" + sort + "&limit=500").then(function (j) {
            if (my !== seq) return;
            cur.table = j;
            cur.total = j.range.total;
            var tb = document.querySelector("#table tbody");
            tb.textContent = "";
            j.rows.forEach(function (row) {
                var tr = document.createElement("tr");
                [row[0], U.count(row[1]), U.pct(row[1], j.range.total), U.count(row[2]),
                    U.pct(row[2], j.range.total)].forEach(function (v, k) {
                    var td = document.createElement("td");
                    td.textContent = v;
                    if (k) td.className = "num";
                    tr.appendChild(td);
                });
                tr.addEventListener("click", function () { go({ view: "sandwich", fn: row[0] }); });
                tb.appendChild(tr);
            });
            Array.prototype.forEach.call(document.querySelectorAll("#table th"), function (th) {
                th.classList.toggle("sorted", th.dataset.sort === sort);
            });
            Array.prototype.forEach.call(document.querySelectorAll("#table th .unit"), function (u) {
                u.textContent = "(" + (j.range.unit || "samples") + ")";
            });
            $("table-more").textContent = (st.q ? U.count(j.matching) + " of " + U.count(j.functions) +
                " functions match" : U.count(j.functions) + " functions") +
                (j.matching > j.rows.length ? "; the first " + j.rows.length + " shown" : "");
            status($("status"), infoText(j.range));
            selText(j.range);
            exports(j.range);
        }).catch(function (e) {
            if (my === seq) status($("status"), e.message, true);
        });
    }

    function renderSandwich() {
        var my = ++seq;
        if (!st.fn) {
            $("sw-title").textContent = "Choose a function: right-click a frame of the flame graph, or click a row of the functions.";
            callers.setData({ nodes: [], others: [], names: [], strip: [] });
            callees.setData({ nodes: [], others: [], names: [], strip: [] });
            callers.draw();
            callees.draw();
            status($("status"), "");
            return Promise.resolve();
        }
        status($("status"), "loading\u2026");
        return api("sandwich", paramsA() + "&fn=" + enc(st.fn)).then(function (j) {
            if (my !== seq) return;
            cur.sandwich = j;
            cur.swTotal = j.range.total;
            $("sw-title").textContent = j.fn + ": total " + U.amount(j.total, j.range.unit) + " (" +
                U.pct(j.total, j.range.total) + "), self " + U.amount(j.self, j.range.unit) + " (" +
                U.pct(j.self, j.range.total) + ")";
            callers.setData(j.callers);
            callees.setData(j.callees);
            callers.draw();
            callees.draw();
            status($("status"), infoText(j.range));
            selText(j.range);
            exports(j.range);
        }).catch(function (e) {
            if (my === seq) status($("status"), e.message, true);
        });
    }

    [callers, callees].forEach(function (g) {
        g.onclick = function (i) {
            if (i > 0 && !g.info(i).other) go({ fn: g.label(i) });
        };
    });

    // Side B: the same containers shifted in time, or the same range of other containers.
    // B's range defaults to A's: the range asked (a page opened on a compare link has no answer
    // yet to take it from)
    function sideB() {
        var a = range();
        return {
            since: st["b.since"] || a.since, until: st["b.until"] || a.until,
            c: st["b.c"] && st["b.c"].length ? st["b.c"] : st.c || [],
        };
    }

    // ---- the host view: every container's stored CPU over the range ----

    function renderHost() {
        if (!tl) return status($("status"), "loading\u2026");
        hostview.draw();
        var hosts = {};
        hostview.rows.forEach(function (r) { hosts[r.host] = 1; });
        status($("status"), hostview.rows.length + " container" + (hostview.rows.length === 1 ? "" : "s") + " on " +
            Object.keys(hosts).length + " host" + (Object.keys(hosts).length === 1 ? "" : "s") + ", " +
            rangeText(tl) + "; click a band for that container's flame graph of that time");
        performance.mark("host-painted");
    }

    hostview.onselect = function (row, band) {
        // a name that is not valid UTF-8 is chosen by its id (as the timeline does)
        go({ view: "", c: [row.name.indexOf("\uFFFD") >= 0 && row.id ? row.id : row.name],
            since: U.iso(band.from), until: U.iso(band.to), zoom: "" });
    };
    hostview.onhover = function (hit, e) {
        if (!hit) return tooltip(null, e);
        var lines = [hit.row.name, "host " + hit.row.host + ", JVM " + hit.row.pids.join(", ")];
        if (hit.from !== undefined) {
            lines.push(U.clock(hit.from) + " \u2013 " + U.clock(hit.to, hit.from));
            lines.push(hit.band ? hit.cores.toFixed(2) + " " + (tl.load || "cores") : "not recording");
        }
        if (hit.band)
            lines.push("this run: " + U.clock(hit.band.from) + " \u2013 " + U.clock(hit.band.to, hit.band.from) +
                ", " + hit.band.cpu.toFixed(1) + " " + (tl.load === "threads" ? "thread seconds (" + tl.what + ")"
                    : tl.load === "cores" || !tl.load ? "CPU seconds" : tl.unit) + " (click: its flame graph)");
        tooltip(lines, e);
    };

    function renderDiff() {
        var my = ++seq;
        fillDiffContainers();
        if (!st["b.since"] && !(st["b.c"] && st["b.c"].length)) {
            status($("diff-status"), "Choose B: a preset (the same containers earlier) or another container.");
            diffg.setData({ nodes: [], others: [], names: [], strip: [] });
            diffg.draw();
            return api("flamegraph", paramsA() + "&nodes=1").then(function (j) {
                cur.range = j.range;
                presetsEnabled();
                selText(j.range);
            });
        }
        var b = sideB();
        var p = paramsA() + "&" + sideParams("b.", { since: b.since, until: b.until }, b.c, st["b.host"], st["b.pid"]) +
            "&norm=" + (st.norm === "absolute" ? "absolute" : "relative") + (st.zoom ? "&root=" + enc(st.zoom) : "");
        status($("diff-status"), "loading\u2026");
        return api("diff", p).then(function (j) {
            if (my !== seq) return;
            cur.diff = j;
            cur.range = j.a;
            selText(j.a);
            presetsEnabled();
            var who = function (s, cs) {
                return (cs.length ? cs.join(" + ") : "all containers") + " " + rangeText(s) + " (" +
                    U.amount(s.total, s.unit) + ")";
            };
            if (j.empty) {
                status($("diff-status"), "nothing to compare: no samples in " + (j.empty === "a" ? "A, " +
                    who(j.a, st.c || []) : "B, " + who(j.b, b.c)), true);
                diffg.setData({ nodes: [], others: [], names: [], strip: [] });
                diffg.draw();
                return;
            }
            cur.diffTotal = j.tree.total;
            status($("diff-status"), "A: " + who(j.a, st.c || []) + "; B: " + who(j.b, b.c) +
                (j.normalized ? "; A scaled to B's total (shares compared)" : "") + cutText(j.tree));
            diffg.flame = st.flame === "1";
            diffg.setData(j.tree);
            diffg.draw();
            performance.mark("diff-painted");
        }).catch(function (e) {
            if (my === seq) status($("diff-status"), e.message, true);
        });
    }

    function fillDiffContainers() {
        var sel = $("diff-container");
        if (!sources || sel.options.length) return;
        var none = document.createElement("option");
        none.value = "";
        none.textContent = "(the same)";
        sel.appendChild(none);
        var seen = {};
        sources.containers.forEach(function (c) {
            if (seen[c.name]) return;
            seen[c.name] = 1;
            var o = document.createElement("option");
            o.value = c.name.indexOf("\uFFFD") >= 0 && c.id ? c.id : c.name; // as the timeline does
            o.textContent = c.name + " (" + c.image + ")";
            sel.appendChild(o);
        });
        sel.value = st["b.c"] && st["b.c"].length ? st["b.c"][0] : "";
    }

    // a preset that would overlap A is of no use: off
    function presetsEnabled() {
        var a = cur.range;
        Array.prototype.forEach.call(document.querySelectorAll("#diff-presets button"), function (btn) {
            btn.disabled = !a || Number(btn.dataset.shift) < a.until - a.since;
        });
        $("norm").value = st.norm === "absolute" ? "absolute" : "relative";
        $("norm").options[1].textContent = "absolute (" + unit() + ")";
        $("diff-container").value = st["b.c"] && st["b.c"].length ? st["b.c"][0] : "";
    }

    Array.prototype.forEach.call(document.querySelectorAll("#diff-presets button"), function (btn) {
        btn.addEventListener("click", function () {
            var a = cur.range, d = Number(btn.dataset.shift);
            go({ "b.since": U.iso(a.since - d), "b.until": U.iso(a.until - d), "b.c": [] });
        });
    });
    $("diff-container").addEventListener("change", function () {
        var v = $("diff-container").value;
        go({ "b.c": v ? [v] : [], "b.since": "", "b.until": "" });
    });
    $("norm").addEventListener("change", function () { go({ norm: $("norm").value === "absolute" ? "absolute" : "" }); });
    diffg.onclick = function (i) {
        go({ zoom: diffg.path(i).join(";") });
    };

    function selText(r) {
        var s = $("sel-text");
        s.textContent = (st.since || st.until ? "Selected " : "Whole range ") + rangeText(r);
        $("sel-reset").hidden = !(st.since || st.until);
        $("sources-text").textContent = "\u00b7 " + whoText() + (st.host ? " on " + st.host : "") + (st.pid ? ", JVM " + st.pid : "");
        $("sources-all").hidden = !(st.c && st.c.length);
        timeline.sel = st.since || st.until ? { since: r.since, until: r.until } : null;
        timeline.chosen = st.c || [];
        if (tl) timeline.draw();
    }

    // ---- exports and links ----

    function exports(r) {
        var base = "?" + sideParams("", { since: String(r.since), until: String(r.until) }, st.c, st.host, st.pid) +
            "&palette=" + enc(st.palette || "java") + typeParam();
        ["svg", "folded", "speedscope", "pprof"].forEach(function (f) {
            $("ex-" + f).href = "/api/v1/export" + base + "&format=" + f;
        });
        cur.exportRange = r;
    }

    function copy(text) {
        var shown = $("copied");
        shown.textContent = text;
        shown.hidden = false;
        if (navigator.clipboard) navigator.clipboard.writeText(text).catch(function () {});
    }

    $("copy-link").addEventListener("click", function () { copy(location.href); });
    $("copy-cli").addEventListener("click", function () {
        if (!cur.range) return;
        // the view as it is at the click; the command names the store, which the sources say,
        // and they may not be in yet (the page's start): then it is copied when they come
        var s = Object.assign({}, st), r = cur.range, d = cur.diff;
        var cmd = function () {
            copy(s.view === "diff" && d && !d.empty
                ? U.cliDiff(s, d.a, d.b) || "(no single command: give one container a side)"
                : U.cliShow(s, r, "svg", sources && sources.store));
        };
        if (sources) return cmd();
        askRest("copy");
        sourcesP.then(cmd);
    });
    $("export-btn").addEventListener("click", function (e) {
        e.stopPropagation();
        $("export-menu").hidden = !$("export-menu").hidden;
    });
    $("ex-png").addEventListener("click", function () {
        var cv = st.view === "diff" ? $("diffgraph") : $("graph");
        cv.toBlob(function (b) {
            var a = document.createElement("a");
            a.href = URL.createObjectURL(b);
            a.download = "flame.png";
            a.click();
            setTimeout(function () { URL.revokeObjectURL(a.href); }, 10000);
        });
    });

    // ---- the context menu ----

    var menuNode = -1;
    graph.oncontext = function (i, e) {
        if (graph.info(i).other) return;
        menuNode = i;
        var m = $("menu");
        m.style.left = e.clientX + "px";
        m.style.top = e.clientY + "px";
        m.hidden = false;
    };
    Array.prototype.forEach.call(document.querySelectorAll("#menu button"), function (b) {
        b.addEventListener("click", function () {
            $("menu").hidden = true;
            var i = menuNode, name = graph.label(i);
            if (b.dataset.act === "zoom") zoomTo(graph, i);
            else if (b.dataset.act === "sandwich") go({ view: "sandwich", fn: name });
            else if (b.dataset.act === "search") {
                $("search").value = name;
                go({ q: name });
            } else copy(name);
        });
    });
    document.addEventListener("click", function () {
        $("menu").hidden = true;
        $("export-menu").hidden = true;
    });

    // ---- controls ----

    Array.prototype.forEach.call(document.querySelectorAll("#presets button"), function (b) {
        b.addEventListener("click", function () {
            st.from = "-" + b.dataset.range;
            st.to = "";
            go({ since: "", until: "", zoom: "", "b.since": "", "b.until": "" }, false);
            loadTimeline().then(render);
        });
    });
    $("apply").addEventListener("click", function () {
        st.from = $("from").value.trim();
        st.to = $("to").value.trim() === "now" ? "" : $("to").value.trim();
        go({ since: "", until: "", zoom: "" }, false);
        loadTimeline().then(render);
    });
    $("sel-reset").addEventListener("click", function () { go({ since: "", until: "", zoom: "" }); });
    $("sources-all").addEventListener("click", function () { go({ c: [], zoom: "" }); });
    Array.prototype.forEach.call(document.querySelectorAll("#tabs button"), function (b) {
        b.addEventListener("click", function () { go({ view: b.dataset.view === "flame" ? "" : b.dataset.view }); });
    });
    Array.prototype.forEach.call(document.querySelectorAll("#table th[data-sort]"), function (th) {
        th.addEventListener("click", function () {
            if (th.dataset.sort !== "name") go({ sort: th.dataset.sort === "total" ? "total" : "" });
        });
    });
    var typing = null;
    $("search").addEventListener("input", function () {
        clearTimeout(typing);
        typing = setTimeout(function () { go({ q: $("search").value }, true); }, 400);
    });
    $("search").addEventListener("keydown", function (e) {
        if (e.key === "Enter") {
            clearTimeout(typing);
            go({ q: $("search").value });
        }
    });
    $("icase").addEventListener("change", function () { go({ icase: $("icase").checked ? "1" : "" }); });
    $("flip").addEventListener("click", function () { go({ flame: st.flame === "1" ? "" : "1" }, true); });
    PALETTES.forEach(function (p) {
        var o = document.createElement("option");
        o.value = p;
        o.textContent = p;
        $("palette").appendChild(o);
    });
    $("palette").addEventListener("change", function () {
        go({ palette: $("palette").value === "java" ? "" : $("palette").value });
    });

    // the theme: the system's, unless the toggle chose (kept in this browser, not in the URL)
    function applyTheme() {
        var t = localStorage.getItem("docker-flame-theme");
        if (t) document.documentElement.dataset.theme = t;
        else delete document.documentElement.dataset.theme;
    }
    $("theme").addEventListener("click", function () {
        var dark = getComputedStyle(document.documentElement).getPropertyValue("color-scheme").trim() === "dark";
        localStorage.setItem("docker-flame-theme", dark ? "light" : "dark");
        applyTheme();
        redraw();
    });
    if (window.matchMedia) window.matchMedia("(prefers-color-scheme: dark)").addEventListener("change", redraw);

    document.addEventListener("keydown", function (e) {
        var typingIn = /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement && document.activeElement.tagName);
        if (e.key === "Escape") {
            $("menu").hidden = true;
            if (typingIn) document.activeElement.blur();
            else if (st.zoom) go({ zoom: "" });
            return;
        }
        if (typingIn || e.ctrlKey || e.metaKey || e.altKey) {
            if ((e.ctrlKey || e.metaKey) && e.key === "f") {
                e.preventDefault();
                $("search").focus();
            }
            return;
        }
        if (e.key === "/") {
            e.preventDefault();
            $("search").focus();
        } else if (e.key >= "1" && e.key <= "5") {
            go({ view: ["", "table", "sandwich", "diff", "host"][Number(e.key) - 1] });
        }
    });

    function redraw() {
        if (tl) timeline.draw();
        if (tl && st.view === "host") hostview.draw();
        [graph, diffg, callers, callees].forEach(function (g) { if (g.n) g.draw(); });
    }
    var resizing = null;
    window.addEventListener("resize", function () {
        clearTimeout(resizing);
        resizing = setTimeout(redraw, 100);
    });

    // ---- render the state ----

    // ---- the profile type ----

    // The types the store has for the chosen containers (and host, JVM) in the timeline's range,
    // from the listing (an entry per JVM and type); the one in the URL is always offered, cpu
    // when nothing says another.
    function typesHere() {
        var have = {}, from = tl ? tl.since : -Infinity, to = tl ? tl.until : Infinity;
        (sources ? sources.containers : []).forEach(function (e) {
            if (st.c && st.c.length && !st.c.some(function (c) {
                return c === e.name || (c.length >= 4 && e.id.indexOf(c) === 0);
            })) return;
            if (st.host && e.host !== st.host) return;
            if (st.pid && String(e.pid) !== String(st.pid) && e.pid !== 0) return;
            if (e.last <= from || e.first >= to) return;
            have[e.type] = 1;
        });
        have[st.type || "cpu"] = 1;
        return ["cpu", "wall", "offcpu", "alloc", "lock"].filter(function (t) { return have[t]; });
    }

    function fillTypes() {
        var sel = $("type"), want = typesHere(), now = [];
        Array.prototype.forEach.call(sel.options, function (o) { now.push(o.value); });
        if (now.join() !== want.join()) {
            sel.textContent = "";
            want.forEach(function (t) {
                var o = document.createElement("option");
                o.value = t;
                o.textContent = t;
                sel.appendChild(o);
            });
        }
        sel.value = st.type || "cpu";
        sel.disabled = want.length < 2;
    }

    $("type").addEventListener("change", function () {
        var t = $("type").value;
        // a zoom path, a function or a compare side of another type would name nothing there
        go({ type: t === "cpu" ? "" : t, zoom: "", fn: "" });
        loadTimeline().then(function () {
            fillTypes();
            if (st.view === "host") renderHost();
        });
    });

    function render() {
        var v = st.view || "flame";
        showView(v);
        fillTypes();
        $("search").value = st.q || "";
        $("icase").checked = st.icase === "1";
        $("palette").value = st.palette || "java";
        $("flip").textContent = st.flame === "1" ? "icicle" : "flame";
        $("copied").hidden = true;
        $("crumbs").textContent = "";
        $("matched").textContent = "";
        if (v === "table") return renderTable();
        if (v === "sandwich") return renderSandwich();
        if (v === "diff") return renderDiff();
        if (v === "host") return renderHost();
        return renderFlame();
    }

    // What the view shows, for the browser tests (read-only; exact figures, not pixels).
    window.dfView = function () {
        var z = graph.n ? graph.info(graph.z) : null;
        return {
            view: st.view || "flame", type: st.type || "cpu", unit: cur.range ? cur.range.unit : null,
            types: Array.prototype.map.call($("type").options, function (o) { return o.value; }),
            range: cur.range || null, total: cur.total,
            zoomTotal: z ? z.total : null, zoomLabel: z ? z.label : null, nodes: graph.n,
            drawn: graph.drawn, search: cur.search || null,
            table: cur.table ? { rows: cur.table.rows, functions: cur.table.functions } : null,
            sandwich: cur.sandwich ? { fn: cur.sandwich.fn, total: cur.sandwich.total, self: cur.sandwich.self,
                callers: cur.sandwich.callers.total, callees: cur.sandwich.callees.total } : null,
            diff: cur.diff ? { empty: cur.diff.empty || null, a: cur.diff.a, b: cur.diff.b,
                before: cur.diff.tree ? cur.diff.tree.total_before : null,
                after: cur.diff.tree ? cur.diff.tree.total : null } : null,
            timeline: tl ? { since: tl.since, until: tl.until, type: tl.type, unit: tl.unit, load: tl.load,
                series: tl.series.map(function (s) {
                return { name: s.name, pid: s.pid, id: s.id, windows: s.windows, total: s.total };
            }), marks: tl.marks } : null,
            exportRange: cur.exportRange || null,
            host: hostview.tl ? { step: hostview.tl.step, rows: hostview.rows.map(function (r) {
                return { host: r.host, id: r.id, name: r.name, pids: r.pids, bands: r.bands.map(function (b) {
                    return { from: b.from, to: b.to, cpu: b.cpu, peak: b.peak };
                }) };
            }) } : null,
        };
    };
    // Pixels of the timeline for a time, and of a graph node, for the tests' mouse.
    window.dfGeometry = {
        timelineX: function (ms) { return timeline.px(ms); },
        // the middle of band k of the host view's row for container id
        hostBand: function (id, k) {
            var r = hostview.rows.find(function (x) { return x.id === id; });
            return r && r.bands[k] ? hostview.bandXY(r, r.bands[k]) : null;
        },
        node: function (path) {
            var i = graph.find(path);
            if (i < 0) return null;
            var g = graph.geometry();
            return { x: (graph.x[i] - g.x0) * g.scale, w: graph.tot[i] * g.scale,
                y: graph.rowY(graph.depth[i], g.h), h: 18 };
        },
    };

    // ---- start ----

    // The view is asked first and alone; the timeline and the sources (a listing of the whole
    // store) follow once its answer is in. Asked at once, their queries took the cores from the
    // view's merge: on 2 cores the first graph from ClickHouse painted ~0.3 s later
    // (docs/SERVE.md "Figures"). A view that is slow to come (a long range of raw windows) holds
    // them back LATER_MS at most: the timeline is where a user picks a shorter range. The host
    // view is drawn from the timeline: there it comes first. The performance mark says what
    // asked them: the answer, the timer or Copy CLI (the browser test checks the order by it).
    var restAsked = false, sourcesP = null;
    function loadSources() {
        sourcesP = api("sources", "").then(function (s) {
            sources = s;
            $("store").textContent = s.store;
            fillTypes();
            if (st.view === "diff") fillDiffContainers();
        }).catch(function (e) {
            status($("status"), e.message, true);
        });
    }
    function askRest(why) {
        if (restAsked) return;
        restAsked = true;
        // (a timeline asked already: the host view's at start, a preset's, a type's)
        if (tlSeq === 0) loadTimeline();
        loadSources();
        performance.mark("rest-asked", { detail: why });
    }

    applyTheme();
    st = U.parseState(location.search);
    setTimeout(function () { askRest("timer"); }, LATER_MS);
    if (st.view === "host") loadTimeline();
    Promise.resolve(render()).then(function () { askRest("answer"); }, function () { askRest("answer"); });
})();
