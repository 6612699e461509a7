#!/usr/bin/env python3
"""otlpsink.py PORT: a tiny OTLP metrics receiver for the cluster suite (stdlib only).

policy-server exports its metrics over OTLP/gRPC only (its exporter is built
with `.with_tonic()`), so this speaks just enough plaintext HTTP/2 (h2c) and
gRPC for MetricsService/Export, and decodes the protobuf by hand. On the same
port it answers HTTP/1.1:
  GET  /healthz     "ok"
  GET  /metrics     one JSON object a line: {"name", "labels", "value"}; the
                    latest value of each counter/gauge series (delta points
                    are added up), for histograms the count (and "sum")
  POST /v1/metrics  OTLP/HTTP with a protobuf body, handled the same way
Point policy-server at it with OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:PORT.
"""
import gzip, json, socketserver, struct, sys, threading

LOCK = threading.Lock()
SERIES = {}  # (name, labels as sorted JSON) -> {"name", "labels", "value"[, "sum"]}
PREFACE = b"PRI * HTTP/2.0\r\n"


def pb(buf):
    """Protobuf message -> {field number: [values]} (varints as int, the rest as bytes)."""
    out, i = {}, 0
    while i < len(buf):
        key, i = varint(buf, i)
        field, wt = key >> 3, key & 7
        if wt == 0:
            v, i = varint(buf, i)
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = varint(buf, i)
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % wt)
        if i > len(buf):
            raise ValueError("truncated message")
        out.setdefault(field, []).append(v)
    return out


def varint(buf, i):
    shift = val = 0
    while True:
        b = buf[i]  # IndexError on truncation: caught by the caller
        val |= (b & 0x7F) << shift
        i, shift = i + 1, shift + 7
        if b < 0x80:
            return val, i


def anyvalue(m):
    """AnyValue: 1 string, 2 bool, 3 int64, 4 double; anything else as text."""
    if 1 in m: return m[1][0].decode("utf-8", "replace")
    if 2 in m: return bool(m[2][0])
    if 3 in m: return m[3][0] - (1 << 64) if m[3][0] >= 1 << 63 else m[3][0]
    if 4 in m: return struct.unpack("<d", m[4][0])[0]
    return repr(m)


def labels(point, field):
    kvs = (pb(kv) for kv in point.get(field, []))
    return {kv[1][0].decode(): anyvalue(pb(kv.get(2, [b""])[0])) for kv in kvs}


def record(name, lab, value, delta, extra=None):
    key = (name, json.dumps(lab, sort_keys=True))
    with LOCK:
        s = SERIES.get(key)
        if s is None or not delta:
            s = SERIES[key] = {"name": name, "labels": lab, "value": 0, **({"sum": 0} if extra is not None else {})}
        s["value"] = s["value"] + value if delta else value
        if extra is not None:
            s["sum"] = s["sum"] + extra if delta else extra


def ingest(body):
    """ExportMetricsServiceRequest -> SERIES. Temporality 1 is delta, 2 cumulative."""
    for rm in pb(body).get(1, []):
        for sm in pb(rm).get(2, []):
            for metric in map(pb, pb(sm).get(2, [])):
                name = metric.get(1, [b"?"])[0].decode()
                for kind in (5, 7):  # gauge, sum: NumberDataPoint (6 as_int, 4 as_double)
                    for d in metric.get(kind, []):
                        d = pb(d)
                        delta = d.get(2, [2])[0] == 1
                        for p in map(pb, d.get(1, [])):
                            v = struct.unpack("<q", p[6][0])[0] if 6 in p else struct.unpack("<d", p.get(4, [bytes(8)])[0])[0]
                            record(name, labels(p, 7), v, delta)
                for d in metric.get(9, []):  # histogram: 4 count (fixed64), 5 sum (double)
                    d = pb(d)
                    delta = d.get(2, [2])[0] == 1
                    for p in map(pb, d.get(1, [])):
                        total = struct.unpack("<d", p[5][0])[0] if 5 in p else 0.0
                        record(name, labels(p, 9), struct.unpack("<Q", p[4][0])[0], delta, total)


