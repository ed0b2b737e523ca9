#!/usr/bin/env python3
"""Tests/Fuzz/seed-corpus.py -- regenerates Tests/Fuzz/corpus/<target>/ from the tests, seed/ and rules/.

Inputs are the string literals of the unit and integration tests that each parser is tested with, the data
files of the repository, and a few hand-built samples (WebSocket frames, signed tokens) that test code builds at
run time. Run from anywhere; it rewrites the corpus directories. The fuzzers add their own finds under
.build/fuzz/corpus, never here.
"""
import base64, hashlib, hmac, json, os, re, struct, shutil

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "Tests", "Fuzz", "corpus")
MAX_FILES, MAX_BYTES = 60, 16 * 1024


def literals(*paths):
    """Every Swift string literal (raw `#"..."#` and escaped `"..."`) of the files, decoded."""
    found = []
    for rel in paths:
        with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
            text = f.read()
        for raw in re.findall(r'#"(.*?)"#', text):
            found.append(raw)
        for esc in re.findall(r'(?<![#\\])"((?:[^"\\\n]|\\.)*)"', text):
            if "\\(" in esc:
                continue  # interpolation: not a literal value
            out, i = [], 0
            while i < len(esc):
                c = esc[i]
                if c == "\\" and i + 1 < len(esc):
                    n = esc[i + 1]
                    if n == "u" and esc[i + 2:i + 3] == "{":
                        end = esc.index("}", i)
                        out.append(chr(int(esc[i + 3:end], 16)))
                        i = end + 1
                        continue
                    out.append({"n": "\n", "r": "\r", "t": "\t", "0": "\0", '"': '"', "\\": "\\", "'": "'"}.get(n, n))
                    i += 2
                    continue
                out.append(c)
                i += 1
            found.append("".join(out))
    return found


def files(*paths):
    out = []
    for rel in paths:
        with open(os.path.join(ROOT, rel), "rb") as f:
            out.append(f.read())
    return out


def write(target, items):
    d = os.path.join(OUT, target)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    seen, count = set(), 0
    for item in items:
        data = item.encode("utf-8", "surrogatepass") if isinstance(item, str) else bytes(item)
        if not data or len(data) > MAX_BYTES or data in seen:
            continue
        seen.add(data)
        with open(os.path.join(d, hashlib.sha1(data).hexdigest()[:16]), "wb") as f:
            f.write(data)
        count += 1
        if count >= MAX_FILES:
            break
    print(f"{target}: {count} files")


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


# JSON: documents the parser and writer tests use, and the repository's data and rules files.
json_tests = literals("Tests/CanopyCoreTests/JSONParserTests.swift", "Tests/CanopyCoreTests/JSONWriterTests.swift",
                      "Tests/CanopyCoreTests/JSONValueTests.swift", "Tests/CanopyCoreTests/NodeJSONTests.swift")
json_like = [s for s in json_tests if s[:1] in "{[\"-0123456789tfn/ " and len(s) > 1]
write("JSON", files("seed/attendees.json", "rules/default.rules.json", "rules/personalized-content.rules.json")
      + json_like)

# HTTP: the parser tests' requests, each behind a byte choosing the read size (0: 1 byte at a time, 7: 8 bytes).
http = [s for s in literals("Tests/CanopyNetTests/HTTPRequestParserTests.swift",
                            "Tests/CanopyNetTests/HTTPServerTests.swift",
                            "Tests/CanopyNetTests/WebSocketHandshakeTests.swift") if "HTTP/1." in s and "\r\n" in s]
write("HTTP", [bytes([15 if i % 2 else 3]) + s.encode() for i, s in enumerate(http)])


