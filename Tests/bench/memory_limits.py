#!/usr/bin/env python3
# memory_limits.py -- memory and loop-stall figures for request bodies and output backlogs (issue 13, items 3 and 6).
#
#   python3 Tests/bench/memory_limits.py .build/release/canopy put-anon|put-admin|unfinished|stalled [serve options]
#
# Starts `canopy serve` on a free port with a temporary data directory (default rules: only the admin writes) and:
#   put-anon / put-admin  one ~197 MB PUT (200,000 children of ~1 KB), anonymous or as the admin, while another
#                         connection reads a small value of another namespace every 5 ms: peak RSS, read p50/p99/max
#   unfinished            ten connections each sending 150 MiB of a 151 MiB body and stopping: RSS, answers
#   stalled               20 SSE subscribers that never read, then 80 different 1 MiB values: peak RSS, drops
# Figures, not assertions: the README and the closing note of issue 13 quote them. Not run by Tests/run.sh.
import json, os, socket, subprocess, sys, tempfile, threading, time

BIN = sys.argv[1]
SCENARIO = sys.argv[2]
EXTRA = sys.argv[3:]

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def rss_kib(pid, field="VmRSS"):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0

class Daemon:
    def __init__(self, extra):
        self.dir = tempfile.mkdtemp(prefix="canopy-measure-")
        self.port = free_port()
        self.proc = subprocess.Popen([BIN, "serve", "--port", str(self.port), "--data", self.dir] + extra,
                                     stdout=subprocess.DEVNULL, stderr=open(self.dir + "/log", "w"))
        for _ in range(200):
            try:
                socket.create_connection(("127.0.0.1", self.port)).close(); break
            except OSError: time.sleep(0.05)
        self.admin = open(self.dir + "/admin.credential").read().strip()
    def stop(self):
        self.proc.kill(); self.proc.wait()

def request(port, method, path, body=b"", headers=None, timeout=60):
    s = socket.create_connection(("127.0.0.1", port)); s.settimeout(timeout)
    h = f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
    for k, v in (headers or {}).items(): h += f"{k}: {v}\r\n"
    s.sendall(h.encode() + b"\r\n" + body)
    data = b""
    while True:
        try:
            c = s.recv(65536)
        except (ConnectionResetError, socket.timeout): break
        if not c: break
        data += c
    s.close()
    return data

def big_body(mb):
    n = mb * 1000  # ~1 KB per child
    v = "x" * 980
    parts = ",".join(f'"k{i:07d}":"{v}"' for i in range(n))
    return ("{" + parts + "}").encode()

class Reader(threading.Thread):
    """Small reads, one due every 5 ms, on one keep-alive connection: the latency of each."""
    def __init__(self, port, auth):
        super().__init__(daemon=True); self.port = port; self.auth = auth; self.lat = []; self.stop = False
    def run(self):
        s = socket.create_connection(("127.0.0.1", self.port))
        req = f"GET /small.json?ns=other&auth={self.auth} HTTP/1.1\r\nHost: x\r\n\r\n".encode()
        while not self.stop:
            t = time.perf_counter(); s.sendall(req); buf = b""
            while b"\r\n\r\n" not in buf: buf += s.recv(65536)
            head, rest = buf.split(b"\r\n\r\n", 1)
            length = int([l for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0].split(b":")[1])
            while len(rest) < length: rest += s.recv(65536)
            self.lat.append((time.perf_counter() - t) * 1000); time.sleep(0.005)
    def summary(self):
        l = sorted(self.lat)
        return f"reads={len(l)} p50={l[len(l)//2]:.1f}ms p99={l[int(len(l)*0.99)]:.1f}ms max={l[-1]:.1f}ms"

def sampler(pid, out, stop):
    while not stop.is_set():
        try: out.append(rss_kib(pid))
        except Exception: return
        time.sleep(0.02)