def frame(ftype, flags, stream, payload=b""):
    return struct.pack(">I", len(payload))[1:] + bytes([ftype, flags]) + struct.pack(">I", stream) + payload


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        try:
            line = self.rfile.readline(65536)
            if line == PREFACE:
                self.rfile.read(8)  # "\r\nSM\r\n\r\n"
                self.h2()
            elif line:
                self.http1(line)
        except Exception as e:  # a bad peer ends its own connection, never the sink
            print("otlpsink: %s: %r" % (self.client_address, e), file=sys.stderr)

    def http1(self, line):
        method, path = (line.decode("latin-1").split() + ["", ""])[:2]
        headers = {}
        while (h := self.rfile.readline(65536).strip()):
            k, _, v = h.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        body = self.rfile.read(int(headers.get("content-length", 0) or 0))
        code, ctype, out = 404, "text/plain", b"not found\n"
        if method == "GET" and path == "/healthz":
            code, out = 200, b"ok\n"
        elif method == "GET" and path == "/metrics":
            with LOCK:
                out = "".join(json.dumps(s, sort_keys=True) + "\n" for s in SERIES.values()).encode()
            code, ctype = 200, "application/x-ndjson"
        elif method == "POST" and path == "/v1/metrics":
            try:
                ingest(gzip.decompress(body) if headers.get("content-encoding") == "gzip" else body)
                code, ctype, out = 200, "application/x-protobuf", b""
            except Exception as e:
                code, out = 400, ("bad OTLP protobuf: %r\n" % e).encode()
        head = "HTTP/1.1 %d x\r\nContent-Type: %s\r\nContent-Length: %d\r\nConnection: close\r\n\r\n"
        self.wfile.write((head % (code, ctype, len(out))).encode() + out)

    def h2(self):
        w = self.wfile.write
        # Our SETTINGS (stream windows 1 GiB) and a matching connection window.
        w(frame(4, 0, 0, struct.pack(">HI", 4, 1 << 30)) + frame(8, 0, 0, struct.pack(">I", (1 << 30) - 65535)))
        bodies = {}
        while len(hdr := self.rfile.read(9)) == 9:
            n, ftype, flags, sid = int.from_bytes(hdr[:3], "big"), hdr[3], hdr[4], int.from_bytes(hdr[5:], "big") & 0x7FFFFFFF
            payload = self.rfile.read(n)
            if ftype == 4 and not flags & 1:  # SETTINGS: acknowledge
                w(frame(4, 1, 0))
            elif ftype == 6 and not flags & 1:  # PING: answer
                w(frame(6, 1, 0, payload))
            elif ftype == 7:  # GOAWAY
                return
            elif ftype == 1:  # HEADERS: a new call (its path is not decoded: it can only be Export)
                bodies[sid] = b""
            elif ftype == 0:  # DATA, maybe padded
                if flags & 8:
                    payload = payload[1:len(payload) - payload[0]]
                bodies[sid] = bodies.get(sid, b"") + payload
                if n:
                    w(frame(8, 0, 0, struct.pack(">I", n)))  # give the connection window back
            if ftype in (0, 1) and flags & 1:  # END_STREAM: answer the call
                self.grpc(sid, bodies.pop(sid, b""))
            self.wfile.flush()

    def grpc(self, sid, body):
        status = b"0"
        try:
            while body:  # length-prefixed messages: 1 byte compressed?, 4 bytes length
                comp, ln = body[0], struct.unpack(">I", body[1:5])[0]
                msg, body = body[5:5 + ln], body[5 + ln:]
                ingest(gzip.decompress(msg) if comp else msg)
        except Exception as e:
            print("otlpsink: bad export: %r" % e, file=sys.stderr)
            status = b"3"  # INVALID_ARGUMENT
        # HPACK, no Huffman: ":status: 200" (static 8), content-type (static 31), grpc-status.
        head = b"\x88" + b"\x0f\x10" + bytes([16]) + b"application/grpc"
        trailer = b"\x00" + bytes([11]) + b"grpc-status" + bytes([1]) + status
        self.wfile.write(frame(1, 4, sid, head) + frame(0, 0, sid, bytes(5)) + frame(1, 5, sid, trailer))


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    request_queue_size = 64
    daemon_threads = True


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: otlpsink.py PORT")
    with Server(("127.0.0.1", int(sys.argv[1])), Handler) as srv:
        print("otlpsink listening on 127.0.0.1:%s" % sys.argv[1], file=sys.stderr, flush=True)
        srv.serve_forever()
