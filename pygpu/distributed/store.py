"""Key-value stores for the rendezvous: TCPStore, FileStore, PrefixStore.

A store carries only a few short keys while a process group forms (the
ranks' world sizes, the MPI port name, the NCCL id); no tensor data goes
through it.  Values are bytes (a str is encoded as UTF-8).  Every blocking
call gives up with a RuntimeError after the store's timeout.

TCPStore: the process with is_master=True serves the keys from one
background thread running one event loop (``selectors``, non-blocking
sockets); every process, the master included, talks to it over one socket.
A request is one frame ``u8 command, u32 key length, key, u64 value length,
value``, a reply ``u8 status, u64 length, payload`` (big-endian).  Commands:
set, get, add (a decimal amount; the reply is the new total), check (keys
separated by NUL: all present?), delete_key, num_keys, wait (keys separated
by NUL and a timeout in milliseconds: answered when the last key arrives or
with the missing keys at the deadline; the server keeps the waits in its
loop, no thread per waiter) and auth.  Statuses: ok, missing, error (the
request was refused, the connection stays), closing (refused, and the
server closes the connection) and timeout.

Limits (StoreLimits: keyword ``limits`` or environment variables) bound a
key (8 KiB, as torch), a value (8 MiB, as torch), the keys of one check or
wait (128 Ki, as torch), the keys held (1 Mi), the bytes held (1 GiB), the
server's connections (16 Ki) and how long it keeps a connection that
stalled mid-frame, sent nothing or does not read its replies (60 s).  A
client checks keys and values against its own limits before sending
(ValueError); the server checks every frame's declared lengths before it
keeps a byte of the body and refuses what is over.  The server keeps
accepting when accept() fails (for want of file descriptors it pauses for
0.1 s, the listener stays open), and any error on one connection closes
that connection only.  It logs to the ``pygpu.distributed.store`` logger at
debug level and never prints.

Token: when PYGPU_STORE_TOKEN (or the keyword ``token``) is set, the server
serves only the connections that present the same token first; any other
request closes the connection, and the client raises a RuntimeError saying
the token is missing or wrong.  Every process of a job must have the same
value.  A server without a token accepts any token.

What this protects against, and what not: the limits, timeouts and error
handling protect the server from accidental and buggy clients (a port
scanner, a client from another job, a crashed process, a stray HTTP
request, a client with a bug in its lengths), not from a determined denial
of service (many connections each holding a partial 8 MiB frame, for
instance, are bounded only by max_connections times the frame limits).  The
token is a shared secret sent in clear text: it keeps other jobs and
mistaken clients out, but anyone who can read the network traffic can read
it and every key and value.  There is no TLS and no integrity protection:
run the store on a trusted network (or loopback), as torch's TCPStore
expects.

FileStore: the same operations on a shared file of checksummed records
appended under an exclusive fcntl lock (see _file_store.py for the format),
compacted when it grows to several times its live size.  A file that is not
a FileStore file, comes from an incompatible version, is cut short or
corrupt, or is left over from an earlier run (it already counts world_size
processes) raises a RuntimeError naming the file.  The processes count
themselves in and out, and the last one out removes the file.
"""
import math
import socket
import threading
import time

from . import _store_common as w
from ._file_store import FileStore
from ._store_common import (DEFAULT_TIMEOUT, Store, StoreLimits, key_bytes,
                            seconds, value_bytes)
from ._store_server import StoreServer

__all__ = ["Store", "TCPStore", "FileStore", "PrefixStore", "StoreLimits"]

_DEFAULT_TIMEOUT = DEFAULT_TIMEOUT
_REPLY_GRACE = 10.0  # seconds past a wait's deadline, then no answer


class PrefixStore(Store):
    """Every key of store prefixed with ``prefix/``."""

    def __init__(self, prefix, store):
        super().__init__(store.timeout)
        self.prefix = prefix
        self.underlying_store = store

    def _k(self, key):
        return f"{self.prefix}/{key}"

    def _get(self, key):
        return self.underlying_store._get(self._k(key))

    def set(self, key, value):
        self.underlying_store.set(self._k(key), value)

    def add(self, key, amount):
        return self.underlying_store.add(self._k(key), amount)

    def check(self, keys):
        return self.underlying_store.check([self._k(k) for k in keys])

    def wait(self, keys, timeout=None):
        if isinstance(keys, str):
            keys = [keys]
        if timeout is None:
            timeout = self._timeout
        self.underlying_store.wait([self._k(k) for k in keys], timeout)

    def delete_key(self, key):
        return self.underlying_store.delete_key(self._k(key))

    def num_keys(self):
        return self.underlying_store.num_keys()


