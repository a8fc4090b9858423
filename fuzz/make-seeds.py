#!/usr/bin/env python3
"""Writes the seed corpora fuzz/corpus/<harness>/ (small, valid-looking inputs plus a few hostile
ones: the fuzzer mutates from there). Run from the repository root after changing it; the seeds
are committed. Seeds start with the harness's options byte where the harness has one."""
import os, struct

PERF = "tests/data/stackcollapse/inputs/perf-jdk17-container-work.txt"
out = {}

def add(h, name, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogateescape")
    out.setdefault(h, []).append((name, data))

# perf script samples: the first few of the real capture, and hostile ones
text = open(PERF, encoding="utf-8", errors="surrogateescape").read()
samples = text.split("\n\n")
real = "\n\n".join(samples[:6]) + "\n"
hostile = (
    "java 1/2 [001] 12.5: 1 cycles:\n"
    "\t7f00 <script>alert(1)</script>;]]>&\"'\x01\x7f (/tmp/perf-1.map)\n"
    "\tffffffff81000000 do_syscall_64+0x1 ([kernel.kallsyms])\n"
    "\t1234 a->b->c (/tmp/perf-7.map)\n"
    "\t5678 [unknown] ([unknown])\n\n"
    "perf 9 [000] 1.0: 10 cpu-clock:u: \t401000 main+0x1 (/bin/x)\n\n"
    "t\xc3\x28 1 2.0: 5 cycles: \n\t0 LFoo;::bar (/tmp/perf-1.map)\n"
)
for i, opts in enumerate([0x00, 0x0f, 0x70, 0xff]):
    add("fold", "real-%02x" % opts, bytes([opts]) + real.encode("utf-8", "surrogateescape"))
    add("fold_compat", "real-%02x" % opts, bytes([opts]) + real.encode("utf-8", "surrogateescape"))
add("fold", "hostile", b"\x0c" + hostile.encode("utf-8", "surrogateescape"))
add("fold_compat", "hostile", b"\x30" + hostile.encode("utf-8", "surrogateescape"))

folded = "main;a;b 3\nmain;a;c 2\nmain;d 1\nthread;java.lang.Thread.run;Work.step_[j] 7\n"
diff = "main;a;b 3 4\nmain;a;c 2 0\nmain;d 0 1\n"
odd = "main;<script>;&amp; 1\n;; 2\na;b 1.5\na;\xff\xfe;c 2\n\tx;y  3  \n"
for name, d in [("folded", folded), ("diff", diff), ("odd", odd)]:
    add("profile", name, "\x00" + d)
    add("profile", name + "-lines", "\x87" + d)
add("profile", "svg", "\x00<?xml version=\"1.0\"?>\n<svg>\n<metadata id=\"docker-flame-data\">\nv1 1 2 1\nYQ==\nYg==\n0 0,1 3\n</metadata>\n")

add("svg_xml", "names", "\x00title <b>&\"\n" + folded + odd)
add("svg_xml", "title", "\x0f]]><!-- \xff\x01 \"'&\n" + folded)
add("svg_xml", "diff", "\xf0a\n" + diff)
add("svg_xml", "unicode", "\x00\xe2\x82\xac\n\xf0\x9f\x94\xa5;\xed\xa0\x80;\xef\xbf\xbe 1\n")

add("svg_load", "one", "<metadata id=\"docker-flame-data\" data-format=\"docker-flame-folded-v1\">\n"
    "v1 1 6 3\nYQ==\nYg==\nYw==\nZg==\nZw==\nbWFpbg==\n0 0,1,2 3\n0 5,3 2\n2 4 1\n</metadata>\n")
add("svg_load", "two", "<metadata id=\"docker-flame-data\" data-format=\"docker-flame-folded-v1\">\n"
    "v1 2 5 2\nYQ==\nYg==\nYw==\nZg==\nbWFpbg==\n0 0,1,2 3 4\n0 4,3 2 0\n</metadata>\n")
add("svg_load", "omitted", "<!-- docker-flame-data omitted (too large) -->\n")

add("diff", "diff", "\x00" + folded + "\0" + "main;a;b 1\nmain;e 5\nthread;java.lang.Thread.run;Work.step_[j] 2\n")
add("diff", "hex-mirror", "\x0d" + "main;0x7f00ab;f 3\nmain;g 1\n\0main;0x7f11cd;f 3\nx 9\n")
add("diff", "merge", "\x48" + folded + "\0" + "a;b 1000\n")
add("perfmap", "jvm", "7f0000001000 40 Ljava/lang/String;::hashCode\n0x7f0000002000 0x100 Interpreter\n"
    "7f0000001010 8 over<lap>\x01\x1b[31m\n7f0000003000 0 zero\nffffffffffffffff 10 wrap\n"
    "7f0000004000 40000001 huge\nnot a line\n")
add("perfmap", "agent", "7fd0a8ee5000 a00 long Work.step(java.util.Random)\n7fd0a8938c00 100 StubRoutines (1)\n")

add("proc", "status", "Name:\tjava\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t42\nNgid:\t0\nPid:\t42\nPPid:\t1\n"
    "Uid:\t1000\t1000\t1000\t1000\nGid:\t1000\t1000\t1000\t1000\nNStgid:\t42\t7\nNSpid:\t42\t7\n")
add("proc", "maps", "7f00-7f10 r-xp 00000000 08:01 123 /opt/java/lib/server/libjvm.so\n"
    "7f10-7f20 r--p 00000000 08:01 124 /usr/lib/x86_64-linux-gnu/libc.so.6\n")
add("proc", "release", "IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"17.0.9\"\nJAVA_VERSION_DATE=\"2023-10-17\"\n")
add("proc", "release8", "JAVA_VERSION=\"1.8.0_392\"\n")
add("proc", "argv", "java\0-XX:+PreserveFramePointer\0-Xmx1g\0-XX:-PreserveFramePointer\0-jar\0app.jar\0")
add("proc", "perfstream", bytes.fromhex("50455246494c4532") + struct.pack("<QQ", 16, 0)
    + struct.pack("<IHH", 9, 0, 16) + b"\0" * 8)

for name, d in [("ok", "0\n"), ("load-ok", "0\n0\n"), ("load-rc", "0\nreturn code: 0\n"),
                ("load-fail", "-1\nAgent load failed\n"), ("jdk21", "0\nreturn code: 1\n"),
                ("garbage", "\xff\x00HTTP/1.1 200\r\n"), ("neg", "0\n-2147483648\n")]:
    add("attach", name, d)

def frame(s, b):
    return bytes([s, 0, 0, 0]) + struct.pack(">I", len(b)) + b
proto = (b"V 1\nJ {\"pid\":42,\"nspid\":7,\"uid\":1000,\"cmdline\":\"java -jar x\",\"attach\":\"agent\"}\n"
         b"P {\"elapsed_ms\":1000,\"duration_ms\":5000,\"samples\":10,\"jvms\":1}\nW map: 3 lines dropped\n"
         b"F main;a;b 3\nF main;c 2\nS {\"samples\":5,\"lost\":0}\nD\n")
add("proto", "run", proto)
add("proto", "error", "V 1\nE no_jvm no JVM in the container (seen: 1 sh)\n")
add("proto", "version", "V 2\n")
add("demux", "split", b"\x05" + frame(1, proto[:30]) + frame(2, b"perf: warning\n") + frame(1, proto[30:]))
add("demux", "small-lines", b"\x25" + frame(2, b"x" * 100 + b"\n") + frame(1, proto))
add("demux", "tty", b"\x00V 1\nD\n")

meta = "{\"Name\":\"fuzz\",\"Metadata\":{},\"Endpoints\":{\"docker\":{\"Host\":\"tcp://10.0.0.1\",\"SkipTLSVerify\":false}}}"
add("endpoint", "current", "\x00{\"currentContext\":\"fuzz\"}\0" + meta + "\0-H\nunix:///var/run/docker.sock\nflame")
add("endpoint", "context", "\x03{}\0{\"Endpoints\":{\"docker\":{\"Host\":\"ssh://u@h\"}}}\0--context=fuzz\n--tlsverify=true\nflame")
add("endpoint", "bad", "\x00{\"currentContext\":7}\0[]\0--tls\n-D\n--log-level\ndebug\n-c\nx")

add("engine", "inspect", "\x241.41\n{\"Id\":\"abc\",\"State\":{\"Pid\":42,\"Running\":true},\"Name\":\"/web\"}")
add("engine", "404", "\x011.41\n{\"message\":\"No such container: x\"}")
add("engine", "ping", "\x241.43\nOK")
add("engine", "old", "\x241.12\nOK")
add("engine", "stream", b"\x081.41\n" + frame(1, b"V 1\nF a;b 2\n") + frame(2, b"err\n") + frame(1, b"D\n"))
add("engine", "500-text", "\x02x\nnot json\r\nsecond line")

# serve (plugin/web/): mode byte 0 a query string, 1 a Host header + allowed names, 2 --listen
add("web_query", "all-keys", "\x00since=1795711200000&until=1795711260000&c=web&c=api%20b&host=n1"
    "&pid=42&nodes=100&root=main%3BWork.run&q=%2FWork%5C.step%2F&icase=1&fn=a%2Bb&palette=hot"
    "&format=pprof&sort=total&limit=5&norm=absolute&width=300")
add("web_query", "side-b", "\x00c=web&b.c=web2&b.since=-3h&b.until=-2h&b.host=x&b.pid=7")
add("web_query", "bad-escape", "\x00since=2026-11-26T16:00:00Z&until=now&q=a+b&c=%zz")
add("web_query", "host", "\x01localhost:8080\0flame.internal\0localhost:9000")
add("web_query", "host-v6", "\x01[::1]:8080")
add("web_query", "listen-v6", "\x02[::1]:7")
add("web_query", "listen-any", "\x020.0.0.0:65535")

for h, files in out.items():
    d = os.path.join("fuzz/corpus", h)
    os.makedirs(d, exist_ok=True)
    for name, data in files:
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
print("seeds:", {h: len(f) for h, f in sorted(out.items())})
