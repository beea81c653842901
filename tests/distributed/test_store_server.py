"""TCPStore's server under load and under abuse: thousands of concurrent
clients with every answer checked and the server's memory measured,
accept() failing for want of file descriptors, declared lengths over the
limits, malformed frames, stalled connections, tokens, a master whose start
fails, and the limits on keys.  Servers that must be measured or starved
run in a subprocess; the rest run in this process."""
import asyncio
import contextlib
import hashlib
import json
import os
import resource
import select
import socket
import subprocess
import sys
import threading
import time
import types

import pytest

import pygpu.distributed as dist
from pygpu.distributed import _store_common as w
from pygpu.distributed import _store_server
from pygpu.distributed.store import StoreLimits, TCPStore

from conftest import SANITIZED

HARD_TIMEOUT = 60

# A master serving from a subprocess: prints "PORT <n>", answers "stats" on
# stdin with "STATS <json>", exits at EOF.  argv[1]: how many file
# descriptors it may open beyond those open once it serves (0: no limit
# lowered); argv[2]: a log file for the store's debug log ("" for none).
SERVER = r"""
import json, logging, os, resource, sys
if sys.argv[2]:
    logging.basicConfig(filename=sys.argv[2], level=logging.DEBUG,
                        format="%(message)s")
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
from pygpu.distributed.store import TCPStore
m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
             timeout=60)
extra = int(sys.argv[1])
if extra:
    n_open = len(os.listdir("/proc/self/fd"))
    resource.setrlimit(resource.RLIMIT_NOFILE, (n_open + extra, hard))
print("PORT", m.port, flush=True)
for line in sys.stdin:
    if line.strip() == "stats":
        print("STATS", json.dumps(dict(m._server.stats)), flush=True)
m.close()
"""