# ---------------------------------------------------------------- TCPStore

def _recv_exact(sock, n):
    """n bytes, read as they arrive (never allocated ahead)."""
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("store: connection closed")
        buf += chunk
    return bytes(buf)


def _exchange(sock, cmd, key, value):
    head = w.HEAD.pack(cmd, len(key), len(value))
    if len(value) > 64 * 1024:
        sock.sendall(head + key)
        sock.sendall(value)
    else:
        sock.sendall(head + key + value)
    status, n = w.REPLY.unpack(_recv_exact(sock, w.REPLY.size))
    return status, _recv_exact(sock, n)


class TCPStore(Store):
    """TCPStore(host_name, port, world_size=None, is_master=False,
    timeout=timedelta(seconds=300), wait_for_workers=True, *, token=None,
    limits=None).

    The master serves the keys (port 0: a free port, then in .port); the
    others connect, retrying until the timeout while the master starts.
    With wait_for_workers the master's constructor returns once
    world_size processes have connected.  token: the shared secret every
    client presents (default: PYGPU_STORE_TOKEN; empty: none).  limits: a
    StoreLimits (default: from the environment).  A master whose start
    fails closes everything it opened before raising."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True, *,
                 token=None, limits=None):
        super().__init__(timeout)
        self.host = host_name
        self.port = int(port)
        self.world_size = world_size
        self.limits = limits if limits is not None else \
            StoreLimits.from_env()
        self._token = w.token_from(token)
        self._lock = threading.Lock()
        self._sock = None
        self._closed = False
        self._server = None
        self._server_waits = True  # False for a server without WAIT
        try:
            if is_master:
                self._server = StoreServer(host_name, self.port, self.limits,
                                           self._token)
                self.port = self._server.port
            with self._lock:
                self._sock = self._connect()
            self.add("__pygpu_store_clients", 1)
            if is_master and wait_for_workers and world_size:
                self._wait_for_workers(world_size)
        except BaseException:
            self.close()
            raise

    def _wait_for_workers(self, n):
        deadline = time.monotonic() + self._timeout
        while int(self._request(w.GET, b"__pygpu_store_clients")[1]) < n:
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"TCPStore: timed out after {self._timeout:g} s "
                    f"waiting for {n} processes to connect to "
                    f"{self.host}:{self.port}")
            time.sleep(0.01)

    def _where(self):
        return f"{self.host}:{self.port}"

    def _connect(self):
        deadline = time.monotonic() + self._timeout
        pause = 0.01
        while True:
            try:
                sock = socket.create_connection(
                    (self.host, self.port),
                    timeout=max(0.05, deadline - time.monotonic()))
                break
            except OSError as err:
                if time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"TCPStore: could not reach {self._where()} within "
                        f"{self._timeout:g} s: {err}") from err
                time.sleep(pause)
                pause = min(pause * 2, 0.5)
        try:
            w.tune(sock)
            sock.settimeout(self._timeout)
            if self._token:
                status, payload = _exchange(sock, w.AUTH, b"", self._token)
                # MISSING: a server that predates tokens, which needs none
                if status not in (w.OK, w.MISSING):
                    raise RuntimeError(self._refusal(payload))
        except BaseException as err:
            sock.close()
            if isinstance(err, OSError):
                raise RuntimeError(
                    f"TCPStore: lost the connection to {self._where()} "
                    f"while presenting the token: {err}") from err
            raise
        return sock

    def _refusal(self, payload):
        return (f"TCPStore: the server at {self._where()} refused this "
                f"client and closed the connection: "
                f"{payload.decode(errors='replace')}")

    def _request(self, cmd, key, value=b"", wait_s=None):
        """(status, payload) of one request; RuntimeError for an error
        reply or a lost connection.  After a lost connection or a refusal
        the next request connects again."""
        with self._lock:
            if self._closed:
                raise RuntimeError("TCPStore: the store is closed")
            if self._sock is None:
                self._sock = self._connect()
            sock = self._sock
            try:
                sock.settimeout(self._timeout if wait_s is None else
                                None if not math.isfinite(wait_s) else
                                wait_s + _REPLY_GRACE)
                status, payload = _exchange(sock, cmd, key, value)
            except BaseException as err:
                self._sock = None
                sock.close()
                if isinstance(err, TimeoutError):
                    raise RuntimeError(
                        f"TCPStore: no answer from {self._where()} to "
                        f"{w.COMMAND_NAMES[cmd]} within the timeout "
                        f"(is the master process stuck?)") from err
                if isinstance(err, OSError):
                    raise RuntimeError(
                        f"TCPStore: lost the connection to {self._where()} "
                        f"(has the master process exited?): {err}") from err
                raise
            if status == w.CLOSING:
                self._sock = None
                sock.close()
                raise RuntimeError(self._refusal(payload))
            if status == w.ERROR:
                raise RuntimeError(
                    f"TCPStore: {payload.decode(errors='replace')}")
            return status, payload

    def _key(self, key):
        kb = key_bytes(key, self.limits, "TCPStore")
        if b"\0" in kb:
            raise ValueError(f"TCPStore: keys may not contain NUL, got "
                             f"{key!r}")
        return kb

    def _keys(self, keys):
        if isinstance(keys, str):
            keys = [keys]
        keys = list(keys)
        if len(keys) > self.limits.max_request_keys:
            raise ValueError(f"TCPStore: {len(keys)} keys is more than the "
                             f"store's limit of "
                             f"{self.limits.max_request_keys} for one request "
                             f"(PYGPU_STORE_MAX_REQUEST_KEYS)")
        joined = b"\0".join(self._key(k) for k in keys)
        if len(joined) > self.limits.max_value_bytes:
            raise ValueError(f"TCPStore: {len(joined)} bytes of keys is more "
                             f"than the store's limit of "
                             f"{self.limits.max_value_bytes} for one request")
        return joined

    def _get(self, key):
        status, value = self._request(w.GET, self._key(key))
        return value if status == w.OK else None

    def set(self, key, value):
        self._request(w.SET, self._key(key),
                      value_bytes(value, self.limits, "TCPStore"))

    def add(self, key, amount):
        return int(self._request(w.ADD, self._key(key),
                                 str(int(amount)).encode())[1])

    def check(self, keys):
        return self._request(w.CHECK, self._keys(keys))[1] == b"1"

    def wait(self, keys, timeout=None):
        """Blocks until every key is set; RuntimeError after timeout.  The
        server answers when the last key arrives (no polling)."""
        keys = [keys] if isinstance(keys, str) else list(keys)
        joined = self._keys(keys)
        limit = self._timeout if timeout is None else seconds(timeout)
        if not self._server_waits:
            return super().wait(keys, timeout)
        ms = b"" if not math.isfinite(limit) else \
            str(max(0, math.ceil(limit * 1000))).encode()
        status, payload = self._request(w.WAIT, joined, ms, wait_s=limit)
        if status == w.OK:
            return None
        if status == w.MISSING:  # a server that predates WAIT: poll check
            self._server_waits = False
            return super().wait(keys, timeout)
        missing = [k.decode(errors="replace") for k in w.split_keys(payload)]
        raise RuntimeError(f"store: timed out after {limit:g} s waiting for "
                           f"the keys {missing}")

    def delete_key(self, key):
        return self._request(w.DELETE, self._key(key))[1] == b"1"

    def num_keys(self):
        return int(self._request(w.NUM_KEYS, b"")[1])

    def close(self):
        """Closes the connection; the master also stops its server."""
        with self._lock:
            self._closed = True
            if self._sock is not None:
                self._sock.close()
                self._sock = None
        if self._server is not None:
            self._server.close()
            self._server = None

    def __del__(self):
        try:
            self.close()
        except Exception:  # noqa: BLE001 - interpreter shutdown
            pass
