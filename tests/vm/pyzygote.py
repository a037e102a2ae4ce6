#!/usr/bin/python3
"""A Python that has already imported pyverbs, forked for each test script.

Under TCG with the debug test kernel, starting python3 takes 3.5 s and
importing pyverbs 16 s more: most of a short pyverbs test. This server
imports pyverbs once per guest; `pyz` (tests/vm/pyz.c), given the
command line python3 would get, connects to it, hands over its
standard descriptors, its network and mount namespaces (`ip netns exec`
works), its working directory and environment, and waits. For each
connection the server forks a monitor, which forks the runner: the
runner joins the client's namespaces, takes its descriptors and runs the
script as `python3 SCRIPT ARGS` or `python3 -c CODE ARGS` would, ending
as the interpreter does (atexit handlers, finalizers). The monitor
reports the runner's exit status or signal to the client, passes on the
signals the client receives, and kills the runner if the client dies.

    pyzygote.py SOCKET-PATH

Protocol (one stream connection per script): the client sends a 4-byte
little-endian length and that many bytes, NUL-separated fields: cwd,
then "argv" and the arguments after "python3", then "env" and
NAME=VALUE entries; with the first bytes, descriptors 0, 1, 2 and its
/proc/self/ns/net and /proc/self/ns/mnt (SCM_RIGHTS). Then the client
may send "K<signal>\\n" lines; the monitor answers one line, "X<code>"
or "S<signal>", and closes.
"""
import ctypes
import io
import os
import select
import signal
import socket
import struct
import sys

# What the tests import, loaded once here (the point of this server).
import errno  # noqa: F401
import json  # noqa: F401
import random  # noqa: F401
import runpy
import subprocess  # noqa: F401
import time  # noqa: F401
import traceback
import zlib  # noqa: F401
import pyverbs.addr  # noqa: F401
import pyverbs.cq  # noqa: F401
import pyverbs.device  # noqa: F401
import pyverbs.enums  # noqa: F401
import pyverbs.mem_alloc  # noqa: F401
import pyverbs.mr  # noqa: F401
import pyverbs.pd  # noqa: F401
import pyverbs.pyverbs_error  # noqa: F401
import pyverbs.qp  # noqa: F401
import pyverbs.srq  # noqa: F401
import pyverbs.wr  # noqa: F401

CLONE_NEWNS = 0x00020000
CLONE_NEWNET = 0x40000000
libc = ctypes.CDLL(None, use_errno=True)


def join_namespace(fd, nstype, mine):
    """setns(2) into the namespace fd names, unless it is already ours."""
    if os.fstat(fd).st_ino == os.stat(mine).st_ino:
        return
    if libc.setns(fd, nstype) != 0:
        err = ctypes.get_errno()
        raise OSError(err, "setns(%s): %s" % (mine, os.strerror(err)))


def receive_request(conn):
    """The client's fields and descriptors."""
    head, fds, _, _ = socket.recv_fds(conn, 4, 8)
    if len(head) < 4 or len(fds) != 5:
        raise ValueError("bad request: %d bytes, %d descriptors" % (len(head), len(fds)))
    (size,) = struct.unpack("<I", head)
    body = b""
    while len(body) < size:
        chunk = conn.recv(size - len(body))
        if not chunk:
            raise ValueError("request cut short")
        body += chunk
    fields = [f.decode("utf-8", "surrogateescape") for f in body.split(b"\0")]
    cwd = fields[0]
    i_argv, i_env = fields.index("argv"), fields.index("env")
    return cwd, fields[i_argv + 1:i_env], fields[i_env + 1:], fds


def std_stream(fd):
    """A standard stream on fd, buffered as python3's own would be."""
    if fd == 0:
        return open(0, "r", closefd=False)
    unbuffered = bool(os.environ.get("PYTHONUNBUFFERED"))
    buf = open(fd, "wb", buffering=0 if unbuffered else -1, closefd=False)
    return io.TextIOWrapper(buf, encoding="utf-8",
                            errors="backslashreplace" if fd == 2 else "strict",
                            line_buffering=os.isatty(fd) or fd == 2,
                            write_through=unbuffered)


def run(cwd, argv, env, fds):
    """In the runner: become `python3 ARGV` in the client's place."""
    join_namespace(fds[3], CLONE_NEWNET, "/proc/self/ns/net")
    join_namespace(fds[4], CLONE_NEWNS, "/proc/self/ns/mnt")
    for i in range(3):
        os.dup2(fds[i], i)
    for fd in fds:
        os.close(fd)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(e.split("=", 1) for e in env if "=" in e)
    sys.stdin = sys.__stdin__ = std_stream(0)
    sys.stdout = sys.__stdout__ = std_stream(1)
    sys.stderr = sys.__stderr__ = std_stream(2)
    try:
        if argv[0] == "-c":
            sys.argv = ["-c"] + argv[2:]
            sys.path[0] = ""
            main = {"__name__": "__main__", "__builtins__": __builtins__}
            exec(compile(argv[1], "<string>", "exec"), main)
        else:
            sys.argv = argv
            sys.path[0] = os.path.dirname(os.path.abspath(argv[0]))
            runpy.run_path(argv[0], run_name="__main__")
    except SystemExit:
        raise
    except BaseException:
        # As python3 prints it: from the script's frames on.
        etype, value, tb = sys.exc_info()
        while tb and (tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
                     or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")):
            tb = tb.tb_next
        traceback.print_exception(etype, value, tb)
        sys.exit(1)
    sys.exit(0)


def monitor(conn):
    """Fork the runner, pass signals on, report how it ended."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    try:
        cwd, argv, env, fds = receive_request(conn)
    except (OSError, ValueError) as err:
        print("pyzygote: %s" % err, file=sys.stderr)
        os._exit(1)
    pid = os.fork()
    if pid == 0:
        conn.close()
        try:
            run(cwd, argv, env, fds)
        except OSError as err:
            os.write(2, ("pyzygote: %s\n" % err).encode())
            os._exit(127)
        # run() ends with SystemExit, which unwinds to the interpreter's exit.
    for fd in fds:
        os.close(fd)
    child = os.pidfd_open(pid)
    pending = b""
    while True:
        ready, _, _ = select.select([conn, child], [], [])
        if child in ready:
            _, status = os.waitpid(pid, 0)
            if os.WIFSIGNALED(status):
                reply = "S%d\n" % os.WTERMSIG(status)
            else:
                reply = "X%d\n" % os.WEXITSTATUS(status)
            try:
                conn.sendall(reply.encode())
            except OSError:
                pass
            os._exit(0)
        try:
            data = conn.recv(64)
        except OSError:
            data = b""
        if not data:
            # The client is gone: so is its script.
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            os._exit(0)
        pending += data
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            if line.startswith(b"K"):
                try:
                    os.kill(pid, int(line[1:]))
                except (ValueError, ProcessLookupError):
                    pass


def serve(path):
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path + ".new")
    server.listen(64)
    os.rename(path + ".new", path)
    # Monitors are reaped by the kernel; each waits for its own runner.
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    sys.stdout.flush()
    sys.stderr.flush()
    while True:
        conn, _ = server.accept()
        if os.fork() == 0:
            server.close()
            monitor(conn)
            os._exit(0)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
