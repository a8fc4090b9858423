// docker flame serve: the timeline, one row per recorded JVM (container, pid) of the host, bars of
// samples per second in each bucket of the server's (plugin/web/web_timeline.c), and what the
// server found along them: gaps (nothing recorded), compacted windows, JVM restarts, recreated
// containers. Drag across it to choose a range; a click without a drag chooses that bucket and
// that row's container.
"use strict";
var DF = typeof DF !== "undefined" ? DF : {};

DF.Timeline = (function () {
    var LABEL_W = 190, ROW_H = 30, AXIS_H = 22, PAD_R = 10;

    function Timeline(canvas) {
        this.canvas = canvas;
        this.ctx = canvas.getContext("2d");
        this.tl = null;
        this.sel = null; // {since, until} ms
        this.chosen = []; // container names or ids the graph shows (none: all)
        this.onselect = null;
        this.onhover = null;
        var self = this, drag = null;
        canvas.addEventListener("mousedown", function (e) {
            if (!self.tl || e.button !== 0 || e.offsetX < LABEL_W) return;
            drag = { x0: e.offsetX, x1: e.offsetX, row: self.rowAt(e.offsetY) };
            e.preventDefault();
        });
        window.addEventListener("mousemove", function (e) {
            if (drag) {
                var r = canvas.getBoundingClientRect();
                drag.x1 = Math.max(LABEL_W, Math.min(e.clientX - r.left, self.width() - PAD_R));
                self.draw(drag);
            } else if (e.target === canvas && self.onhover) {
                self.onhover(self.info(e.offsetX, e.offsetY), e);
            }
        });
        canvas.addEventListener("mouseleave", function (e) {
            if (!drag && self.onhover) self.onhover(null, e);
        });
        window.addEventListener("mouseup", function () {
            if (!drag) return;
            var d = drag;
            drag = null;
            if (Math.abs(d.x1 - d.x0) < 4) {
                // one bucket (at the finest step: one window), and the row's container
                var b = self.bucketAt(d.x0);
                if (b < 0) return self.draw();
                var t0 = self.tl.from + b * self.tl.step;
                var row = d.row >= 0 ? self.tl.series[d.row] : null;
                if (self.onselect) self.onselect({ since: t0, until: t0 + self.tl.step, row: row });
            } else {
                var a = self.ms(Math.min(d.x0, d.x1)), z = self.ms(Math.max(d.x0, d.x1));
                // whole seconds: a range a person can read and type
                a = Math.floor(a / 1000) * 1000;
                z = Math.ceil(z / 1000) * 1000;
                if (self.onselect) self.onselect({ since: a, until: z, row: null });
            }
        });
    }

    Timeline.prototype.width = function () {
        return this.canvas.clientWidth || 800;
    };

    // time <-> x in CSS pixels, over the range asked (since..until)
    Timeline.prototype.px = function (ms) {
        var w = this.width() - LABEL_W - PAD_R;
        return LABEL_W + (ms - this.tl.since) / (this.tl.until - this.tl.since) * w;
    };
    Timeline.prototype.ms = function (px) {
        var w = this.width() - LABEL_W - PAD_R;
        return Math.round(this.tl.since + (px - LABEL_W) / w * (this.tl.until - this.tl.since));
    };
    Timeline.prototype.rowAt = function (y) {
        var r = Math.floor(y / ROW_H);
        return this.tl && r >= 0 && r < this.tl.series.length ? r : -1;
    };
    Timeline.prototype.bucketAt = function (x) {
        var b = Math.floor((this.ms(x) - this.tl.from) / this.tl.step);
        return b >= 0 && b < this.tl.buckets ? b : -1;
    };

    Timeline.prototype.rowName = function (s) {
        var multiHost = this.hosts > 1;
        return s.name + " \u00b7 JVM " + s.pid + (multiHost ? " \u00b7 " + s.host : "");
    };

    // What is under the mouse, for the tooltip.
    Timeline.prototype.info = function (x, y) {
        if (!this.tl) return null;
        var r = this.rowAt(y), b = x >= LABEL_W ? this.bucketAt(x) : -1;
        if (r < 0) return null;
        var s = this.tl.series[r], out = { series: s, row: this.rowName(s) };
        if (b >= 0) {
            out.from = this.tl.from + b * this.tl.step;
            out.to = out.from + this.tl.step;
            out.samples = s.samples[b];
            out.covered = s.covered[b];
        }
        out.marks = this.tl.marks.filter(function (m) {
            return m.series === r && b >= 0 && m.to >= out.from && m.from <= out.to;
        });
        return out;
    };

    Timeline.prototype.setData = function (tl) {
        this.tl = tl;
        var hosts = {};
        tl.series.forEach(function (s) { hosts[s.host] = 1; });
        this.hosts = Object.keys(hosts).length;
        // one scale for every row: rows compare
        var max = 0;
        tl.series.forEach(function (s) {
            for (var i = 0; i < s.samples.length; i++)
                if (s.covered[i] > 0) max = Math.max(max, s.samples[i] / (s.covered[i] / 1000));
        });
        this.max = max || 1;
    };

    Timeline.prototype.chosenRow = function (s) {
        if (!this.chosen.length) return true;
        return this.chosen.some(function (c) {
            return c === s.name || (c.length >= 4 && s.id.indexOf(c) === 0);
        });
    };

    function hue(str) {
        var h = 0;
        for (var i = 0; i < str.length; i++) h = (h * 31 + str.charCodeAt(i)) >>> 0;
        return h % 360;
    }

    Timeline.prototype.draw = function (drag) {
        var cv = this.canvas, ctx = this.ctx, tl = this.tl;
        var w = this.width(), rows = tl ? tl.series.length : 0;
        var h = Math.max(rows, 1) * ROW_H + AXIS_H, dpr = window.devicePixelRatio || 1;
        if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
            cv.width = Math.round(w * dpr);
            cv.height = Math.round(h * dpr);
            cv.style.height = h + "px";
        }
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        var cs = getComputedStyle(document.documentElement);
        var fg = cs.getPropertyValue("--fg").trim() || "#000";
        var muted = cs.getPropertyValue("--muted").trim() || "#888";
        var bg = cs.getPropertyValue("--graph-bg").trim() || "#fff";
        ctx.fillStyle = bg;
        ctx.fillRect(0, 0, w, h);
        ctx.font = "12px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        if (!tl || !rows) {
            ctx.fillStyle = muted;
            ctx.fillText(tl ? "nothing recorded in this range" : "loading\u2026", LABEL_W, ROW_H / 2);
            return;
        }
        var self = this, stepPx = this.px(tl.from + tl.step) - this.px(tl.from);
        tl.series.forEach(function (s, r) {
            var y = r * ROW_H, on = self.chosenRow(s);
            ctx.fillStyle = r % 2 ? "rgba(128,128,128,0.06)" : "rgba(128,128,128,0.0)";
            ctx.fillRect(0, y, w, ROW_H);
            // the row's name (the container's: drawn as text, never markup)
            ctx.fillStyle = on ? fg : muted;
            var name = self.rowName(s);
            var max = Math.floor((LABEL_W - 10) / 6.5);
            ctx.fillText(name.length > max ? name.slice(0, max - 1) + "\u2026" : name, 4, y + ROW_H / 2);
            var col = "hsl(" + hue(s.name) + ",55%," + (on ? "50%" : "75%") + ")";
            for (var i = 0; i < tl.buckets; i++) {
                if (!(s.covered[i] > 0)) continue;
                var x = self.px(tl.from + i * tl.step), rate = s.samples[i] / (s.covered[i] / 1000);
                var bh = Math.max(rate > 0 ? 1.5 : 0, rate / self.max * (ROW_H - 6));
                var x0 = Math.max(x, LABEL_W), x1 = Math.min(x + stepPx, w - PAD_R);
                if (x1 <= x0) continue;
                ctx.fillStyle = col;
                ctx.fillRect(x0, y + ROW_H - 3 - bh, Math.max(x1 - x0 - (stepPx > 3 ? 0.5 : 0), 0.5), bh);
                if (rate === 0) { // recorded, nothing ran: a baseline, not a gap
                    ctx.fillStyle = muted;
                    ctx.fillRect(x0, y + ROW_H - 3, x1 - x0, 1);
                }
            }
        });
        // marks
        tl.marks.forEach(function (m) {
            var y = m.series * ROW_H, x0 = Math.max(self.px(m.from), LABEL_W);
            var x1 = Math.min(self.px(m.to), w - PAD_R);
            if (m.kind === "gap") {
                ctx.fillStyle = "rgba(128,128,128,0.18)";
                ctx.fillRect(x0, y + 2, Math.max(x1 - x0, 1), ROW_H - 4);
            } else if (m.kind === "compacted") {
                ctx.fillStyle = "rgba(70,110,200,0.55)";
                ctx.fillRect(x0, y + ROW_H - 2, Math.max(x1 - x0, 1), 2);
            } else {
                ctx.strokeStyle = m.kind === "restart" ? "#d0541b" : "#7a3fb8";
                ctx.lineWidth = 2;
                ctx.beginPath();
                ctx.moveTo(x0, y + 1);
                ctx.lineTo(x0, y + ROW_H - 1);
                ctx.stroke();
                ctx.fillStyle = ctx.strokeStyle;
                ctx.beginPath();
                ctx.moveTo(x0 - 4, y + 1);
                ctx.lineTo(x0 + 4, y + 1);
                ctx.lineTo(x0, y + 7);
                ctx.fill();
            }
        });
        // the axis
        var ay = rows * ROW_H;
        ctx.fillStyle = muted;
        ctx.fillRect(LABEL_W, ay, w - LABEL_W - PAD_R, 1);
        var span = tl.until - tl.since, ticks = [60e3, 300e3, 600e3, 1800e3, 3600e3, 3 * 3600e3,
            6 * 3600e3, 12 * 3600e3, 86400e3];
        var tick = ticks[ticks.length - 1];
        for (var k = 0; k < ticks.length; k++)
            if (span / ticks[k] <= (w - LABEL_W) / 90) {
                tick = ticks[k];
                break;
            }
        var tz = new Date().getTimezoneOffset() * 60000; // ticks on local round times
        for (var t = Math.ceil((tl.since - tz) / tick) * tick + tz; t <= tl.until; t += tick) {
            var tx = this.px(t);
            ctx.fillRect(tx, ay, 1, 4);
            ctx.fillText(DF.util.clock(t, tl.since).slice(0, tick >= 86400e3 ? 10 : 16).replace(/:00$/, "")
                .slice(-5), tx - 14, ay + 13);
        }
        // the selection
        var sel = drag ? { since: this.ms(Math.min(drag.x0, drag.x1)), until: this.ms(Math.max(drag.x0, drag.x1)) }
            : this.sel;
        if (sel) {
            var sx0 = Math.max(this.px(sel.since), LABEL_W), sx1 = Math.min(this.px(sel.until), w - PAD_R);
            ctx.fillStyle = "rgba(60,120,230,0.16)";
            ctx.fillRect(sx0, 0, Math.max(sx1 - sx0, 1), ay);
            ctx.fillStyle = "rgba(60,120,230,0.9)";
            ctx.fillRect(sx0 - 1, 0, 2, ay);
            ctx.fillRect(sx1 - 1, 0, 2, ay);
        }
    };

    return Timeline;
})();

