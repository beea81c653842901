"""TCPStore's server: one thread running one selectors loop over
non-blocking sockets, with a read buffer and a write queue per connection.

Nothing a client sends can stop the loop: a frame it cannot trust (an
unknown command, a length over the limits, any command before the token
when one is required) gets a CLOSING reply and only that connection is
closed; a request it can refuse (a key over the key count, an add to a
value that is not an integer) gets an ERROR reply.  accept() failing for
want of file descriptors pauses accepting for a moment; the listener stays
open and the waiting connections stay in its backlog.  Lengths are checked
against the limits before a byte of the body is kept, so a declared length
never turns into an allocation.  A wait is kept in the loop (the key ->
waiting connections map and a heap of deadlines) and answered when its last
key arrives or its deadline passes.  Diagnostics go to the
``pygpu.distributed.store`` logger at debug level only.
"""
import collections
import errno
import heapq
import hmac
import itertools
import logging
import math
import selectors
import socket
import threading
import time

from . import _store_common as w

log = logging.getLogger("pygpu.distributed.store")

_LISTENER, _WAKE = object(), object()
_BACKLOG = 16384          # the kernel caps it at net.core.somaxconn
_RECV_BYTES = 256 * 1024
_ACCEPT_BATCH = 256       # accepts per loop turn, so that clients get served
_ACCEPT_BACKOFF = 0.1     # seconds without accepting after EMFILE and kin
_OUT_HIGH = 1 << 20       # unsent reply bytes past which a connection is
                          # not read
_PARKED_MAX = 64 * 1024   # bytes a waiting connection may send meanwhile
_HEAP_SLACK = 1024        # deadlines of answered waits kept before a rebuild
_ACCEPT_RETRY = frozenset(filter(None, (
    errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.EINTR,
    getattr(errno, "ENETDOWN", None), getattr(errno, "EHOSTUNREACH", None))))


class _Conn:
    __slots__ = ("sock", "peer", "rbuf", "out", "out_off", "out_len",
                 "frames", "authed", "born", "frame_t", "last_out",
                 "missing", "wait_seq", "closing", "events")

    def __init__(self, sock, peer, now):
        self.sock = sock
        self.peer = peer
        self.rbuf = bytearray()
        self.out = collections.deque()
        self.out_off = self.out_len = 0
        self.frames = 0
        self.authed = False
        self.born = self.frame_t = self.last_out = now
        self.missing = None     # the keys a pending wait still lacks
        self.wait_seq = None    # its entry in the deadline heap
        self.closing = None     # why the connection closes once flushed
        self.events = 0


def _fail(what, err):
    return RuntimeError(f"TCPStore: {what}: {err}")