class ServerProcess:
    def __init__(self, extra_fds=0, log="", env=None):
        e = dict(os.environ)
        e.update(env or {})
        self.proc = subprocess.Popen(
            [sys.executable, "-c", SERVER, str(extra_fds), log],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=e)
        line = self.proc.stdout.readline()
        if not line.startswith("PORT"):
            self.proc.kill()
            raise AssertionError(f"server did not start: {line!r} "
                                 f"{self.proc.stderr.read()}")
        self.port = int(line.split()[1])

    def rss_kib(self, field="VmRSS"):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise AssertionError(f"no {field} for the server")

    def stats(self):
        self.proc.stdin.write("stats\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line.startswith("STATS"), line
        return json.loads(line.split(" ", 1)[1])

    def stop(self):
        """Ends the server; returns what it wrote on stderr."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        err = self.proc.stderr.read()
        self.proc.stdout.close()
        self.proc.stderr.close()
        return err


@pytest.fixture
def master():
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10)
    yield m
    m.close()


def frame(cmd, key=b"", value=b""):
    return w.HEAD.pack(cmd, len(key), len(value)) + key + value


def raw(port, timeout=5):
    s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    return s


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def ask(s, cmd, key=b"", value=b""):
    s.sendall(frame(cmd, key, value))
    status, n = w.REPLY.unpack(recv_exact(s, w.REPLY.size))
    return status, recv_exact(s, n)


def closed_by_peer(s, within=5.0):
    """True when the server closes s (EOF or reset) within the time."""
    s.settimeout(within)
    try:
        while True:
            if not s.recv(65536):
                return True
    except (ConnectionResetError, BrokenPipeError):
        return True
    except socket.timeout:
        return False


def eventually(check, within=5.0):
    """True once check() is (the server's loop runs in another thread, so
    its tables are read until they settle)."""
    deadline = time.monotonic() + within
    while True:
        try:
            if check():
                return True
        except RuntimeError:  # a table changed size while read
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)


def open_fds():
    return len(os.listdir("/proc/self/fd"))


@contextlib.contextmanager
def nofile_at_least(n):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < n:
        pytest.skip(f"needs {n} open files, the hard RLIMIT_NOFILE is "
                    f"{hard} (raise it with ulimit -Hn)")
    if soft != resource.RLIM_INFINITY and soft < n:
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


# ------------------------------------------------------------ load

def _value(i):
    return hashlib.sha256(f"value {i}".encode()).hexdigest().encode()


async def _one_client(i, n, port, adds, waits_left):
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    async def req(cmd, key, value=b""):
        writer.write(frame(cmd, key, value))
        status, size = w.REPLY.unpack(await reader.readexactly(w.REPLY.size))
        return status, await reader.readexactly(size)

    try:
        key, nxt = f"load/{i}".encode(), f"load/{(i + 1) % n}".encode()
        assert await req(w.SET, key, _value(i)) == (w.OK, b"")
        assert await req(w.GET, key) == (w.OK, _value(i))
        status, total = await req(w.ADD, b"load/counter", b"1")
        assert status == w.OK
        adds.append(int(total))
        mine = f"load/mine/{i}".encode()
        assert await req(w.ADD, mine, b"7") == (w.OK, b"7")
        assert await req(w.ADD, mine, str(-3 - i).encode()) == \
            (w.OK, str(4 - i).encode())
        # the next client's key: set by it, whenever it runs
        assert await req(w.WAIT, nxt, b"30000") == (w.OK, b"1")
        assert await req(w.GET, nxt) == (w.OK, _value((i + 1) % n))
        assert await req(w.CHECK, key + b"\0" + nxt) == (w.OK, b"1")
        if i % 50 == 0:  # a wait that times out names its missing key
            never = f"load/never/{i}".encode()
            assert await req(w.WAIT, nxt + b"\0" + never, b"50") == \
                (w.TIMEOUT, never)
        assert await req(w.GET, f"load/absent/{i}".encode()) == \
            (w.MISSING, b"")
        waits_left.append(i)
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()


async def _load(n, port):
    adds, done = [], []
    await asyncio.wait_for(asyncio.gather(
        *(_one_client(i, n, port, adds, done) for i in range(n))),
        timeout=HARD_TIMEOUT)
    return adds, done


@pytest.mark.parametrize("n", [200, 2000])
def test_load_concurrent_clients(n):
    """n clients at once, each with set/get/add/check and a wait on the
    next client's key; every answer checked, the server's RSS bounded,
    and an ordinary client served afterwards."""
    with nofile_at_least(n + 256):
        server = ServerProcess()
        try:
            warm = TCPStore("127.0.0.1", server.port, timeout=10)
            warm.set("warm", b"1")
            assert warm.get("warm") == b"1"
            rss0 = server.rss_kib()
            t0 = time.monotonic()
            adds, done = asyncio.run(_load(n, server.port))
            wall = time.monotonic() - t0
            assert sorted(adds) == list(range(1, n + 1))
            assert len(done) == n
            rss_peak, rss1 = server.rss_kib("VmHWM"), server.rss_kib()
            # an ordinary client after the storm
            c = TCPStore("127.0.0.1", server.port, timeout=10)
            c.set("after", "yes")
            assert c.get("after") == b"yes"
            assert c.add("load/counter", 0) == n
            assert c.get(f"load/{n - 1}") == _value(n - 1)
            # load/i and load/mine/i per client, the counter, the client
            # count, "warm" and "after"
            assert c.num_keys() == 2 * n + 4
            stats = server.stats()
            c.close()
            warm.close()
        finally:
            err = server.stop()
    ops = n * 9 + n // 50
    print(f"\nstore load: {n} clients, {ops} requests in {wall:.2f} s "
          f"({ops / wall:.0f}/s); server RSS {rss0 / 1024:.1f} MiB before, "
          f"{rss1 / 1024:.1f} MiB after, {rss_peak / 1024:.1f} MiB peak; "
          f"stats {stats}")
    assert err == ""
    assert stats["accepted"] >= n + 2
    # what the server keeps per connection and per key is small: its peak
    # grows by far less than a frame buffer per client (not measured under
    # the sanitizers, whose quarantine holds freed memory)
    if not SANITIZED:
        assert rss_peak - rss0 < 32 * 1024 + n * 8, (rss0, rss_peak)
    assert wall < HARD_TIMEOUT


# ------------------------------------------------------------ accept errors

def test_accept_survives_running_out_of_fds(tmp_path):
    """A server allowed 8 more file descriptors gets 40 connections at once:
    accept() fails with EMFILE, the server backs off and keeps its listener,
    and as the served clients leave the waiting ones are served in turn."""
    log = tmp_path / "store.log"
    server = ServerProcess(extra_fds=8, log=str(log))
    socks = []
    try:
        for i in range(40):
            s = raw(server.port)
            s.sendall(frame(w.SET, f"k{i}".encode(), b"v"))
            socks.append(s)
        served, rounds = 0, 0
        deadline = time.monotonic() + 30
        while socks and time.monotonic() < deadline:
            ready = select.select(socks, [], [], 0.5)[0]
            rounds += bool(ready)
            for s in ready:
                assert w.REPLY.unpack(recv_exact(s, w.REPLY.size)) == \
                    (w.OK, 0)
                s.close()
                socks.remove(s)
                served += 1
        assert served == 40, f"{served} of 40 served"
        assert rounds >= 3  # served in turns, as descriptors came free
        stats = server.stats()
        assert stats["accept_errors"] >= 1 and stats["accept_pauses"] >= 1
        c = TCPStore("127.0.0.1", server.port, timeout=10)
        assert c.get("k39") == b"v"
        assert c.num_keys() == 41
        c.close()
    finally:
        for s in socks:
            s.close()
        err = server.stop()
    assert err == ""
    assert "Too many open files" in log.read_text()


# ------------------------------------------------------- lengths and frames

def test_oversized_declared_length_refused_without_allocating():
    """A frame declaring an 8 GiB value or a 4 GiB key is refused at its
    header: the client gets a closing answer naming the limit, the server's
    RSS does not grow, and other clients are served."""
    server = ServerProcess()
    try:
        c = TCPStore("127.0.0.1", server.port, timeout=10)
        c.set("a", b"1")
        rss0 = server.rss_kib()
        for head in (w.HEAD.pack(w.SET, 1, 8 << 30) + b"k",
                     w.HEAD.pack(w.SET, (1 << 32) - 1, 0),
                     w.HEAD.pack(w.GET, 1 << 20, 0)):
            s = raw(server.port)
            s.sendall(head + b"x" * 65536)
            status, n = w.REPLY.unpack(recv_exact(s, w.REPLY.size))
            text = recv_exact(s, n).decode()
            assert status == w.CLOSING
            assert "more than the store's limit" in text, text
            assert closed_by_peer(s)
            s.close()
        assert server.rss_kib() - rss0 < 8 * 1024
        assert c.get("a") == b"1"
        c.close()
    finally:
        err = server.stop()
    assert err == ""


def test_value_over_the_server_limit_then_reconnects():
    """A client whose own limits allow more than the server's gets the
    server's refusal as a RuntimeError; its next request connects again."""
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10, limits=StoreLimits(max_value_bytes=1024,
                                                max_request_keys=4))
    c = TCPStore("127.0.0.1", m.port, timeout=10)
    try:
        with pytest.raises(RuntimeError, match="a value of 2048 bytes is "
                           "more than the store's limit of 1024"):
            c.set("big", b"x" * 2048)
        c.set("small", b"x" * 1024)
        assert m.get("small") == b"x" * 1024
        with pytest.raises(RuntimeError, match="5 keys is more than the "
                           "store's limit of 4"):
            c.check(["a", "b", "c", "d", "e"])
        assert not c.check(["a", "b", "c", "small"])
    finally:
        c.close()
        m.close()