// The host view: the stored CPU of every container of the host over the range (cores, from each
// window's samples and rate: the server's "cores"), one row per container (its JVMs, restarts
// included, in one row), rows grouped by host, Trace-Compass-like: a band where the container was
// recorded, shaded by the cores it held. A click on a band chooses that container and the band's
// time (the flame graph of that run). Names are drawn as text, never markup.
DF.HostView = (function () {
    var LABEL_W = 210, ROW_H = 22, HOST_H = 20, AXIS_H = 22, PAD_R = 10;

    function HostView(canvas) {
        this.canvas = canvas;
        this.ctx = canvas.getContext("2d");
        this.tl = null;
        this.rows = [];
        this.onselect = null;
        this.onhover = null;
        var self = this;
        canvas.addEventListener("click", function (e) {
            var hit = self.hit(e.offsetX, e.offsetY);
            if (hit && hit.band && self.onselect) self.onselect(hit.row, hit.band);
        });
        canvas.addEventListener("mousemove", function (e) {
            if (self.onhover) self.onhover(self.hit(e.offsetX, e.offsetY), e);
        });
        canvas.addEventListener("mouseleave", function (e) {
            if (self.onhover) self.onhover(null, e);
        });
    }

    HostView.prototype.width = function () {
        return this.canvas.clientWidth || 800;
    };
    HostView.prototype.px = function (ms) {
        var w = this.width() - LABEL_W - PAD_R;
        return LABEL_W + (ms - this.tl.since) / (this.tl.until - this.tl.since) * w;
    };

    // Rows from the timeline's series: a container (host, id) per row, its JVMs' cores added;
    // bands: runs of buckets something was recorded in, clipped to the range.
    HostView.prototype.setData = function (tl) {
        this.tl = tl;
        var rows = [], byKey = {}, max = 0;
        tl.series.forEach(function (s) {
            var key = s.host + "\u0000" + s.id, r = byKey[key];
            if (!r) {
                r = byKey[key] = { host: s.host, id: s.id, name: s.name, pids: [], bands: [],
                    cores: new Array(tl.buckets).fill(0), covered: new Array(tl.buckets).fill(false) };
                rows.push(r);
            }
            r.pids.push(s.pid);
            for (var i = 0; i < tl.buckets; i++) {
                r.cores[i] += (s.cores && s.cores[i]) || 0;
                if (s.covered[i] > 0) r.covered[i] = true;
            }
        });
        rows.sort(function (a, b) {
            return a.host < b.host ? -1 : a.host > b.host ? 1 : a.name < b.name ? -1 : a.name > b.name ? 1 : 0;
        });
        rows.forEach(function (r) {
            for (var i = 0; i < tl.buckets; i++) {
                max = Math.max(max, r.cores[i]);
                if (!r.covered[i]) continue;
                var b = r.bands[r.bands.length - 1];
                if (b && b.b1 === i - 1) {
                    b.b1 = i;
                } else {
                    r.bands.push({ b0: i, b1: i });
                }
            }
            r.bands.forEach(function (b) {
                b.from = Math.max(tl.from + b.b0 * tl.step, tl.since);
                b.to = Math.min(tl.from + (b.b1 + 1) * tl.step, tl.until);
                b.cpu = 0; // CPU seconds
                b.peak = 0;
                for (var k = b.b0; k <= b.b1; k++) {
                    b.cpu += r.cores[k] * tl.step / 1000;
                    b.peak = Math.max(b.peak, r.cores[k]);
                }
            });
        });
        this.rows = rows;
        this.max = max || 1;
        // the layout: a host's line, then its containers
        var y = 0, last = null;
        this.lines = [];
        var self = this;
        rows.forEach(function (r) {
            if (r.host !== last) {
                self.lines.push({ host: r.host, y: y });
                y += HOST_H;
                last = r.host;
            }
            r.y = y;
            self.lines.push({ row: r, y: y });
            y += ROW_H;
        });
        this.height = y;
    };

    // What is at (x, y): the row, the bucket, the band.
    HostView.prototype.hit = function (x, y) {
        if (!this.tl) return null;
        var row = null;
        for (var i = 0; i < this.rows.length; i++)
            if (y >= this.rows[i].y && y < this.rows[i].y + ROW_H) row = this.rows[i];
        if (!row || x < LABEL_W) return row ? { row: row } : null;
        var w = this.width() - LABEL_W - PAD_R, tl = this.tl;
        var ms = tl.since + (x - LABEL_W) / w * (tl.until - tl.since);
        var b = Math.floor((ms - tl.from) / tl.step);
        var band = row.bands.find(function (bd) { return b >= bd.b0 && b <= bd.b1; }) || null;
        return { row: row, bucket: b, from: tl.from + b * tl.step, to: tl.from + (b + 1) * tl.step,
            cores: b >= 0 && b < tl.buckets ? row.cores[b] : 0, band: band };
    };

    // The middle of a band in CSS pixels (the tests' mouse).
    HostView.prototype.bandXY = function (row, band) {
        return { x: (this.px(band.from) + this.px(band.to)) / 2, y: row.y + ROW_H / 2 };
    };

    HostView.prototype.draw = function () {
        var cv = this.canvas, ctx = this.ctx, tl = this.tl;
        var w = this.width(), h = (this.height || ROW_H) + AXIS_H, dpr = window.devicePixelRatio || 1;
        if (cv.width !== Math.round(w * dpr) || cv.height !== Math.round(h * dpr)) {
            cv.width = Math.round(w * dpr);
            cv.height = Math.round(h * dpr);
            cv.style.height = h + "px";
        }
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        var cs = getComputedStyle(document.documentElement);
        var fg = cs.getPropertyValue("--fg").trim() || "#000";
        var muted = cs.getPropertyValue("--muted").trim() || "#888";
        ctx.fillStyle = cs.getPropertyValue("--graph-bg").trim() || "#fff";
        ctx.fillRect(0, 0, w, h);
        ctx.font = "12px system-ui, sans-serif";
        ctx.textBaseline = "middle";
        if (!tl || !this.rows.length) {
            ctx.fillStyle = muted;
            ctx.fillText(tl ? "nothing recorded in this range" : "loading\u2026", LABEL_W, ROW_H / 2);
            return;
        }
        var self = this, stepPx = this.px(tl.from + tl.step) - this.px(tl.from);
        var clip = function (t) { return t.length > 30 ? t.slice(0, 29) + "\u2026" : t; };
        this.lines.forEach(function (l, k) {
            if (l.host !== undefined) {
                ctx.fillStyle = fg;
                ctx.font = "bold 12px system-ui, sans-serif";
                ctx.fillText(clip("host " + l.host), 4, l.y + HOST_H / 2);
                ctx.font = "12px system-ui, sans-serif";
                return;
            }
            var r = l.row, y = l.y;
            ctx.fillStyle = k % 2 ? "rgba(128,128,128,0.06)" : "rgba(128,128,128,0.0)";
            ctx.fillRect(0, y, w, ROW_H);
            ctx.fillStyle = fg;
            ctx.fillText(clip(r.name + (r.pids.length > 1 ? " (" + r.pids.length + " JVMs)" : "")), 14, y + ROW_H / 2);
            // the cells: lighter when idle, darker the more cores (one scale for every row)
            for (var i = 0; i < tl.buckets; i++) {
                if (!r.covered[i]) continue;
                var x0 = Math.max(self.px(tl.from + i * tl.step), LABEL_W);
                var x1 = Math.min(self.px(tl.from + i * tl.step) + stepPx, w - PAD_R);
                if (x1 <= x0) continue;
                var f = r.cores[i] / self.max;
                ctx.fillStyle = "hsl(" + (210 - Math.round(f * 200)) + ",70%," + Math.round(88 - f * 43) + "%)";
                ctx.fillRect(x0, y + 3, Math.max(x1 - x0, 0.5), ROW_H - 6);
            }
            // the bands' outlines: what a click chooses
            ctx.strokeStyle = muted;
            ctx.lineWidth = 1;
            r.bands.forEach(function (b) {
                var bx0 = Math.max(self.px(b.from), LABEL_W), bx1 = Math.min(self.px(b.to), w - PAD_R);
                ctx.strokeRect(bx0 + 0.5, y + 2.5, Math.max(bx1 - bx0 - 1, 0.5), ROW_H - 5);
            });
        });
        var ay = this.height;
        ctx.fillStyle = muted;
        ctx.fillRect(LABEL_W, ay, w - LABEL_W - PAD_R, 1);
        ctx.fillText(DF.util.clock(tl.since), LABEL_W, ay + 13);
        var end = DF.util.clock(tl.until, tl.since);
        ctx.fillText(end, w - PAD_R - ctx.measureText(end).width, ay + 13);
        // cores of CPU; threads of a wall or off-CPU time (ns per ns); the server says which
        ctx.fillText("darker: more " + (tl.load || "cores") + " (" + this.max.toFixed(2) + " at most)",
            LABEL_W + 160, ay + 13);
    };

    return HostView;
})();