def scenario_put(who):
    d = Daemon(EXTRA)
    try:
        request(d.port, "PUT", f"/small.json?ns=other&auth={d.admin}", b'"hi"')
        body = big_body(197)
        base = rss_kib(d.proc.pid)
        r = Reader(d.port, d.admin); r.start(); time.sleep(0.5); r.lat.clear()
        samples = []; stop = threading.Event()
        threading.Thread(target=sampler, args=(d.proc.pid, samples, stop), daemon=True).start()
        t = time.perf_counter()
        q = f"?auth={d.admin}" if who == "admin" else ""
        resp = request(d.port, "PUT", f"/big.json{q}", body, timeout=120)
        took = time.perf_counter() - t
        time.sleep(1.0); r.stop = True; r.join(); stop.set()
        print(f"{who} PUT of {len(body)/1e6:.0f} MB: answer {resp[:40]!r} after {took:.2f}s; "
              f"RSS before {base//1024} MiB, peak {max(samples)//1024} MiB (VmHWM {rss_kib(d.proc.pid,'VmHWM')//1024} MiB); {r.summary()}")
    finally:
        d.stop()

def scenario_unfinished():
    d = Daemon(EXTRA)
    try:
        base = rss_kib(d.proc.pid)
        chunk = b"x" * (1 << 20)
        socks = []; answers = []
        for i in range(10):
            s = socket.create_connection(("127.0.0.1", d.port)); s.settimeout(30)
            s.sendall(f"PUT /u{i}.json?auth={d.admin} HTTP/1.1\r\nHost: x\r\nContent-Length: {151 << 20}\r\n\r\n".encode())
            socks.append(s)
        def pump(s, i):
            try:
                for _ in range(150): s.sendall(chunk)
                answers.append((i, "held 150 MiB"))
            except OSError as e:
                answers.append((i, f"send stopped: {e.__class__.__name__}"))
        ts = [threading.Thread(target=pump, args=(s, i)) for i, s in enumerate(socks)]
        for t in ts: t.start()
        for t in ts: t.join(120)
        time.sleep(1)
        codes = []
        for s in socks:
            s.settimeout(0.5)
            try: codes.append(s.recv(200).split(b"\r\n")[0].decode())
            except Exception: codes.append("(no answer yet)")
        print(f"10 unfinished 150 MiB bodies: RSS before {base//1024} MiB, now {rss_kib(d.proc.pid)//1024} MiB, "
              f"VmHWM {rss_kib(d.proc.pid,'VmHWM')//1024} MiB; answers: {sorted(set(codes))} {sorted(set(a for _, a in answers))}")
        for s in socks: s.close()
    finally:
        d.stop()

def scenario_stalled():
    d = Daemon(EXTRA)
    try:
        request(d.port, "PUT", f"/feed.json?auth={d.admin}", b'"start"')
        base = rss_kib(d.proc.pid)
        subs = []
        for i in range(20):
            s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(("127.0.0.1", d.port))
            s.sendall(f"GET /feed.json?auth={d.admin} HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\r\n".encode())
            subs.append(s)  # never read
        time.sleep(0.5)
        w = socket.create_connection(("127.0.0.1", d.port))
        peak = 0
        for n in range(80):
            value = json.dumps(f"{n:04d}" + "y" * (1 << 20)).encode()
            req = f"PUT /feed.json?auth={d.admin}&print=silent HTTP/1.1\r\nHost: x\r\nContent-Length: {len(value)}\r\n\r\n".encode() + value
            w.sendall(req); buf = b""
            while b"\r\n\r\n" not in buf: buf += w.recv(65536)
            peak = max(peak, rss_kib(d.proc.pid))
        time.sleep(1)
        peak = max(peak, rss_kib(d.proc.pid))
        log = open(d.dir + "/log").read()
        dropped = log.count("conn.output_limit") + log.count("conn.output_budget")
        print(f"20 stalled SSE subscribers, 80 writes of 1 MiB: RSS before {base//1024} MiB, peak {peak//1024} MiB, "
              f"VmHWM {rss_kib(d.proc.pid,'VmHWM')//1024} MiB, now {rss_kib(d.proc.pid)//1024} MiB; "
              f"dropped {dropped} (output_limit {log.count('conn.output_limit')}, output_budget {log.count('conn.output_budget')})")
        for s in subs: s.close()
    finally:
        d.stop()

{"put-anon": lambda: scenario_put("anonymous"), "put-admin": lambda: scenario_put("admin"),
 "unfinished": scenario_unfinished, "stalled": scenario_stalled}[SCENARIO]()