def test_client_checks_its_limits_before_sending(master):
    small = StoreLimits(max_key_bytes=32, max_value_bytes=64,
                        max_request_keys=2)
    c = TCPStore("127.0.0.1", master.port, timeout=10, limits=small)
    try:
        with pytest.raises(ValueError, match="a key of 33 bytes"):
            c.set("k" * 33, b"")
        with pytest.raises(ValueError, match="a value of 65 bytes"):
            c.set("k", b"v" * 65)
        with pytest.raises(ValueError, match="3 keys is more than"):
            c.wait(["a", "b", "c"], timeout=1)
        with pytest.raises(ValueError, match="NUL"):
            c.set("a\0b", b"")
        c.set("k" * 32, b"v" * 64)
        assert master.get("k" * 32) == b"v" * 64
    finally:
        c.close()
    with pytest.raises(ValueError, match="PYGPU_STORE_MAX_KEYS.*'many'"):
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("PYGPU_STORE_MAX_KEYS", "many")
            StoreLimits.from_env()
    with pytest.raises(ValueError, match="positive"):
        StoreLimits(max_keys=0)


def test_malformed_frames(master, capfd):
    """Each malformed frame gets an error answer or a closed connection;
    the server keeps serving and prints nothing."""
    port = master.port
    # unknown command, and an HTTP request, are refused and closed
    for junk in (frame(99, b"k"), b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"):
        s = raw(port)
        s.sendall(junk)
        status, n = w.REPLY.unpack(recv_exact(s, w.REPLY.size))
        assert status == w.CLOSING
        assert b"unknown command" in recv_exact(s, n)
        assert closed_by_peer(s)
        s.close()
    # fields a command does not take
    for bad in (frame(w.GET, b"k", b"v"), frame(w.NUM_KEYS, b"k"),
                frame(w.ADD, b"k", b"1" * 40), frame(w.AUTH, b"k", b"t")):
        s = raw(port)
        s.sendall(bad)
        status, n = w.REPLY.unpack(recv_exact(s, w.REPLY.size))
        assert status == w.CLOSING and b"malformed" in recv_exact(s, n)
        assert closed_by_peer(s)
        s.close()
    # refusals that keep the connection
    s = raw(port)
    assert ask(s, w.SET, b"text", b"abc") == (w.OK, b"")
    status, text = ask(s, w.ADD, b"text", b"1")
    assert status == w.ERROR and b"not an integer" in text
    status, text = ask(s, w.ADD, b"n", b"one")
    assert status == w.ERROR and b"not a decimal integer" in text
    assert ask(s, w.ADD, b"n", str(w.INT64_MAX).encode()) == \
        (w.OK, str(w.INT64_MAX).encode())
    status, text = ask(s, w.ADD, b"n", b"1")
    assert status == w.ERROR and b"overflows int64" in text
    status, text = ask(s, w.WAIT, b"text", b"soon")
    assert status == w.ERROR and b"milliseconds" in text
    assert ask(s, w.GET, b"text") == (w.OK, b"abc")
    s.close()
    # a header cut short, then a vanished client
    s = raw(port)
    s.sendall(frame(w.SET, b"k", b"v")[:5])
    s.close()
    c = TCPStore("127.0.0.1", port, timeout=10)
    assert c.get("text") == b"abc"
    c.close()
    out, err = capfd.readouterr()
    assert err == "" and out == ""


def test_error_in_a_handler_closes_that_connection_only(master, monkeypatch,
                                                        capfd):
    real = _store_server.StoreServer._dispatch

    def dispatch(self, c, cmd, key, value):
        if key == b"boom":
            raise KeyError("a bug")
        return real(self, c, cmd, key, value)
    monkeypatch.setattr(_store_server.StoreServer, "_dispatch", dispatch)
    c = TCPStore("127.0.0.1", master.port, timeout=10)
    try:
        with pytest.raises(RuntimeError, match="lost the connection"):
            c.set("boom", b"1")
        c.set("fine", b"2")  # a new connection
        assert master.get("fine") == b"2"
    finally:
        c.close()
    assert capfd.readouterr().err == ""


# ------------------------------------------------------------ stalls

def test_stalled_connections_are_reaped():
    """With idle_timeout 0.3 s: a connection that stops mid-frame, one
    that never sends, and one that does not read its replies are closed;
    an idle client between requests is kept."""
    limits = StoreLimits(idle_timeout=0.3)
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10, limits=limits)
    try:
        keeper = TCPStore("127.0.0.1", m.port, timeout=10)
        m.set("big", b"b" * (1 << 20))
        half = raw(m.port)
        half.sendall(frame(w.SET, b"key", b"value")[:7])
        silent = raw(m.port)
        deaf = raw(m.port)
        deaf.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        deaf.sendall(frame(w.GET, b"big") * 64)
        t0 = time.monotonic()
        assert closed_by_peer(half) and closed_by_peer(silent)
        assert time.monotonic() - t0 < 3
        assert m._server.stats["reaped"] >= 2
        # deaf, once its replies piled up
        assert eventually(lambda: m._server.stats["reaped"] >= 3)
        # the master's client and keeper remain
        assert eventually(lambda: len(m._server._conns) == 2)
        assert keeper.get("big") == b"b" * (1 << 20)
        for s in (half, silent, deaf):
            s.close()
        keeper.close()
    finally:
        m.close()