class StoreServer:
    """The key-value table and the loop serving it.  close() stops the
    loop and closes every socket; the constructor either returns a
    serving server or raises with nothing left open."""

    def __init__(self, host, port, limits, token):
        self.limits = limits
        self.token = token
        self.data = {}
        self.nbytes = 0          # keys and values held, in bytes
        self.stats = collections.Counter()
        self._conns = set()
        self._waiters = {}       # key -> connections waiting for it
        self._deadlines = []     # (deadline, seq, connection)
        self._timed_waits = 0    # the pending waits with a deadline
        self._seq = itertools.count()
        self._ready = []         # connections with buffered frames to parse
        self._paused_until = None  # accepting paused until then (inf: a slot)
        self._stop = False
        self._next_reap = 0.0
        self._release_lock = threading.Lock()
        self._lsock = self._sel = self._wake_r = self._wake_w = None
        self._thread = None
        try:
            try:
                self._lsock = socket.create_server((host, port),
                                                   backlog=_BACKLOG)
            except OSError as err:
                raise _fail(f"the server could not listen on {host}:{port}",
                            err) from err
            self.port = self._lsock.getsockname()[1]
            try:
                self._lsock.setblocking(False)
                self._sel = selectors.DefaultSelector()
                self._wake_r, self._wake_w = socket.socketpair()
                self._wake_r.setblocking(False)
                self._wake_w.setblocking(False)
                self._sel.register(self._lsock, selectors.EVENT_READ,
                                   _LISTENER)
                self._sel.register(self._wake_r, selectors.EVENT_READ, _WAKE)
            except OSError as err:
                raise _fail("could not set up the server's loop", err) \
                    from err
            self._thread = threading.Thread(
                target=self._run, daemon=True,
                name=f"pygpu-store-server:{self.port}")
            try:
                self._thread.start()
            except RuntimeError as err:
                self._thread = None
                raise _fail("could not start the server's thread", err) \
                    from err
        except BaseException:
            self._release()
            raise

    # ------------------------------------------------------------ lifetime

    def close(self):
        """Stops the loop and closes every socket (idempotent)."""
        self._stop = True
        try:
            self._wake_w.send(b"x")
        except (OSError, AttributeError):
            pass
        thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join(10)
        self._release()

    def _release(self):
        with self._release_lock:
            for c in list(self._conns):
                self._drop(c, None)
            for name in ("_sel", "_lsock", "_wake_r", "_wake_w"):
                obj = getattr(self, name)
                setattr(self, name, None)
                if obj is not None:
                    try:
                        obj.close()
                    except OSError:
                        pass

    def _run(self):
        try:
            while not self._stop:
                try:
                    self._turn()
                except Exception:  # noqa: BLE001 - the loop never dies
                    if self._stop:
                        break
                    log.debug("store server: error in the loop",
                              exc_info=True)
                    time.sleep(0.01)
        finally:
            self._release()

    # ------------------------------------------------------------ the loop

    def _turn(self):
        sel = self._sel
        if sel is None:
            self._stop = True
            return
        events = sel.select(self._timeout(time.monotonic()))
        for key, mask in events:
            tag = key.data
            if tag is _LISTENER:
                self._accept()
            elif tag is _WAKE:
                try:
                    while self._wake_r.recv(4096):
                        pass
                except OSError:
                    pass
            else:
                self._guarded(self._service, tag, mask)
        while self._ready:
            self._guarded(self._process, self._ready.pop())
        self._tick(time.monotonic())

    def _guarded(self, fn, c, *args):
        """Runs fn on one connection; any error closes that one only."""
        if c.sock is None:
            return
        try:
            fn(c, *args)
        except Exception as err:  # noqa: BLE001
            log.debug("store server: error serving %s", c.peer,
                      exc_info=True)
            self._drop(c, f"internal error: {err!r}")

    def _timeout(self, now):
        t = math.inf
        if self._deadlines:
            t = self._deadlines[0][0] - now
        if self._paused_until is not None:
            t = min(t, self._paused_until - now)
        if self._conns:
            t = min(t, self._next_reap - now)
        return None if t == math.inf else max(0.0, t)

    def _tick(self, now):
        if self._paused_until is not None and now >= self._paused_until:
            self._resume_accept()
        while self._deadlines and self._deadlines[0][0] <= now:
            _, seq, c = heapq.heappop(self._deadlines)
            if c.sock is not None and c.wait_seq == seq:
                self._guarded(self._time_out_wait, c)
        if now >= self._next_reap:
            self._next_reap = now + min(1.0, self.limits.idle_timeout / 4)
            self._reap(now)

    def _reap(self, now):
        """Closes connections that stalled: mid-frame, silent since the
        accept, or not reading their replies, for idle_timeout."""
        limit = self.limits.idle_timeout
        for c in list(self._conns):
            if c.out_len and now - c.last_out > limit:
                why = "it does not read its replies"
            elif c.missing is None and c.rbuf and now - c.frame_t > limit:
                why = "it stopped in the middle of a frame"
            elif not c.frames and not c.rbuf and now - c.born > limit:
                why = "it sent nothing"
            else:
                continue
            self.stats["reaped"] += 1
            self._drop(c, f"{why} for {limit:g} s")

    # ------------------------------------------------------------ accepting

    def _accept(self):
        for _ in range(_ACCEPT_BATCH):
            if len(self._conns) >= self.limits.max_connections:
                self._pause_accept(math.inf, "at the connection limit")
                return
            try:
                sock, peer = self._lsock.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as err:
                self.stats["accept_errors"] += 1
                if err.errno in _ACCEPT_RETRY:
                    log.debug("store server: accept: %s", err)
                    continue
                self._pause_accept(time.monotonic() + _ACCEPT_BACKOFF, err)
                return
            try:
                sock.setblocking(False)
                w.tune(sock)
                c = _Conn(sock, peer, time.monotonic())
                self._sel.register(sock, selectors.EVENT_READ, c)
            except Exception as err:  # noqa: BLE001
                log.debug("store server: could not set up a connection "
                          "from %s: %s", peer, err)
                sock.close()
                continue
            c.events = selectors.EVENT_READ
            self._conns.add(c)
            self.stats["accepted"] += 1

    def _pause_accept(self, until, why):
        log.debug("store server: not accepting %s (%s)",
                  "until a connection closes" if until == math.inf
                  else f"for {_ACCEPT_BACKOFF:g} s", why)
        self.stats["accept_pauses"] += 1
        if self._paused_until is None:
            try:
                self._sel.unregister(self._lsock)
            except (KeyError, ValueError, OSError):
                pass
        self._paused_until = until

    def _resume_accept(self):
        self._paused_until = None
        if self._stop or self._sel is None:
            return
        try:
            self._sel.register(self._lsock, selectors.EVENT_READ, _LISTENER)
        except (KeyError, ValueError, OSError) as err:
            log.debug("store server: could not resume accepting: %s", err)
            self._paused_until = time.monotonic() + _ACCEPT_BACKOFF

    # ------------------------------------------------------- one connection

    def _service(self, c, mask):
        if mask & selectors.EVENT_WRITE:
            self._flush(c)
        if mask & selectors.EVENT_READ and c.sock is not None:
            self._read(c)

    def _read(self, c):
        try:
            data = c.sock.recv(_RECV_BYTES)
        except (BlockingIOError, InterruptedError):
            return
        except OSError as err:
            self._drop(c, f"recv: {err}")
            return
        if not data:
            self._drop(c, None)
            return
        if c.closing:
            return  # what follows a refused frame is not read
        if not c.rbuf:
            c.frame_t = time.monotonic()
        c.rbuf += data
        if c.missing is not None:
            if len(c.rbuf) > _PARKED_MAX:
                self._drop(c, "it kept sending while waiting")
            return
        self._process(c)

    def _process(self, c):
        head = w.HEAD.size
        while c.sock is not None and c.closing is None and \
                c.missing is None and c.out_len < _OUT_HIGH:
            buf = c.rbuf
            if len(buf) < head:
                break
            cmd, klen, vlen = w.HEAD.unpack_from(buf)
            problem = self._check_head(c, cmd, klen, vlen)
            if problem:
                self._refuse(c, problem)
                return
            end = head + klen + vlen
            if len(buf) < end:
                break
            key = bytes(buf[head:head + klen])
            value = bytes(buf[head + klen:end])
            del buf[:end]
            c.frames += 1
            if buf:
                c.frame_t = time.monotonic()
            self._dispatch(c, cmd, key, value)
        if c.sock is not None:
            self._update_events(c)

    def _check_head(self, c, cmd, klen, vlen):
        if cmd >= len(w.COMMAND_NAMES):
            return f"unknown command {cmd} (is this a TCPStore client?)"
        if self.token and not c.authed and cmd != w.AUTH:
            return (f"this store requires a token: set {w.TOKEN_ENV} to the "
                    f"same value in every process")
        name = w.COMMAND_NAMES[cmd]
        kmax, vmax = w.key_limit(self.limits, cmd), w.value_limit(
            self.limits, cmd)
        if klen > kmax:
            if cmd in (w.CHECK, w.WAIT):
                return (f"{name}: {klen} bytes of keys is more than the "
                        f"store's limit of {kmax} bytes for one request")
            if kmax:
                return (f"{name}: a key of {klen} bytes is more than the "
                        f"store's limit of {kmax} bytes "
                        f"(PYGPU_STORE_MAX_KEY_BYTES)")
            return f"{name}: malformed frame (a key of {klen} bytes)"
        if vlen > vmax:
            if cmd == w.SET:
                return (f"set: a value of {vlen} bytes is more than the "
                        f"store's limit of {vmax} bytes "
                        f"(PYGPU_STORE_MAX_VALUE_BYTES)")
            return (f"{name}: malformed frame (a value of {vlen} bytes, "
                    f"at most {vmax})")
        return None

    def _dispatch(self, c, cmd, key, value):
        if cmd == w.AUTH:
            if self.token and not hmac.compare_digest(value, self.token):
                self.stats["bad_tokens"] += 1
                self._refuse(c, f"wrong token ({w.TOKEN_ENV} differs "
                                f"between the processes)")
                return
            c.authed = True
            self._reply(c, w.OK, b"")
        elif cmd == w.SET:
            problem = self._put(key, value)
            self._reply(c, *((w.ERROR, problem.encode()) if problem
                             else (w.OK, b"")))
        elif cmd == w.GET:
            found = self.data.get(key)
            self._reply(c, *((w.MISSING, b"") if found is None
                             else (w.OK, found)))
        elif cmd == w.ADD:
            self._add(c, key, value)
        elif cmd in (w.CHECK, w.WAIT):
            keys = w.split_keys(key)
            if len(keys) > self.limits.max_request_keys:
                self._reply(c, w.ERROR, (
                    f"{w.COMMAND_NAMES[cmd]}: {len(keys)} keys is more than "
                    f"the store's limit of {self.limits.max_request_keys} "
                    f"keys for one request").encode())
            elif cmd == w.CHECK:
                present = all(k in self.data for k in keys)
                self._reply(c, w.OK, b"1" if present else b"0")
            else:
                self._wait(c, keys, value)
        elif cmd == w.DELETE:
            old = self.data.pop(key, None)
            if old is not None:
                self.nbytes -= len(key) + len(old)
            self._reply(c, w.OK, b"0" if old is None else b"1")
        else:  # NUM_KEYS
            self._reply(c, w.OK, str(len(self.data)).encode())

    # ------------------------------------------------------------ the table

    def _put(self, key, value):
        """Stores key = value and wakes its waiters; a message when the
        store's limits refuse it."""
        old = self.data.get(key)
        if old is None and len(self.data) >= self.limits.max_keys:
            self.stats["refused"] += 1
            return (f"the store holds {len(self.data)} keys, its limit "
                    f"(PYGPU_STORE_MAX_KEYS); the new key {_show(key)} was "
                    f"refused")
        grow = len(value) - len(old) if old is not None \
            else len(key) + len(value)
        if self.nbytes + grow > self.limits.max_total_bytes:
            self.stats["refused"] += 1
            return (f"the store holds {self.nbytes} bytes; {_show(key)} "
                    f"would take it past its limit of "
                    f"{self.limits.max_total_bytes} bytes "
                    f"(PYGPU_STORE_MAX_TOTAL_BYTES)")
        self.data[key] = value
        self.nbytes += grow
        waiting = self._waiters.pop(key, None)
        for other in waiting or ():
            other.missing.discard(key)
            if not other.missing:
                self._end_wait(other, w.OK, b"1")
        return None

    def _add(self, c, key, value):
        amount = w.parse_int(value)
        if amount is None:
            self._reply(c, w.ERROR, f"add: the amount {_show(value)} is not "
                                    f"a decimal integer".encode())
            return
        current = w.parse_int(self.data.get(key, b"0"))
        if current is None:
            self._reply(c, w.ERROR, f"add: the value of key {_show(key)} is "
                                    f"not an integer".encode())
            return
        total = current + amount
        if not w.INT64_MIN <= total <= w.INT64_MAX:
            self._reply(c, w.ERROR, f"add: {current} + {amount} overflows "
                                    f"int64 (key {_show(key)})".encode())
            return
        out = str(total).encode()
        problem = self._put(key, out)
        self._reply(c, *((w.ERROR, problem.encode()) if problem
                         else (w.OK, out)))

    def _wait(self, c, keys, value):
        if value:
            ms = w.parse_int(value)
            if ms is None or ms < 0:
                self._reply(c, w.ERROR, f"wait: the timeout {_show(value)} "
                                        f"is not a number of milliseconds"
                                        .encode())
                return
        missing = {k for k in keys if k not in self.data}
        if not missing:
            self._reply(c, w.OK, b"1")
            return
        c.missing = missing
        for k in missing:
            self._waiters.setdefault(k, set()).add(c)
        if value:
            c.wait_seq = next(self._seq)
            self._timed_waits += 1
            heapq.heappush(self._deadlines,
                           (time.monotonic() + ms / 1000.0, c.wait_seq, c))
            if len(self._deadlines) > 2 * self._timed_waits + _HEAP_SLACK:
                # the entries of waits answered early, until their deadline
                self._deadlines = [e for e in self._deadlines
                                   if e[2].wait_seq == e[1]]
                heapq.heapify(self._deadlines)

    def _time_out_wait(self, c):
        missing = sorted(c.missing)
        self._forget_wait(c)
        self._end_wait(c, w.TIMEOUT, b"\0".join(missing))

    def _forget_wait(self, c):
        for k in c.missing or ():
            waiting = self._waiters.get(k)
            if waiting is not None:
                waiting.discard(c)
                if not waiting:
                    del self._waiters[k]

    def _end_wait(self, c, status, payload):
        if c.wait_seq is not None:
            self._timed_waits -= 1
        c.missing = None
        c.wait_seq = None
        self._reply(c, status, payload)
        if c.rbuf and c.sock is not None:
            self._ready.append(c)

    # ------------------------------------------------------------ writing

    def _refuse(self, c, message):
        log.debug("store server: refused a frame from %s: %s", c.peer,
                  message)
        self.stats["refused"] += 1
        c.closing = message
        c.rbuf = bytearray()
        self._reply(c, w.CLOSING, message.encode())

    def _reply(self, c, status, payload):
        if c.sock is None:
            return
        head = w.REPLY.pack(status, len(payload))
        if not c.out_len:
            c.last_out = time.monotonic()
        if len(payload) <= 64 * 1024:
            c.out.append(head + payload)
        else:
            c.out.append(head)
            c.out.append(payload)
        c.out_len += len(head) + len(payload)
        self._flush(c)

    def _flush(self, c):
        while c.out:
            chunk = c.out[0]
            try:
                n = c.sock.send(memoryview(chunk)[c.out_off:])
            except (BlockingIOError, InterruptedError):
                break
            except OSError as err:
                self._drop(c, f"send: {err}")
                return
            c.last_out = time.monotonic()
            c.out_off += n
            c.out_len -= n
            if c.out_off == len(chunk):
                c.out.popleft()
                c.out_off = 0
        if c.closing is not None and not c.out:
            self._drop(c, c.closing)
            return
        if not c.out and c.rbuf and c.missing is None and \
                not c.events & selectors.EVENT_READ:
            self._ready.append(c)  # frames held back while replies piled up
        self._update_events(c)

    def _update_events(self, c):
        want = 0
        if c.closing is None and c.out_len < _OUT_HIGH:
            want = selectors.EVENT_READ
        if c.out:
            want |= selectors.EVENT_WRITE
        if want != c.events:
            self._sel.modify(c.sock, want, c)
            c.events = want

    def _drop(self, c, why):
        sock, c.sock = c.sock, None
        if sock is None:
            return
        if why:
            log.debug("store server: closed the connection from %s: %s",
                      c.peer, why)
        try:
            if self._sel is not None:
                self._sel.unregister(sock)
        except (KeyError, ValueError, OSError):
            pass
        try:
            sock.close()
        except OSError:
            pass
        self._conns.discard(c)
        self._forget_wait(c)
        if c.wait_seq is not None:
            self._timed_waits -= 1
        c.missing = c.wait_seq = None
        c.rbuf = bytearray()
        c.out.clear()
        c.out_len = 0
        if self._paused_until == math.inf:
            self._resume_accept()


def _show(raw, limit=64):
    text = raw[:limit].decode("utf-8", "replace")
    return repr(text + ("..." if len(raw) > limit else ""))