# WebSocket: frames the decoder tests build (masked client frames, fragments, control frames, long lengths).
def frame(opcode, payload, fin=True, mask=b"\x01\x02\x03\x04", rsv=0):
    head = bytes([(0x80 if fin else 0) | rsv | opcode])
    n = len(payload)
    mbit = 0x80 if mask else 0
    if n < 126:
        head += bytes([mbit | n])
    elif n < 65536:
        head += bytes([mbit | 126]) + struct.pack(">H", n)
    else:
        head += bytes([mbit | 127]) + struct.pack(">Q", n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        head += mask
    return head + payload


ws = [
    b"\x00" + frame(1, b"hello"),
    b"\x02" + frame(1, b"hel", fin=False) + frame(9, b"ping") + frame(0, b"lo"),
    b"\x04" + frame(2, bytes(range(200))),
    b"\x00" + frame(1, "h\u00e9llo \u2603".encode()),
    b"\x00" + frame(8, struct.pack(">H", 1000) + b"bye"),
    b"\x00" + frame(8, b""),
    b"\x00" + frame(10, b"pong"),
    b"\x01" + frame(1, b"server frame", mask=None),
    b"\x00" + frame(1, b"x" * 300),
    b"\x00" + frame(1, b"\xff\xfe"),
    b"\x00" + frame(1, b"a", rsv=0x40),
    b"\x00" + frame(3, b"a"),
    b"\x00" + frame(9, b"p" * 126),
    b"\x00" + frame(1, b'{"t":"d","d":{"r":1,"a":"q","b":{"p":"/a","h":""}}}'),
    b"\x00" + frame(1, b"3") + frame(1, b'{"t":"d",') + frame(1, b'"d":{"r":1,') + frame(1, b'"a":"n","b":{"p":"/"}}}'),
    b"\x06" + frame(2, b"a" * 70000),
]
write("WebSocket", ws)

# Wire: client messages of the wire protocol tests, one per line, plus a counted (framed) message.
wire_tests = literals(*[os.path.join("Tests/CanopyIntegrationTests/Realtime", f)
                        for f in sorted(os.listdir(os.path.join(ROOT, "Tests/CanopyIntegrationTests/Realtime")))],
                      "Tests/CanopyCoreTests/WireFrameAssemblerTests.swift", "Tests/CanopyCoreTests/QuerySpecTests.swift")
wire = [s for s in wire_tests if s.startswith('{"t":"d","d":{') and '"a":' in s]
queries = [s for s in wire_tests if s.startswith("{") and ('"i":' in s or '"sp":' in s or '"vf":' in s)]
wire += ['{"t":"d","d":{"r":9,"a":"q","b":{"p":"/users","q":%s,"t":1,"h":""}}}' % q for q in queries]
wire += [
    '{"t":"d","d":{"r":1,"a":"p","b":{"p":"/users/ada/age","d":{".sv":"timestamp"}}}}',
    '{"t":"d","d":{"r":2,"a":"m","b":{"p":"/users","d":{"ada/age":{".sv":{"increment":1}},"bob":null}}}}',
    '{"t":"d","d":{"r":3,"a":"p","b":{"p":"/scores","d":{"a":1},"h":"abc="}}}',
    '{"t":"d","d":{"r":4,"a":"q","b":{"p":"/scores","q":{"i":".value","sp":1,"ep":3,"l":2,"vf":"r"},"t":7,"h":""}}}',
    '{"t":"d","d":{"r":5,"a":"o","b":{"p":"/users/ada/.priority","d":3}}}',
    '{"t":"c","d":{"t":"p","d":{}}}',
    '3\n{"t":"d","d":{"r":6,\n"a":"g","b":{"p":"/users",\n"q":{"i":"age","sn":"a","en":"z","l":1,"vf":"l"}}}}',
]
write("Wire", wire)

# Rules: whole documents (byte 0) and single expressions (byte 1) from the rules tests and rules/.
rules_docs = files("rules/default.rules.json", "rules/personalized-content.rules.json")
with open(os.path.join(ROOT, "Tests/CanopyRulesTests/Resources/access.json"), encoding="utf-8") as f:
    access = json.load(f)
docs = []
def collect_rules(node):
    if isinstance(node, dict):
        if "rules" in node and isinstance(node["rules"], dict):
            docs.append(json.dumps({"rules": node["rules"]}))
        for v in node.values():
            collect_rules(v)
    elif isinstance(node, list):
        for v in node:
            collect_rules(v)
collect_rules(access)
with open(os.path.join(ROOT, "Tests/CanopyRulesTests/Resources/expressions.json"), encoding="utf-8") as f:
    expressions = [c["expr"] for c in json.load(f)["cases"] if isinstance(c.get("expr"), str)]
rules = [b"\x00" + d for d in rules_docs] + ["\x00" + d for d in docs[:20]] + ["\x01" + e for e in expressions]
write("Rules", rules[:MAX_FILES])

# JWT: signed tokens with the harness's secret (mode 0), claims (1), headers (2), key sets (3).
secret = b"fuzzing-secret-0123456789abcdef"
def token(header, claims, key=secret):
    signing = b64(json.dumps(header, separators=(",", ":")).encode()) + "." + b64(json.dumps(claims, separators=(",", ":")).encode())
    sig = b64(hmac.new(key, signing.encode(), hashlib.sha256).digest()) if header.get("alg") == "HS256" else ""
    return signing + "." + sig
claims = {"uid": "ada", "iat": 1699999999, "exp": 1700003600, "aud": "canopy", "iss": "https://issuer.example"}
jwt = [
    "\x00" + token({"alg": "HS256", "typ": "JWT", "kid": "k1"}, claims),
    "\x00" + token({"alg": "HS256", "typ": "JWT"}, claims),
    "\x00" + token({"alg": "none", "typ": "JWT"}, claims),
    "\x00" + token({"alg": "HS256", "kid": "k2"}, dict(claims, admin=True, ns=["default"]), key=b"other"),
    "\x00" + token({"alg": "HS256", "kid": "k1"}, {"v": 0, "d": {"uid": "ada"}, "iat": 1699999999}),
    "\x00" + token({"alg": "RS256", "kid": "k1"}, claims),
    "\x00" + token({"alg": "HS256", "crit": ["exp"]}, claims),
    "\x00a.b.c", "\x00..", "\x00" + "e" * 100,
    "\x01" + json.dumps(claims), "\x01" + json.dumps({"uid": "bob", "admin": True, "ns": "default"}),
    "\x01" + json.dumps({"provider_id": "anonymous", "exp": 1, "nbf": 1800000000}),
    "\x01" + json.dumps({"d": {"uid": "x"}, "v": 0, "debug": True}),
    "\x02" + json.dumps({"alg": "HS256", "typ": "JWT", "kid": "k1"}),
    "\x02" + json.dumps({"alg": "HS256", "crit": []}), "\x02" + json.dumps({"alg": "HS256", "kid": 7}),
    "\x03" + json.dumps({"keys": [{"kty": "oct", "k": b64(secret), "alg": "HS256", "kid": "k1"}]}),
    "\x03" + json.dumps({"keys": [{"kty": "RSA", "n": b64(b"\xc1" * 256), "e": "AQAB", "alg": "RS256", "kid": "r"}]}),
    "\x03" + json.dumps({"keys": [{"kty": "EC", "crv": "P-256", "x": b64(b"\x01" * 32), "y": b64(b"\x02" * 32)}]}),
    "\x03-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----\n",
]
write("JWT", jwt)

# REST: request targets (after `/`) with the query parameters of the REST tests, some with a write body.
rest = [
    'users.json?orderBy="age"&startAt=1&limitToFirst=2', 'users.json?orderBy="$key"&startAt="a"&endAt="c"',
    'scores.json?orderBy="$value"&equalTo=2', 'scores.json?orderBy="$priority"&limitToLast=3',
    'users.json?orderBy=%22name%22&startAfter=%22Ada%22&endBefore=%22Cy%22',
    'users.json?orderBy="$key"&startAt="b"', 'a.json?orderBy=height', 'a.json?limitToFirst=2',
    'users.json?orderBy="age"&startAt=1,"ada"&endAt=40', 'users/ada.json?shallow=true&format=export&print=pretty',
    'x.json?timeout=200ms', 'x.json?timeout=3s', 'x.json?timeout=16min', 'x.json?timeout=10',
    'x.json?writeSizeLimit=tiny\n{"a":{"b":1,"c":[1,2,3]}}', 'users.json?writeSizeLimit=small\n{"ada/age":1,"bob":null}',
    'x.json?writeSizeLimit=huge', 'x.json?download=backup.json', 'x.json?download=a%22b', 'x.json?download=',
    'users/.priority.json?x-http-method-override=PUT', 'a%2Fb.json?orderBy=%22a%2Fb%22&equalTo=null',
    'users.json?orderBy="age"&equalTo=true&limitToFirst=1&limitToLast=1', '.json?ns=a&auth=t&callback=cb',
]
write("REST", rest)

# Export: the demo seed (an export document) and small documents of the import tests.
export = files("seed/canopy-demo-summit.json") + [
    '{"canopy":"export","version":1,"namespace":"n","exportedAt":5,"data":{"a":{".value":1,".priority":"p"}}}',
    '{"canopy":"export","version":1,"data":null}', '{"canopy":"export","version":2,"data":{}}',
    '{"canopy":"export","version":1,"data":{"a":[1,2,{"b":true}],"c":1.5e300,"d":"\\u00e9"}}',
    '{"canopy":"export","version":1,"data":{"x":{".sv":"timestamp"}}}', '{"version":1,"data":{}}',
]
write("Export", export)