def test_keepalive_on_both_ends(master):
    c = TCPStore("127.0.0.1", master.port, timeout=10)
    try:
        c.set("k", b"v")
        assert c._sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
        assert eventually(lambda: len(master._server._conns) == 2)
        conns = list(master._server._conns)
        assert all(x.sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE)
                   for x in conns)
    finally:
        c.close()


# ------------------------------------------------------------ waits

def test_waits_are_kept_in_the_loop(master):
    """300 waits pending at once cost no thread; they are answered when
    their key arrives, or at their own deadline with the missing keys."""
    port = master.port
    threads0 = threading.active_count()
    waiters = [raw(port) for _ in range(300)]
    for i, s in enumerate(waiters):
        keys = b"go" if i % 3 else b"go\0never"
        s.sendall(frame(w.WAIT, keys, b"" if i % 3 else b"400"))
    assert eventually(lambda: sum(
        len(v) for v in list(master._server._waiters.values())) == 400)
    assert threading.active_count() == threads0
    t0 = time.monotonic()
    for s in waiters[::3]:
        assert w.REPLY.unpack(recv_exact(s, w.REPLY.size)) == (w.TIMEOUT, 8)
        assert recv_exact(s, 8) == b"go\0never"
    assert time.monotonic() - t0 < 3
    master.set("go", b"1")
    for i, s in enumerate(waiters):
        if i % 3:
            assert w.REPLY.unpack(recv_exact(s, w.REPLY.size)) == (w.OK, 1)
            assert recv_exact(s, 1) == b"1"
        s.close()
    assert eventually(lambda: master._server._waiters == {})


