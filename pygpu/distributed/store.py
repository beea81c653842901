"""Key-value stores for the rendezvous: TCPStore, FileStore, PrefixStore.

A store carries only a few short keys while a process group forms (the
ranks' world sizes, the MPI port name); no tensor data goes through it.
Values are bytes (a str is encoded as UTF-8).  Every blocking call gives
up with a RuntimeError after the store's timeout.

TCPStore: the process with is_master=True serves a small key-value
server on a background thread; every process, the master included,
talks to it over a socket.  One request is one frame:

    u8 command, u32 key length, key, u64 value length, value

and one reply is ``u8 status, u64 length, payload``.  Commands: set, get
(status 1 when the key is missing), add (the value is a decimal integer;
the reply the new total), check (keys separated by NUL: all present?),
delete, num_keys.  wait() and a blocking get() poll check on the client.

FileStore: the same operations on a file shared by the processes,
appending ``key length, key, value length, value`` records under an
exclusive fcntl lock; the last record of a key wins.  The processes
count themselves in and out, and the last one out removes the file.
"""
import datetime
import errno
import os
import socket
import struct
import threading
import time

__all__ = ["Store", "TCPStore", "FileStore", "PrefixStore"]

_SET, _GET, _ADD, _CHECK, _DELETE, _NUM_KEYS = range(6)
_OK, _MISSING = 0, 1
_HEAD = struct.Struct("!BIQ")
_REPLY = struct.Struct("!BQ")
_RECORD = struct.Struct("!IQ")
_DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def _seconds(timeout):
    if timeout is None:
        return _DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def _as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"store values are bytes or str, not "
                    f"{type(value).__name__}")


class Store:
    """The store interface: set, get, add, check, wait, delete_key,
    num_keys, and the timeout used by the blocking calls."""

    def __init__(self, timeout=None):
        self._timeout = _seconds(timeout)

    @property
    def timeout(self):
        return datetime.timedelta(seconds=self._timeout)

    def set_timeout(self, timeout):
        self._timeout = _seconds(timeout)

    def get(self, key):
        """The value of key, waiting for it up to the timeout."""
        self.wait([key])
        value = self._get(key)
        if value is None:
            raise RuntimeError(f"store: key {key!r} was deleted while "
                               f"waiting for it")
        return value

    def wait(self, keys, timeout=None):
        """Blocks until every key is set; RuntimeError after timeout."""
        if isinstance(keys, str):
            keys = [keys]
        limit = self._timeout if timeout is None else _seconds(timeout)
        deadline = time.monotonic() + limit
        pause = 0.001
        while not self.check(keys):
            if time.monotonic() >= deadline:
                missing = [k for k in keys if not self.check([k])]
                raise RuntimeError(
                    f"store: timed out after {limit:g} s waiting for the "
                    f"keys {missing}")
            time.sleep(pause)
            pause = min(pause * 2, 0.05)

    def _get(self, key):  # the value or None, without waiting
        raise NotImplementedError

    def set(self, key, value):
        raise NotImplementedError

    def add(self, key, amount):
        raise NotImplementedError

    def check(self, keys):
        raise NotImplementedError

    def delete_key(self, key):
        raise NotImplementedError

    def num_keys(self):
        raise NotImplementedError

    def close(self):
        """Releases the store's resources (idempotent)."""


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
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("store: connection closed")
        buf += chunk
    return bytes(buf)


class _Server:
    """The master's key-value server: one thread accepting, one thread per
    client connection, one dict under one lock."""

    def __init__(self, host, port):
        self.data = {}
        self.lock = threading.Lock()
        self.sock = socket.create_server((host, port), reuse_port=False,
                                         backlog=128)
        self.port = self.sock.getsockname()[1]
        self.closed = False
        threading.Thread(target=self._accept, daemon=True,
                         name="pygpu-store-server").start()

    def _accept(self):
        while not self.closed:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            threading.Thread(target=self._serve, args=(conn,),
                             daemon=True).start()

    def _serve(self, conn):
        with conn:
            try:
                while True:
                    cmd, klen, vlen = _HEAD.unpack(
                        _recv_exact(conn, _HEAD.size))
                    key = _recv_exact(conn, klen).decode()
                    value = _recv_exact(conn, vlen)
                    status, out = self._handle(cmd, key, value)
                    conn.sendall(_REPLY.pack(status, len(out)) + out)
            except (ConnectionError, OSError, struct.error):
                return

    def _handle(self, cmd, key, value):
        with self.lock:
            if cmd == _SET:
                self.data[key] = value
                return _OK, b""
            if cmd == _GET:
                if key not in self.data:
                    return _MISSING, b""
                return _OK, self.data[key]
            if cmd == _ADD:
                total = int(self.data.get(key, b"0")) + int(value)
                self.data[key] = str(total).encode()
                return _OK, self.data[key]
            if cmd == _CHECK:
                keys = key.split("\0") if key else []
                return _OK, b"1" if all(k in self.data for k in keys) \
                    else b"0"
            if cmd == _DELETE:
                return _OK, b"1" if self.data.pop(key, None) is not None \
                    else b"0"
            if cmd == _NUM_KEYS:
                return _OK, str(len(self.data)).encode()
        return _MISSING, b""

    def close(self):
        self.closed = True
        try:
            self.sock.close()
        except OSError:
            pass


