"""Data integrity over RC between two hosts: the checks of
tests/vm/integrity.py (SEND, SEND with immediate, WRITE, WRITE with
immediate, READ at sizes from 1 byte to 200 KB through many SGEs, guard
bytes, both atomics, 48 requests in flight, zero-length READs), run once
with each host as the requester.

    integrity2.py server|client SERVER_IP DEV GID_INDEX

The two processes talk over TCP port 18516 (the server listens): the
requester drives, and reaches the responder's End (its buffer, receive
queue and completion queue) through a proxy that forwards each call; the
responder does the reading and the checking of its own memory (guard
bytes included) and answers with the result. Every byte is read on the
host whose memory it landed in. Then the roles swap. RXE_MTU and
RXE_INTEGRITY_QUICK as for integrity.py. Exits non-zero on the first
difference, on either side."""
import base64
import json
import os
import random
import socket
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "vm"))
import integrity  # noqa: E402

PORT = 18516


def encode(v):
    if isinstance(v, (bytes, bytearray)):
        return {"b64": base64.b64encode(bytes(v)).decode()}
    if isinstance(v, (list, tuple)):
        return [encode(x) for x in v]
    return v


def decode(v):
    if isinstance(v, dict) and "b64" in v:
        return base64.b64decode(v["b64"])
    if isinstance(v, list):
        return [decode(x) for x in v]
    return v


class Channel:
    """Newline-delimited JSON messages over one TCP connection."""

    def __init__(self, sock):
        self.sock = sock
        self.rfile = sock.makefile("r")

    def send(self, **msg):
        self.sock.sendall((json.dumps(msg) + "\n").encode())

    def recv(self):
        line = self.rfile.readline()
        if not line:
            raise AssertionError("the other host closed the connection")
        return json.loads(line)


class RemoteEnd:
    """The other host's End, as run_checks uses it: each method call is one
    request and one answer."""

    def __init__(self, channel):
        self.ch = channel
        self.qp_num, self.gid, self.buf, self.rkey = self._call("info")

    def _call(self, method, *args):
        self.ch.send(m=method, a=encode(list(args)))
        ans = self.ch.recv()
        if "err" in ans:
            raise AssertionError("on the other host: " + ans["err"])
        return decode(ans["r"])

    def connect(self, *args):
        return self._call("connect", *args)

    def write(self, off, data):
        return self._call("write", off, data)

    def read(self, off, n):
        return self._call("read", off, n)

    def gather(self, spans):
        return self._call("gather", spans)

    def guard(self, start, end):
        return self._call("guard", start, end)

    def check_guard(self, start, end, spans, what):
        return self._call("check_guard", start, end, spans, what)

    def post_recv(self, wr_id, spans):
        return self._call("post_recv", wr_id, spans)

    def poll(self, want, deadline=60):
        return [integrity.Completion(*c) for c in self._call("poll", want, deadline)]


def serve(end, ch):
    """Answers the other host's calls on `end` until it hands over ("drive")
    or ends ("done", "failed")."""
    methods = {"connect", "write", "read", "gather", "guard", "check_guard", "post_recv", "poll"}
    while True:
        msg = ch.recv()
        m, args = msg["m"], decode(msg.get("a", []))
        if m == "info":
            ch.send(r=[end.qp_num, end.gid, end.buf, end.rkey])
        elif m in methods:
            try:
                r = getattr(end, m)(*args)
            except Exception as err:  # reported to the driver, which fails
                ch.send(err="%s: %s" % (m, err))
                raise
            ch.send(r=encode([list(c) for c in r] if m == "poll" else r))
        elif m in ("drive", "done"):
            return m
        elif m == "failed":
            raise AssertionError("the other host failed: " + args[0])
        else:
            raise AssertionError("unknown request " + m)


def drive(end, ch, rng, quick, first):
    remote = RemoteEnd(ch)
    if first:
        integrity.connect(end, remote, rng)
    try:
        summary = integrity.run_checks(end, remote, rng, quick)
    except Exception as err:
        ch.send(m="failed", a=[str(err)])
        raise
    return summary


def main():
    role, server_ip, dev, gid_index = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    quick = bool(os.environ.get("RXE_INTEGRITY_QUICK"))
    rng = random.Random(int(os.environ.get("RXE_SEED", "4791")) + (role == "server"))
    end = integrity.End(dev, gid_index)
    if role == "server":
        lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        lsock.bind(("0.0.0.0", PORT))
        lsock.listen(1)
        sock, _ = lsock.accept()
    else:
        end_time = time.time() + 60
        while True:
            try:
                sock = socket.create_connection((server_ip, PORT), timeout=10)
                break
            except OSError:
                if time.time() > end_time:
                    raise
                time.sleep(1)
        sock.settimeout(None)
    ch = Channel(sock)
    # The client drives first (and connects the QPs), then the server.
    if role == "client":
        mine = drive(end, ch, rng, quick, first=True)
        ch.send(m="drive")
        assert serve(end, ch) == "done", "the server did not finish"
    else:
        assert serve(end, ch) == "drive", "the client did not hand over"
        mine = drive(end, ch, rng, quick, first=False)
        ch.send(m="done")
    print("integrity2 (%s as requester): ok, %s" % (role, mine))


if __name__ == "__main__":
    main()
