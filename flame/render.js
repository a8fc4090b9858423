"use strict";
// docker-flame flame graph interactivity. Frames are <g> elements in #frames holding
// <title>, <rect>, <text>; each <g> carries its exact position in samples (data-s = start,
// data-w = width), so zoom and "Matched" are computed in samples, not rounded pixels.
var details, searchbtn, icbtn, unzoombtn, matchedtxt, all_frames = [], ignorecase = false;
var searching = null, zoomed = null, svgw = 0;

function init(evt) {
    details = document.getElementById("details").firstChild;
    searchbtn = document.getElementById("search");
    icbtn = document.getElementById("ignorecase");
    unzoombtn = document.getElementById("unzoom");
    matchedtxt = document.getElementById("matched");
    svgw = +document.getElementsByTagName("svg")[0].getAttribute("width");
    var gs = document.getElementById("frames").children;
    for (var i = 0; i < gs.length; i++) {
        var g = gs[i], r = g.getElementsByTagName("rect")[0], t = g.getElementsByTagName("text")[0];
        var title = g.getElementsByTagName("title")[0].textContent;
        var cut = title.lastIndexOf(" (");
        var f = {
            g: g, rect: r, text: t, title: title, name: cut >= 0 ? title.substring(0, cut) : title,
            s: +g.getAttribute("data-s"), w: +g.getAttribute("data-w"), y: +r.getAttribute("y"),
            x0: r.getAttribute("x"), w0: r.getAttribute("width"), fill: r.getAttribute("fill"),
            label: t.textContent, tx: t.getAttribute("x")
        };
        g.flame = f;
        all_frames.push(f);
    }
    var params = get_params();
    if (params.x && params.y) {
        var x = +params.x, y = +params.y;
        for (var j = 0; j < all_frames.length; j++)
            if (Math.abs(+all_frames[j].x0 - x) < 0.05 && all_frames[j].y == y) {
                zoom(all_frames[j]);
                break;
            }
    }
    if (params.s)
        search(params.s);
}

function get_params() {
    var out = {};
    var q = window.location.search.substring(1).split("&");
    for (var i = 0; i < q.length; i++) {
        if (!q[i]) continue;
        var kv = q[i].split("=");
        try { out[decodeURIComponent(kv[0])] = decodeURIComponent((kv[1] || "").replace(/\+/g, " ")); } catch (e) {}
    }
    return out;
}

function set_params(changes) {
    var p = get_params();
    for (var k in changes) {
        if (changes[k] === null) delete p[k]; else p[k] = changes[k];
    }
    var q = [];
    for (var k2 in p) q.push(encodeURIComponent(k2) + "=" + encodeURIComponent(p[k2]));
    try {
        history.replaceState(null, "", window.location.pathname + (q.length ? "?" + q.join("&") : ""));
    } catch (e) {} // some viewers forbid it; the graph still works
}

function frame_of(node) {
    while (node && node.parentNode) {
        if (node.flame) return node.flame;
        node = node.parentNode;
    }
    return null;
}

// Label for a box w pixels wide: the name, cut with ".." to fit, nothing under 3 chars.
function label_for(name, w) {
    var chars = Math.floor(w / (cfg.fontsize * cfg.fontwidth));
    if (chars < 3) return "";
    if (name.length <= chars) return name;
    return name.substring(0, chars - 2) + "..";
}

function place(f, x, w) {
    f.rect.setAttribute("x", x.toFixed(1));
    f.rect.setAttribute("width", w.toFixed(1));
    f.text.setAttribute("x", (x + 3).toFixed(2));
    f.text.textContent = label_for(f.name, w);
}

function zoom(z) {
    if (zoomed) unzoom_frames();
    zoomed = z;
    var eps = z.w * 1e-9, full = svgw - 2 * cfg.xpad, scale = full / z.w;
    for (var i = 0; i < all_frames.length; i++) {
        var f = all_frames[i], c = f.g.classList;
        var above = cfg.inverted ? f.y < z.y : f.y > z.y; // ancestors' side
        if (above) {
            if (f.s <= z.s + eps && f.s + f.w >= z.s + z.w - eps) {
                c.add("parent");
                place(f, cfg.xpad, full);
            } else c.add("hide");
        } else if (f.s >= z.s - eps && f.s + f.w <= z.s + z.w + eps) {
            place(f, cfg.xpad + (f.s - z.s) * scale, f.w * scale);
        } else c.add("hide");
    }
    unzoombtn.classList.remove("hide");
    set_params({x: z.x0, y: String(z.y)});
}