class TCPStore(Store):
    """TCPStore(host_name, port, world_size=None, is_master=False,
    timeout=timedelta(seconds=300), wait_for_workers=True).

    The master serves the keys (port 0: a free port, then in .port); the
    others connect, retrying until the timeout while the master starts.
    With wait_for_workers the master's constructor returns once
    world_size processes have connected."""

    def __init__(self, host_name, port, world_size=None, is_master=False,
                 timeout=_DEFAULT_TIMEOUT, wait_for_workers=True):
        super().__init__(timeout)
        self.host = host_name
        self._server = _Server(host_name, port) if is_master else None
        self.port = self._server.port if is_master else int(port)
        self._lock = threading.Lock()
        self._sock = self._connect()
        self.add("__pygpu_store_clients", 1)
        if is_master and wait_for_workers and world_size:
            n = world_size
            deadline = time.monotonic() + self._timeout
            while int(self._request(_GET, "__pygpu_store_clients")[1]) < n:
                if time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"TCPStore: timed out after {self._timeout:g} s "
                        f"waiting for {n} processes to connect to "
                        f"{host_name}:{self.port}")
                time.sleep(0.01)

    def _connect(self):
        deadline = time.monotonic() + self._timeout
        pause = 0.01
        while True:
            try:
                sock = socket.create_connection((self.host, self.port),
                                                timeout=self._timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                return sock
            except OSError as err:
                if time.monotonic() >= deadline:
                    raise RuntimeError(
                        f"TCPStore: could not reach {self.host}:"
                        f"{self.port} within {self._timeout:g} s: "
                        f"{err}") from err
                time.sleep(pause)
                pause = min(pause * 2, 0.5)

    def _request(self, cmd, key, value=b""):
        kb = key.encode()
        with self._lock:
            if self._sock is None:
                raise RuntimeError("TCPStore: the store is closed")
            try:
                self._sock.sendall(_HEAD.pack(cmd, len(kb), len(value)) +
                                   kb + value)
                status, n = _REPLY.unpack(_recv_exact(self._sock,
                                                      _REPLY.size))
                return status, _recv_exact(self._sock, n)
            except (OSError, ConnectionError) as err:
                raise RuntimeError(
                    f"TCPStore: lost the connection to {self.host}:"
                    f"{self.port} (has the master process exited?): "
                    f"{err}") from err

    def _get(self, key):
        status, value = self._request(_GET, key)
        return value if status == _OK else None

    def set(self, key, value):
        self._request(_SET, key, _as_bytes(value))

    def add(self, key, amount):
        return int(self._request(_ADD, key, str(int(amount)).encode())[1])

    def check(self, keys):
        return self._request(_CHECK, "\0".join(keys))[1] == b"1"

    def delete_key(self, key):
        return self._request(_DELETE, key)[1] == b"1"

    def num_keys(self):
        return int(self._request(_NUM_KEYS, "")[1])

    def close(self):
        with self._lock:
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


# ---------------------------------------------------------------- FileStore

class FileStore(Store):
    """FileStore(file_name, world_size=-1): keys in a file that every
    process opens; the world_size-th process to close it removes it."""

    _USERS = "__pygpu_filestore_users"
    _EXITS = "__pygpu_filestore_exits"

    def __init__(self, file_name, world_size=-1, timeout=_DEFAULT_TIMEOUT):
        super().__init__(timeout)
        self.path = file_name
        self.world_size = world_size
        self._closed = False
        self.add(self._USERS, 1)

    def _locked(self, fn):
        import fcntl
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            return fn(fd)
        finally:
            os.close(fd)  # releases the lock

    @staticmethod
    def _read(fd):
        data = {}
        raw = b""
        os.lseek(fd, 0, os.SEEK_SET)
        while True:
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                break
            raw += chunk
        pos = 0
        while pos + _RECORD.size <= len(raw):
            klen, vlen = _RECORD.unpack_from(raw, pos)
            pos += _RECORD.size
            key = raw[pos:pos + klen].decode()
            pos += klen
            value = raw[pos:pos + vlen]
            pos += vlen
            data[key] = value
        return data

    @staticmethod
    def _append(fd, key, value):
        kb = key.encode()
        os.lseek(fd, 0, os.SEEK_END)
        os.write(fd, _RECORD.pack(len(kb), len(value)) + kb + value)

    def _get(self, key):
        value = self._locked(lambda fd: self._read(fd).get(key))
        return None if value == b"\0deleted" else value

    def set(self, key, value):
        value = _as_bytes(value)
        self._locked(lambda fd: self._append(fd, key, value))

    def add(self, key, amount):
        def op(fd):
            old = self._read(fd).get(key, b"0")
            total = int(old if old != b"\0deleted" else b"0") + int(amount)
            self._append(fd, key, str(total).encode())
            return total
        return self._locked(op)

    def check(self, keys):
        def op(fd):
            data = self._read(fd)
            return all(data.get(k, b"\0deleted") != b"\0deleted"
                       for k in keys)
        return self._locked(op)

    def delete_key(self, key):
        def op(fd):
            present = self._read(fd).get(key, b"\0deleted") != b"\0deleted"
            if present:
                self._append(fd, key, b"\0deleted")
            return present
        return self._locked(op)

    def num_keys(self):
        return self._locked(lambda fd: sum(
            v != b"\0deleted" for v in self._read(fd).values()))

    def close(self):
        """Counts this process out; the world_size-th to leave removes
        the file."""
        if self._closed:
            return
        self._closed = True
        if self.world_size <= 0 or not os.path.exists(self.path):
            return
        try:
            left = self.add(self._EXITS, 1)
            if left >= self.world_size:
                os.unlink(self.path)
        except OSError as err:
            if err.errno != errno.ENOENT:
                raise