def test_answered_waits_do_not_pile_up(master, monkeypatch):
    """The deadlines of waits answered early are dropped from the heap
    once they outnumber the pending ones."""
    monkeypatch.setattr(_store_server, "_HEAP_SLACK", 16)
    server = master._server
    for rounds in range(3):
        waiters = [raw(master.port) for _ in range(40)]
        for i, s in enumerate(waiters):
            s.sendall(frame(w.WAIT, f"r{rounds}/{i}".encode(), b"300000"))
        assert eventually(lambda: server._timed_waits == 40)
        assert len(server._deadlines) <= 2 * 40 + 16 + 1
        for i, s in enumerate(waiters):
            master.set(f"r{rounds}/{i}", b"")
            assert w.REPLY.unpack(recv_exact(s, w.REPLY.size)) == (w.OK, 1)
            assert recv_exact(s, 1) == b"1"
            s.close()
        assert server._timed_waits == 0
    assert len(server._deadlines) <= 2 * 40 + 16 + 1  # not 120


def test_wait_falls_back_to_polling_on_an_older_server(master, monkeypatch):
    monkeypatch.setattr(_store_server.StoreServer, "_wait",
                        lambda self, c, keys, value:
                        self._reply(c, w.MISSING, b""))
    c = TCPStore("127.0.0.1", master.port, timeout=10)
    try:
        threading.Timer(0.2, lambda: master.set("late", b"x")).start()
        assert c.get("late") == b"x"
        assert not c._server_waits
        with pytest.raises(RuntimeError, match="timed out"):
            c.wait(["never"], timeout=0.2)
    finally:
        c.close()


