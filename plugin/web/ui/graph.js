// docker flame serve: the flame graph on a canvas. The server sends the call tree in preorder
// (flame/calltree.c): per node depth, offset, total, self, name, colour (and a diff's before
// columns); a node's subtree is the run of nodes after it that are deeper. Drawing walks the
// zoomed node's subtree and skips every subtree narrower than half a pixel, so a redraw costs the
// visible nodes, not the tree. Names go to the canvas (fillText) and to the tooltip by
// textContent only.
"use strict";
var DF = typeof DF !== "undefined" ? DF : {};

DF.Graph = (function () {
    var ROW = 18, SEARCH = "#e600e6";

    function Graph(canvas, opts) {
        this.canvas = canvas;
        this.ctx = canvas.getContext("2d");
        this.opts = opts || {};
        this.flame = false; // false: icicle (root at the top); true: flame (root at the bottom)
        this.n = 0;
        this.z = 0;
        this.hover = -1;
        this.onhover = null;
        this.onclick = null;
        this.oncontext = null;
        var self = this;
        canvas.addEventListener("mousemove", function (e) {
            var i = self.hit(e.offsetX, e.offsetY);
            if (i !== self.hover) {
                self.hover = i;
                self.draw();
            }
            if (self.onhover) self.onhover(i, e);
        });
        canvas.addEventListener("mouseleave", function (e) {
            if (self.hover >= 0) {
                self.hover = -1;
                self.draw();
            }
            if (self.onhover) self.onhover(-1, e);
        });
        canvas.addEventListener("click", function (e) {
            var i = self.hit(e.offsetX, e.offsetY);
            if (i >= 0 && self.onclick) self.onclick(i, e);
        });
        canvas.addEventListener("contextmenu", function (e) {
            var i = self.hit(e.offsetX, e.offsetY);
            if (i >= 0 && self.oncontext) {
                e.preventDefault();
                self.oncontext(i, e);
            }
        });
    }

    // The server's tree (web_api.c write_tree) into arrays.
    Graph.prototype.setData = function (t) {
        var k = t.diff ? 8 : 6, n = t.nodes.length / k;
        this.t = t;
        this.n = n;
        this.depth = new Uint32Array(n);
        this.x = new Float64Array(n);
        this.tot = new Float64Array(n);
        this.self = new Float64Array(n);
        this.name = new Int32Array(n);
        this.col = new Array(n);
        this.tb = t.diff ? new Float64Array(n) : null;
        this.sb = t.diff ? new Float64Array(n) : null;
        this.parent = new Int32Array(n);
        this.end = new Uint32Array(n);
        this.cut = {};
        for (var i = 0, o = 0; i < n; i++, o += k) {
            this.depth[i] = t.nodes[o];
            this.x[i] = t.nodes[o + 1];
            this.tot[i] = t.nodes[o + 2];
            this.self[i] = t.nodes[o + 3];
            this.name[i] = t.nodes[o + 4];
            this.col[i] = DF.util.rgb(t.nodes[o + 5]);
            if (t.diff) {
                this.tb[i] = t.nodes[o + 6];
                this.sb[i] = t.nodes[o + 7];
            }
        }
        for (var j = 0; j < t.others.length; j += 2) this.cut[t.others[j]] = t.others[j + 1];
        // parents and subtree ends from the depths (preorder)
        var stack = [];
        for (i = 0; i < n; i++) {
            while (stack.length && this.depth[stack[stack.length - 1]] >= this.depth[i])
                this.end[stack.pop()] = i;
            this.parent[i] = stack.length ? stack[stack.length - 1] : -1;
            stack.push(i);
        }
        while (stack.length) this.end[stack.pop()] = n;
        this.hits = {};
        (t.hits || []).forEach(function (h) { this.hits[h] = true; }, this);
        this.z = 0;
        this.hover = -1;
    };

    Graph.prototype.setHits = function (hits) {
        this.hits = {};
        (hits || []).forEach(function (h) { this.hits[h] = true; }, this);
    };

    Graph.prototype.label = function (i) {
        if (this.name[i] < 0) return "other (" + DF.util.count(this.cut[i] || 0) + " frames cut)";
        return DF.util.label(this.t.names, this.t.strip, this.name[i]);
    };

    // The full names from the root's child down to node i (the zoom path the server reads).
    Graph.prototype.path = function (i) {
        var p = [];
        for (; i > 0; i = this.parent[i]) p.unshift(this.t.names[this.name[i]]);
        return p;
    };

    // The node at the end of path (full names), or -1.
    Graph.prototype.find = function (path) {
        var i = 0;
        for (var d = 0; d < path.length; d++) {
            var found = -1;
            for (var c = i + 1; c < this.end[i]; c = this.end[c])
                if (this.name[c] >= 0 && this.t.names[this.name[c]] === path[d]) {
                    found = c;
                    break;
                }
            if (found < 0) return -1;
            i = found;
        }
        return i;
    };

    // Does node i's subtree hold an "other" node (a cut the server can fill by zooming there)?
    Graph.prototype.hasCut = function (i) {
        for (var c = i; c < this.end[i]; c++) if (this.name[c] < 0) return true;
        return false;
    };

    Graph.prototype.info = function (i) {
        var p = this.parent[i];
        return {
            label: this.label(i), other: this.name[i] < 0, depth: this.depth[i],
            total: this.tot[i], self: this.self[i], parentTotal: p >= 0 ? this.tot[p] : this.tot[i],
            before: this.tb ? this.tb[i] : null, selfBefore: this.sb ? this.sb[i] : null,
        };
    };

    Graph.prototype.zoom = function (i) {
        this.z = i >= 0 && i < this.n ? i : 0;
        this.draw();
    };

    Graph.prototype.rows = function () {
        var max = this.depth[this.z];
        for (var i = this.z; i < this.end[this.z]; i++) if (this.depth[i] > max) max = this.depth[i];
        return max + 1;
    };

    Graph.prototype.geometry = function () {
        var w = this.canvas.clientWidth || 800;
        return { w: w, h: this.rows() * ROW + 4, x0: this.x[this.z], scale: w / (this.tot[this.z] || 1) };
    };

    Graph.prototype.rowY = function (d, h) {
        return this.flame ? h - (d + 1) * ROW - 2 : d * ROW + 2;
    };

    // The node under (mx, my) in CSS pixels, or -1.
    Graph.prototype.hit = function (mx, my) {
        if (!this.n) return -1;
        var g = this.geometry();
        var d = this.flame ? Math.floor((g.h - 2 - my) / ROW) : Math.floor((my - 2) / ROW);
        if (d < 0) return -1;
        if (d < this.depth[this.z]) { // an ancestor of the zoomed node: full width
            for (var a = this.z; a >= 0; a = this.parent[a]) if (this.depth[a] === d) return a;
            return -1;
        }
        var i = this.z;
        while (i < this.end[this.z]) {
            var px = (this.x[i] - g.x0) * g.scale, pw = this.tot[i] * g.scale;
            if (mx < px || mx >= px + pw || pw < 0.5) {
                i = this.end[i];
                continue;
            }
            if (this.depth[i] === d) return i;
            i++;
        }
        return -1;
    };

    Graph.prototype.theme = function () {
        var cs = getComputedStyle(document.documentElement);
        return {
            bg: cs.getPropertyValue("--graph-bg").trim() || "#fff",
            fg: cs.getPropertyValue("--fg").trim() || "#000",
            outline: cs.getPropertyValue("--outline").trim() || "#000",
        };
    };

    function darkFill(hex) {
        var c = parseInt(hex.slice(1), 16);
        var l = 0.299 * (c >> 16) + 0.587 * ((c >> 8) & 255) + 0.114 * (c & 255);
        return l < 110;
    }

    Graph.prototype.draw = function () {
        var cv = this.canvas, ctx = this.ctx;
        if (!this.n) {
            ctx.clearRect(0, 0, cv.width, cv.height);
            return;
        }
        var g = this.geometry(), dpr = window.devicePixelRatio || 1;
        var wantW = Math.round(g.w * dpr), wantH = Math.round(g.h * dpr);
        if (cv.width !== wantW || cv.height !== wantH) {
            cv.width = wantW;
            cv.height = wantH;
            cv.style.height = g.h + "px";
        }
        ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
        var th = this.theme();
        ctx.fillStyle = th.bg;
        ctx.fillRect(0, 0, g.w, g.h);
        ctx.font = "12px system-ui, -apple-system, 'Segoe UI', sans-serif";
        ctx.textBaseline = "middle";
        var charW = this.charW || (this.charW = ctx.measureText("abcdefghijklmnopqrstuvwxyz").width / 26);
        var self = this;
        function box(i, px, pw, dim) {
            var y = self.rowY(self.depth[i], g.h);
            var hit = self.name[i] >= 0 && self.hits[self.name[i]];
            var fill = hit ? SEARCH : self.col[i];
            ctx.globalAlpha = dim ? 0.55 : 1;
            ctx.fillStyle = fill;
            ctx.fillRect(px, y, Math.max(pw - 0.5, 0.5), ROW - 1);
            if (pw > 24) {
                var max = Math.floor((pw - 6) / charW), text = self.label(i);
                if (text.length > max) text = max > 2 ? text.slice(0, max - 2) + ".." : "";
                if (text) {
                    ctx.fillStyle = darkFill(fill) ? "#fff" : "#000";
                    ctx.fillText(text, px + 3, y + ROW / 2);
                }
            }
            ctx.globalAlpha = 1;
            if (i === self.hover) {
                ctx.strokeStyle = th.outline;
                ctx.lineWidth = 1.5;
                ctx.strokeRect(px + 0.75, y + 0.75, Math.max(pw - 2, 1), ROW - 2.5);
            }
        }
        // the zoomed node's ancestors, full width and dimmed (as the CLI's SVG)
        for (var a = this.parent[this.z]; a >= 0; a = this.parent[a]) box(a, 0, g.w, true);
        var drawn = 0;
        for (var i = this.z; i < this.end[this.z];) {
            var px = (this.x[i] - g.x0) * g.scale, pw = this.tot[i] * g.scale;
            if (pw < 0.5) { // this node and everything under it: narrower than half a pixel
                i = this.end[i];
                continue;
            }
            box(i, px, pw, false);
            drawn++;
            i++;
        }
        this.drawn = drawn;
    };

    return Graph;
})();
