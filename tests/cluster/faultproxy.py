#!/usr/bin/env python3
"""Fault-injection TLS proxy between a Kubernetes API client and the API server.

    faultproxy.py --listen PORT --upstream HOST:PORT --cert FILE --key FILE \\
        --upstream-ca FILE [--client-cert FILE --client-key FILE] \\
        --control PORT [--log FILE]

It terminates TLS on 127.0.0.1:PORT, opens one upstream TLS connection per
client connection, relays bytes both ways, and parses the client's HTTP/1.1
requests (never the responses: watches stream forever) so that a fault can
hit the connection carrying a given request. One log line per request.

Control, plain HTTP on 127.0.0.1:CONTROL, JSON answers, query-string args:
  POST /silence-open[?match=RE]   open connections (only those whose last
                                  request matches RE) go silent: no byte
                                  either way, no FIN, no RST, sockets kept
  POST /reset-open                RST every open connection
  POST /arm?match=RE&action=silence|reset|delay[&seconds=S][&count=K]
                                  the next K requests whose "METHOD target"
                                  re.search-matches RE get the action before
                                  any of their bytes are forwarded
  POST /heal[?close=1]            drop pending arms; close=1 also resets the
                                  silenced connections
  GET  /stats                     connections, silenced, request counts, arms
  GET  /requests?since=T          requests seen after unix time T

Requests that arrive on a silenced connection are logged as "swallowed"
(their callers are stuck). With curl, pass -g when RE has [ ] or { }.
"""

import argparse
import asyncio
import json
import re
import signal
import socket
import ssl
import struct
import sys
import time
from collections import deque
from urllib.parse import parse_qs, urlsplit

READ_SIZE = 65536
MAX_HEAD = 1 << 20  # a request head bigger than this is not HTTP we understand
MAX_RECORDS = 200_000  # requests kept for /requests
NET_ERRORS = (OSError, ssl.SSLError, EOFError, asyncio.IncompleteReadError)


def stamp(t):
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t * 1000) % 1000:03d}Z"


class Request:
    __slots__ = ("method", "target")

    def __init__(self, method, target):
        self.method, self.target = method, target

    @property
    def key(self):
        return f"{self.method} {self.target}"


class RequestParser:
    """Splits the client's byte stream into Request markers and the bytes to
    forward. A marker always comes before its request's bytes, so a fault is
    decided before anything of that request reaches the upstream. What we do
    not understand (upgrades, CONNECT, garbage) is passed through raw."""

    def __init__(self):
        self.buf = bytearray()
        self.state = "head"
        self.remaining = 0
        self.after = "head"  # the state once the current request's body ends

    def feed(self, data):
        self.buf += data
        out = []
        buf = self.buf
        while buf:
            st = self.state
            if st == "raw":
                out.append(bytes(buf))
                buf.clear()
            elif st == "head":
                idx = buf.find(b"\r\n\r\n")
                if idx < 0:
                    if len(buf) > MAX_HEAD:
                        self.state = "raw"
                        continue
                    break
                head = bytes(buf[: idx + 4])
                del buf[: idx + 4]
                req = self._head(head)
                if req is not None:
                    out.append(req)
                out.append(head)
            elif st in ("body", "chunk-data"):
                n = min(len(buf), self.remaining)
                out.append(bytes(buf[:n]))
                del buf[:n]
                self.remaining -= n
                if self.remaining == 0:
                    self.state = self.after if st == "body" else "chunk-size"
            elif st in ("chunk-size", "trailer"):
                idx = buf.find(b"\r\n")
                if idx < 0:
                    if len(buf) > MAX_HEAD:
                        self.state = "raw"
                        continue
                    break
                line = bytes(buf[:idx])
                out.append(bytes(buf[: idx + 2]))
                del buf[: idx + 2]
                if st == "trailer":
                    if not line:
                        self.state = self.after
                    continue
                try:
                    size = int(line.split(b";", 1)[0].strip(), 16)
                except ValueError:
                    self.state = "raw"
                    continue
                if size == 0:
                    self.state = "trailer"
                else:
                    self.remaining = size + 2  # the data and its CRLF
                    self.state = "chunk-data"
        return out

    def _head(self, head):
        # Leading empty lines before a request line are allowed (RFC 9112 2.2).
        lines = head.decode("latin-1").lstrip("\r\n").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[2].startswith("HTTP/"):
            self.state = "raw"
            return None
        method, target = parts[0], parts[1]
        headers = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if sep:
                headers.setdefault(name.strip().lower(), []).append(value.strip())
        conn_tokens = {t.strip().lower() for v in headers.get("connection", []) for t in v.split(",")}
        # After an upgrade (exec/attach/port-forward) the stream is not HTTP.
        self.after = "raw" if method == "CONNECT" or "upgrade" in conn_tokens else "head"
        te = ",".join(headers.get("transfer-encoding", [])).lower()
        if "chunked" in te:
            self.state = "chunk-size"
        else:
            try:
                n = int(headers.get("content-length", ["0"])[-1])
            except ValueError:
                n = -1
            if n < 0:
                self.state = "raw"
            elif n > 0:
                self.remaining, self.state = n, "body"
            else:
                self.state = self.after
        return Request(method, target)