def test_old_commands_on_a_raw_socket(master):
    """The original six commands, framed as before, answer as before."""
    s = raw(master.port)
    assert ask(s, w.SET, b"a", b"1") == (w.OK, b"")
    assert ask(s, w.GET, b"a") == (w.OK, b"1")
    assert ask(s, w.GET, b"zz") == (w.MISSING, b"")
    assert ask(s, w.ADD, b"n", b"5") == (w.OK, b"5")
    assert ask(s, w.CHECK, b"a\0n") == (w.OK, b"1")
    assert ask(s, w.CHECK, b"a\0zz") == (w.OK, b"0")
    assert ask(s, w.DELETE, b"a") == (w.OK, b"1")
    assert ask(s, w.DELETE, b"a") == (w.OK, b"0")
    assert ask(s, w.NUM_KEYS) == (w.OK, b"2")  # n, and the client count
    s.close()


# ------------------------------------------------------------ token

def test_token(monkeypatch):
    monkeypatch.setenv(w.TOKEN_ENV, "s3cret")
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10)
    try:
        c = TCPStore("127.0.0.1", m.port, timeout=10)
        c.set("k", b"v")
        assert m.get("k") == b"v"
        c.close()
        with pytest.raises(RuntimeError, match="wrong token"):
            TCPStore("127.0.0.1", m.port, timeout=10, token="guess")
        monkeypatch.delenv(w.TOKEN_ENV)
        with pytest.raises(RuntimeError, match="requires a token: set "
                           "PYGPU_STORE_TOKEN"):
            TCPStore("127.0.0.1", m.port, timeout=10)
        s = raw(m.port)  # nothing is served before the token
        s.sendall(frame(w.GET, b"k"))
        status, n = w.REPLY.unpack(recv_exact(s, w.REPLY.size))
        assert status == w.CLOSING and b"requires a token" in \
            recv_exact(s, n)
        assert closed_by_peer(s)
        s.close()
        assert m._server.stats["bad_tokens"] == 1
        assert eventually(lambda: len(m._server._conns) == 1)
    finally:
        m.close()
    # a server without a token takes clients with one
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10)
    c = TCPStore("127.0.0.1", m.port, timeout=10, token="any")
    c.set("k", b"v")
    c.close()
    m.close()


# ------------------------------------------------------------ failed starts