function unzoom_frames() {
    for (var i = 0; i < all_frames.length; i++) {
        var f = all_frames[i];
        f.g.classList.remove("parent");
        f.g.classList.remove("hide");
        f.rect.setAttribute("x", f.x0);
        f.rect.setAttribute("width", f.w0);
        f.text.setAttribute("x", f.tx);
        f.text.textContent = f.label;
    }
    zoomed = null;
}

function unzoom() {
    unzoom_frames();
    unzoombtn.classList.add("hide");
    set_params({x: null, y: null});
}

function search_prompt() {
    if (searching !== null) {
        reset_search();
        return;
    }
    var term = prompt("Enter a search term (regexp allowed, eg: ^ext4_)" +
                      (ignorecase ? ", ignoring case" : "") +
                      "\nPress Ctrl-i to toggle case sensitivity", "");
    if (term !== null && term !== "") search(term);
}

function reset_search() {
    for (var i = 0; i < all_frames.length; i++) {
        all_frames[i].rect.setAttribute("fill", all_frames[i].fill);
        all_frames[i].g.classList.remove("m");
    }
    searching = null;
    searchbtn.classList.remove("show");
    searchbtn.firstChild.nodeValue = "Search";
    matchedtxt.classList.add("hide");
    set_params({s: null});
}

// Highlight all_frames whose name matches the regexp; "Matched" is the share of all samples under
// matching all_frames, counting a match nested inside another match once.
function search(term) {
    var re;
    try {
        re = new RegExp(term, ignorecase ? "i" : "");
    } catch (e) {
        matchedtxt.classList.remove("hide");
        matchedtxt.firstChild.nodeValue = "Bad regexp";
        return;
    }
    if (searching !== null) reset_search();
    var hits = [];
    for (var i = 0; i < all_frames.length; i++) {
        var f = all_frames[i];
        if (re.test(f.name)) {
            f.rect.setAttribute("fill", cfg.searchcolor);
            f.g.classList.add("m"); // black text on the search colour
            hits.push(f);
        }
    }
    searching = term;
    searchbtn.classList.add("show");
    searchbtn.firstChild.nodeValue = "Reset Search";
    set_params({s: term});
    hits.sort(function (a, b) { return a.s - b.s || b.w - a.w; });
    var sum = 0, end = -Infinity;
    for (var j = 0; j < hits.length; j++) {
        if (hits[j].s + hits[j].w <= end + cfg.total * 1e-12) continue; // nested in a match
        sum += hits[j].w;
        end = hits[j].s + hits[j].w;
    }
    var pct = cfg.total > 0 ? 100 * sum / cfg.total : 0;
    matchedtxt.classList.remove("hide");
    matchedtxt.firstChild.nodeValue = "Matched: " + (pct == 100 ? "100" : pct.toFixed(1)) + "%";
}

function toggle_ignorecase() {
    ignorecase = !ignorecase;
    icbtn.classList.toggle("show", ignorecase);
    if (searching !== null) search(searching);
}

window.addEventListener("click", function (e) {
    var t = e.target;
    if (t.id == "unzoom") { unzoom(); return; }
    if (t.id == "search") { search_prompt(); return; }
    if (t.id == "ignorecase") { toggle_ignorecase(); return; }
    var f = frame_of(t);
    if (!f) return;
    if (f.g.classList.contains("parent")) unzoom_frames();
    zoom(f);
}, false);

window.addEventListener("mouseover", function (e) {
    var f = frame_of(e.target);
    if (f) details.nodeValue = cfg.nametype + " " + f.title;
}, false);

window.addEventListener("mouseout", function (e) {
    if (frame_of(e.target)) details.nodeValue = " ";
}, false);

window.addEventListener("keydown", function (e) {
    if (e.keyCode === 114 || (e.ctrlKey && e.keyCode === 70)) { // F3, Ctrl-F
        e.preventDefault();
        search_prompt();
    } else if (e.ctrlKey && e.keyCode === 73) { // Ctrl-I
        e.preventDefault();
        toggle_ignorecase();
    }
}, false);