class Conn:
    def __init__(self, cid, cr, cw):
        self.id = cid
        self.cr, self.cw = cr, cw  # client side
        self.ur = self.uw = None  # upstream side, once connected
        self.opened = time.time()
        self.closed = False
        self.tasks = []
        self.nreq = 0
        self.last = None  # "METHOD target" of the last request
        self.silenced = None  # time it went silent
        self.silence_request = None  # what silenced it, or "open"
        self.swallowed = 0  # requests received after it went silent
        self.dropped = [0, 0]  # bytes dropped: client->upstream, upstream->client
        self.client_closed = None
        self.upstream_closed = None


class Arm:
    def __init__(self, aid, match, action, seconds, count):
        self.id, self.match, self.action = aid, match, action
        self.regex = re.compile(match)
        self.seconds, self.remaining, self.used = seconds, count, 0

    def json(self):
        return {"id": self.id, "match": self.match, "action": self.action,
                "seconds": self.seconds, "remaining": self.remaining, "used": self.used}


class Proxy:
    def __init__(self, args):
        self.args = args
        host, _, port = args.upstream.rpartition(":")
        self.up_host, self.up_port = host.strip("[]") or "127.0.0.1", int(port)
        self.server_ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.server_ctx.load_cert_chain(args.cert, args.key)
        self.server_ctx.set_alpn_protocols(["http/1.1"])
        self.client_ctx = ssl.create_default_context(cafile=args.upstream_ca)
        if args.client_cert:
            self.client_ctx.load_cert_chain(args.client_cert, args.client_key)
        self.client_ctx.set_alpn_protocols(["http/1.1"])
        self.log_file = open(args.log, "a", buffering=1) if args.log else sys.stderr
        self.next_conn = 0
        self.next_arm = 0
        self.conns = {}  # open connections, by id
        # Silenced connections, by id, until reset: the references keep their
        # sockets from being collected (and so closed) while they play dead.
        self.silenced = {}
        self.arms = []
        self.records = deque(maxlen=MAX_RECORDS)
        self.total = 0
        self.by_path = {}

    # ------------------------------------------------------------ logging
    def log(self, line):
        try:
            self.log_file.write(line + "\n")
        except (OSError, ValueError):
            pass

    def event(self, conn, what):
        self.log(f"{stamp(time.time())} conn={conn.id} - {what}")

    def record(self, conn, req, action, arm=None):
        t = time.time()
        self.total += 1
        path = f"{req.method} {req.target.split('?', 1)[0]}"
        self.by_path[path] = self.by_path.get(path, 0) + 1
        rec = {"t": round(t, 6), "conn": conn.id, "method": req.method, "target": req.target,
               "action": action}
        detail = action
        if arm is not None:
            rec["arm"] = arm.id
            if action == "delay":
                rec["seconds"] = arm.seconds
                detail = f"delay {arm.seconds:g}s"
            detail += f" (arm {arm.id})"
        self.records.append(rec)
        self.log(f"{stamp(t)} conn={conn.id} {req.method} {req.target} -> {detail}")

    # ------------------------------------------------------------- faults
    def silence(self, conn, request):
        if conn.silenced is not None or conn.closed:
            return False
        conn.silenced = time.time()
        conn.silence_request = request
        self.silenced[conn.id] = conn
        self.event(conn, f"silenced ({request})")
        return True

    def shutdown(self, conn, reason, how="close"):
        """Closes both sides. how: "close" a normal close (TLS close_notify,
        FIN), as when the upstream closed; "abort" no goodbye (the client
        already left a silent connection, or we exit); "rst" RST the client."""
        if conn.closed:
            return
        conn.closed = True
        self.conns.pop(conn.id, None)
        if how == "rst":
            try:
                sock = conn.cw.get_extra_info("socket")
                if sock is not None:
                    # Linger on with a zero timeout: close() sends RST, not FIN.
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            except OSError:
                pass
        for w in (conn.cw, conn.uw):
            if w is None:
                continue
            if how == "close":
                w.close()
            else:
                w.transport.abort()
        me = asyncio.current_task()
        for t in conn.tasks:
            if t is not me:
                t.cancel()
        self.event(conn, f"closed ({how}): {reason}")

    def reset(self, conn, reason):
        self.silenced.pop(conn.id, None)
        self.shutdown(conn, reason, "rst")

    async def on_request(self, conn, req):
        """Decides the request's fate (and waits out a delay) before any of
        its bytes are forwarded."""
        key = req.key
        conn.nreq += 1
        if conn.silenced is not None:
            conn.swallowed += 1
            self.record(conn, req, "swallowed")
            return
        conn.last = key
        arm = next((a for a in self.arms if a.regex.search(key)), None)
        if arm is None:
            self.record(conn, req, "forward")
            return
        arm.remaining -= 1
        arm.used += 1
        if arm.remaining <= 0:
            self.arms.remove(arm)
        self.record(conn, req, arm.action, arm)
        if arm.action == "silence":
            self.silence(conn, key)
            return
        if arm.action == "reset":
            self.reset(conn, f"arm {arm.id} reset on {key}")
            return
        await asyncio.sleep(arm.seconds)

    # ------------------------------------------------------------ relaying
    async def handle_client(self, cr, cw):
        self.next_conn += 1
        conn = Conn(self.next_conn, cr, cw)
        self.conns[conn.id] = conn
        peer = cw.get_extra_info("peername")
        self.event(conn, f"open from {peer[0]}:{peer[1]}" if peer else "open")
        try:
            conn.ur, conn.uw = await asyncio.wait_for(
                asyncio.open_connection(self.up_host, self.up_port, ssl=self.client_ctx,
                                        server_hostname="127.0.0.1"), 15)
        except asyncio.CancelledError:
            return  # exiting; asyncio.streams would report a cancelled task
        except (OSError, ssl.SSLError, asyncio.TimeoutError) as e:
            self.shutdown(conn, f"upstream connect failed: {e!r}")
            return
        if conn.closed:  # reset while connecting
            conn.uw.transport.abort()
            return
        conn.tasks = [asyncio.create_task(self.client_to_upstream(conn)),
                      asyncio.create_task(self.upstream_to_client(conn))]
        # This task lives as long as the connection (another reference too).
        try:
            await asyncio.gather(*conn.tasks, return_exceptions=True)
        except asyncio.CancelledError:
            pass  # exiting

    async def client_to_upstream(self, conn):
        parser = RequestParser()
        reason = "client closed"
        try:
            while not conn.closed:
                data = await conn.cr.read(READ_SIZE)
                if not data:
                    break
                for item in parser.feed(data):
                    if isinstance(item, Request):
                        # Decided before any of its bytes go: a silenced or
                        # reset request never reaches the upstream.
                        await self.on_request(conn, item)
                        if conn.closed:
                            return
                        continue
                    if conn.silenced is None:
                        conn.uw.write(item)
                        await conn.uw.drain()
                    else:
                        conn.dropped[0] += len(item)
        except NET_ERRORS as e:
            reason = f"client->upstream: {e!r}"
        if conn.silenced is not None and not conn.closed:
            conn.client_closed = time.time()
            self.shutdown(conn, reason, "abort")  # the client left; nothing to tell it
            return
        self.shutdown(conn, reason)

    async def upstream_to_client(self, conn):
        reason = "upstream closed"
        try:
            while not conn.closed:
                data = await conn.ur.read(READ_SIZE)
                if not data:
                    break
                # Checked per chunk, after the read: once silent, nothing more
                # reaches the client, even what the upstream had in flight.
                if conn.silenced is not None:
                    conn.dropped[1] += len(data)
                    continue
                conn.cw.write(data)
                await conn.cw.drain()
        except NET_ERRORS as e:
            reason = f"upstream->client: {e!r}"
        if conn.silenced is not None and not conn.closed:
            # A dead connection does not tell the client the upstream left.
            conn.upstream_closed = time.time()
            self.event(conn, f"upstream gone while silent: {reason}")
            return
        self.shutdown(conn, reason)

    # ------------------------------------------------------------- control
    def route(self, method, path, q):
        def want(m):
            if method != m:
                raise HttpError(405, f"{path} takes {m}")

        if path == "/silence-open":
            want("POST")
            rx = self.regex(q["match"]) if q.get("match") else None
            ids = [c.id for c in list(self.conns.values())
                   if (rx is None or (c.last and rx.search(c.last))) and self.silence(c, "open")]
            return {"silenced": len(ids), "ids": ids}
        if path == "/reset-open":
            want("POST")
            conns = list(self.conns.values())
            for c in conns:
                self.reset(c, "reset-open")
            self.silenced.clear()  # the client-closed ones are gone now too
            return {"reset": len(conns), "ids": [c.id for c in conns]}
        if path == "/arm":
            want("POST")
            action = q.get("action", "")
            if action not in ("silence", "reset", "delay"):
                raise HttpError(400, "action must be silence, reset or delay")
            if "match" not in q:
                raise HttpError(400, "match is required")
            self.regex(q["match"])
            try:
                seconds = float(q.get("seconds", "nan" if action == "delay" else "0"))
                count = int(q.get("count", "1"))
            except ValueError:
                raise HttpError(400, "seconds must be a number, count an integer")
            if seconds != seconds or seconds < 0:
                raise HttpError(400, "delay needs seconds=S (S >= 0)")
            if count < 1:
                raise HttpError(400, "count must be >= 1")
            self.next_arm += 1
            arm = Arm(self.next_arm, q["match"], action, seconds, count)
            self.arms.append(arm)
            self.log(f"{stamp(time.time())} control - arm {arm.id}: {json.dumps(arm.json())}")
            return {"arm": arm.id}
        if path == "/heal":
            want("POST")
            removed = len(self.arms)
            self.arms.clear()
            reset = []
            if q.get("close") not in (None, "", "0", "false"):
                for c in list(self.silenced.values()):
                    if not c.closed:
                        reset.append(c.id)
                        self.shutdown(c, "heal close=1", "rst")
                self.silenced.clear()
            self.log(f"{stamp(time.time())} control - heal: {removed} arm(s) removed, reset {reset}")
            return {"arms_removed": removed, "reset": len(reset), "ids": reset}
        if path == "/stats":
            want("GET")
            return self.stats()
        if path == "/requests":
            want("GET")
            try:
                since = float(q.get("since", "0"))
            except ValueError:
                raise HttpError(400, "since must be a unix time")
            return [r for r in self.records if r["t"] > since]
        raise HttpError(404, "endpoints: POST /silence-open /reset-open /arm /heal; GET /stats /requests")

    @staticmethod
    def regex(s):
        try:
            return re.compile(s)
        except re.error as e:
            raise HttpError(400, f"bad regex {s!r}: {e}")

    def stats(self):
        def silenced(c):
            return {"id": c.id, "since": round(c.silenced, 6), "request": c.silence_request,
                    "last_request": c.last, "swallowed": c.swallowed,
                    # A request sent into the dead connection: its caller is stuck.
                    "busy_since_fault": c.swallowed > 0,
                    "dropped_bytes": {"to_upstream": c.dropped[0], "to_client": c.dropped[1]},
                    "client_closed": c.client_closed, "upstream_closed": c.upstream_closed}

        return {
            "open": len(self.conns),
            "connections": [{"id": c.id, "since": round(c.opened, 6), "requests": c.nreq,
                             "last_request": c.last, "silenced": c.silenced is not None}
                            for c in self.conns.values()],
            "silenced": [silenced(c) for c in self.silenced.values()],
            "requests": {"total": self.total, "by_path": dict(sorted(self.by_path.items()))},
            "arms": [a.json() for a in self.arms],
        }

    async def handle_control(self, reader, writer):
        status, body = 200, None
        try:
            head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            for line in lines[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length" and int(value) > 0:
                    await asyncio.wait_for(reader.readexactly(int(value)), 10)  # ignored
            u = urlsplit(target)
            q = {k: v[-1] for k, v in parse_qs(u.query, keep_blank_values=True).items()}
            body = self.route(method, u.path, q)
        except HttpError as e:
            status, body = e.status, {"error": e.message}
        except (ValueError, asyncio.LimitOverrunError, asyncio.TimeoutError) as e:
            status, body = 400, {"error": f"bad request: {e!r}"}
        except NET_ERRORS:
            writer.transport.abort()
            return
        data = (json.dumps(body) + "\n").encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 405: "Method Not Allowed"}[status]
        try:
            writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: application/json\r\n"
                         f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n".encode() + data)
            await writer.drain()
            writer.close()
        except NET_ERRORS:
            writer.transport.abort()

    # --------------------------------------------------------------- main
    async def run(self):
        loop = asyncio.get_running_loop()
        # asyncio reports resets and failed handshakes with tracebacks; one
        # line is enough for a peer that went away.
        loop.set_exception_handler(lambda _l, ctx: print(
            f"faultproxy: {ctx.get('message')}: {ctx.get('exception')!r}", file=sys.stderr))
        stop = asyncio.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, stop.set)
        control = await asyncio.start_server(self.handle_control, "127.0.0.1", self.args.control)
        proxy = await asyncio.start_server(self.handle_client, "127.0.0.1", self.args.listen,
                                           ssl=self.server_ctx, ssl_handshake_timeout=30,
                                           backlog=256)
        print(f"faultproxy: 127.0.0.1:{self.args.listen} -> {self.up_host}:{self.up_port}, "
              f"control 127.0.0.1:{self.args.control}", file=sys.stderr, flush=True)
        await stop.wait()
        proxy.close()
        control.close()
        for c in list(self.conns.values()):
            self.shutdown(c, "proxy exiting", "abort")
        self.silenced.clear()
        print("faultproxy: exiting", file=sys.stderr, flush=True)


class HttpError(Exception):
    def __init__(self, status, message):
        super().__init__(message)
        self.status, self.message = status, message


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--listen", type=int, required=True, help="TLS port on 127.0.0.1")
    p.add_argument("--upstream", required=True, help="HOST:PORT of the API server")
    p.add_argument("--cert", required=True, help="server certificate (PEM)")
    p.add_argument("--key", required=True, help="server key (PEM)")
    p.add_argument("--upstream-ca", required=True, help="CA that signed the upstream's cert")
    p.add_argument("--client-cert", help="client certificate for the upstream")
    p.add_argument("--client-key", help="client key for the upstream")
    p.add_argument("--control", type=int, required=True, help="control port on 127.0.0.1")
    p.add_argument("--log", help="request log (default stderr)")
    args = p.parse_args()
    if bool(args.client_cert) != bool(args.client_key):
        p.error("--client-cert and --client-key go together")
    try:
        asyncio.run(Proxy(args).run())
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