def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _refused(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    except ConnectionRefusedError:
        return True
    return False


def test_failed_master_start_leaves_no_listener(monkeypatch):
    fds0 = open_fds()

    class NoThread(threading.Thread):
        def start(self):
            raise RuntimeError("can't start new thread")
    monkeypatch.setattr(_store_server, "threading", types.SimpleNamespace(
        Thread=NoThread, Lock=threading.Lock,
        current_thread=threading.current_thread))
    port = _free_port()
    with pytest.raises(RuntimeError, match="could not start the server's "
                       "thread: can't start new thread"):
        TCPStore("127.0.0.1", port, is_master=True, timeout=2)
    monkeypatch.undo()
    assert _refused(port)
    assert open_fds() == fds0

    # started, but the workers never came
    port = _free_port()
    t0 = time.monotonic()
    with pytest.raises(RuntimeError, match="waiting for 2 processes"):
        TCPStore("127.0.0.1", port, 2, is_master=True, timeout=0.3)
    assert time.monotonic() - t0 < 5
    assert _refused(port)
    assert open_fds() == fds0

    # the port is taken
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        with pytest.raises(RuntimeError, match="could not listen on "
                           f"127.0.0.1:{port}"):
            TCPStore("127.0.0.1", port, is_master=True, timeout=2)
    assert open_fds() == fds0


def test_close_stops_the_server(master):
    port = master.port
    c = TCPStore("127.0.0.1", port, timeout=10)
    master.close()
    assert _refused(port)
    with pytest.raises(RuntimeError, match="lost the connection|could not "
                       "reach"):
        c.set("k", b"v")
    c.close()
    with pytest.raises(RuntimeError, match="closed"):
        c.set("k", b"v")


# ------------------------------------------------------------ key limits

def test_key_count_and_size_limits():
    limits = StoreLimits(max_keys=4, max_total_bytes=4096)
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10, limits=limits)
    try:
        assert m.num_keys() == 1  # the client count
        for k in ("a", "b", "c"):
            m.set(k, b"1")
        with pytest.raises(RuntimeError, match="holds 4 keys, its limit "
                           r"\(PYGPU_STORE_MAX_KEYS\); the new key 'd'"):
            m.set("d", b"1")
        with pytest.raises(RuntimeError, match="PYGPU_STORE_MAX_KEYS"):
            m.add("d", 1)
        m.set("a", b"2")  # overwriting is not a new key
        assert m.add("c", 1) == 2
        assert m.delete_key("b")
        m.set("d", b"x" * 3000)
        with pytest.raises(RuntimeError, match="PYGPU_STORE_MAX_TOTAL_BYTES"):
            m.set("a", b"y" * 2000)
        assert m.get("a") == b"2" and m.num_keys() == 4
        m.set("d", b"")  # shrinking frees room
        m.set("a", b"y" * 2000)
    finally:
        m.close()


def test_connection_limit_leaves_the_rest_in_the_backlog():
    """At max_connections the server stops accepting; a waiting client is
    served as soon as another leaves."""
    m = TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                 timeout=10, limits=StoreLimits(max_connections=3))
    try:
        a, b = raw(m.port), raw(m.port)
        assert ask(a, w.SET, b"a", b"1") == (w.OK, b"")
        assert ask(b, w.SET, b"b", b"1") == (w.OK, b"")
        late = raw(m.port)  # connected in the kernel, not accepted
        late.sendall(frame(w.GET, b"a"))
        assert select.select([late], [], [], 0.3)[0] == []
        assert m._server.stats["accept_pauses"] >= 1
        a.close()
        late.settimeout(5)
        assert w.REPLY.unpack(recv_exact(late, w.REPLY.size)) == (w.OK, 1)
        assert recv_exact(late, 1) == b"1"
        late.close()
        b.close()
        assert m.get("b") == b"1"
    finally:
        m.close()


def test_limits_from_the_environment(monkeypatch):
    monkeypatch.setenv("PYGPU_STORE_MAX_VALUE_BYTES", "100")
    monkeypatch.setenv("PYGPU_STORE_IDLE_TIMEOUT", "2.5")
    limits = StoreLimits.from_env(max_keys=7)
    assert (limits.max_value_bytes, limits.idle_timeout, limits.max_keys,
            limits.max_key_bytes) == (100, 2.5, 7, 8192)
    m = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False,
                      timeout=10)
    try:
        assert m._server.limits.max_value_bytes == 100
        with pytest.raises(ValueError, match="101 bytes"):
            m.set("k", b"v" * 101)
    finally:
        m.close()
