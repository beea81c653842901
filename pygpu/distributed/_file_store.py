"""FileStore: the store's operations on a file that the processes share.

The file is a header, ``8s magic b"PYGPUFS\\0", u32 format version, u64
file id``, then records ``c kind (b"S" set, b"D" delete), u32 key length,
u64 value length, u32 CRC-32 of kind+key+value, key, value`` appended
under an exclusive flock; the last record of a key wins.  Each process
keeps what it has read and reads only the records appended since (the
file id tells it when the file was rewritten).  When the file grows past
compact_ratio times what its live records take (and past
compact_min_bytes), the process holding the lock writes the live records
to a new file and renames it over the old one; a process that then gets
the lock on the old file sees that the path names another file and opens
it again.

A file that does not start with the magic, that has another format
version, or whose records are cut short or fail their checksum raises a
RuntimeError naming the file and what is wrong with it.  The processes
count themselves in and out: a file that already counts world_size
processes when one more arrives is left over from an earlier run and
refused, and the world_size-th process to close the store removes the
file.
"""
import errno
import logging
import os
import secrets
import struct
import zlib

from ._store_common import (DEFAULT_TIMEOUT, StoreLimits, Store, key_bytes,
                            parse_int, value_bytes)

log = logging.getLogger("pygpu.distributed.store")

MAGIC = b"PYGPUFS\0"
VERSION = 1
HEADER = struct.Struct("!8sIQ")
RECORD = struct.Struct("!cIQI")
_SET, _DELETE = b"S", b"D"


class _State:
    """What a process knows of the file: its id, how far it has read, the
    live keys and the bytes their records take."""

    __slots__ = ("file_id", "offset", "data", "live")

    def __init__(self, file_id, offset):
        self.file_id = file_id
        self.offset = offset
        self.data = {}
        self.live = 0

    def apply(self, kind, key, value):
        old = self.data.pop(key, None)
        if old is not None:
            self.live -= RECORD.size + len(key) + len(old)
        if kind == _SET:
            self.data[key] = value
            self.live += RECORD.size + len(key) + len(value)


def _record(kind, key, value):
    crc = zlib.crc32(value, zlib.crc32(key, zlib.crc32(kind)))
    return RECORD.pack(kind, len(key), len(value), crc) + key + value


def _pread_all(fd, n, offset):
    parts = []
    while n > 0:
        chunk = os.pread(fd, n, offset)
        if not chunk:
            break
        parts.append(chunk)
        n -= len(chunk)
        offset += len(chunk)
    return b"".join(parts)


def _pwrite_all(fd, data, offset):
    view = memoryview(data)
    while view:
        n = os.pwrite(fd, view, offset)
        view = view[n:]
        offset += n


class FileStore(Store):
    """FileStore(file_name, world_size=-1, timeout=timedelta(seconds=300)):
    keys in a file that every process opens; the world_size-th process to
    close it removes it.  Limits (keyword ``limits`` or the environment,
    see StoreLimits) bound keys, values, the key count and the bytes held."""

    _USERS = "__pygpu_filestore_users"
    _EXITS = "__pygpu_filestore_exits"
    compact_min_bytes = 256 * 1024
    compact_ratio = 4

    def __init__(self, file_name, world_size=-1, timeout=DEFAULT_TIMEOUT, *,
                 limits=None):
        super().__init__(timeout)
        self.path = os.fspath(file_name)
        self.world_size = world_size
        self.limits = limits if limits is not None else \
            StoreLimits.from_env()
        self._state = None
        self._closed = False
        self.compactions = 0  # rewrites this process made
        self.relocks = 0      # locks taken on a file renamed over meanwhile
        self._locked(self._join)

    # ------------------------------------------------------------ the file

    def _locked(self, fn):
        """fn(fd, state) under the file's exclusive lock, on the file the
        path names once the lock is held."""
        import fcntl
        for _ in range(1000):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX)
                st = os.fstat(fd)
                try:
                    now = os.stat(self.path)
                except FileNotFoundError:
                    continue
                if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                    self.relocks += 1
                    continue  # rewritten or removed while we waited
                return fn(fd, self._load(fd, st.st_size))
            finally:
                os.close(fd)  # releases the lock
        raise RuntimeError(f"FileStore: {self.path} kept being replaced "
                           f"while this process tried to lock it")

    def _problem(self, what):
        return RuntimeError(f"FileStore: {self.path} {what}")

    def _corrupt(self, what):
        return self._problem(
            f"is corrupt: {what} (a process died while writing it, the "
            f"disk filled up, or another program wrote to it); remove it "
            f"and start the processes again")

    def _load(self, fd, size):
        if size == 0:
            state = _State(secrets.randbits(64), HEADER.size)
            _pwrite_all(fd, HEADER.pack(MAGIC, VERSION, state.file_id), 0)
            self._state = state
            return state
        head = _pread_all(fd, HEADER.size, 0)
        if not head.startswith(MAGIC[:len(head)]):
            raise self._problem(
                f"is not a pygpu FileStore file (it starts with "
                f"{head[:len(MAGIC)]!r}; a pygpu FileStore file starts with "
                f"{MAGIC!r}); remove it or give the store another path")
        if len(head) < HEADER.size:
            raise self._corrupt(f"its header is cut short at {size} bytes")
        _, version, file_id = HEADER.unpack(head)
        if version != VERSION:
            raise self._problem(
                f"was written in FileStore format {version}, and this pygpu "
                f"reads format {VERSION} only (a file from an incompatible "
                f"pygpu version); remove it or give the store another path")
        state = self._state
        if state is None or state.file_id != file_id or state.offset > size:
            state = _State(file_id, HEADER.size)
        self._state = None  # until the new records have been read
        self._parse(state, _pread_all(fd, size - state.offset, state.offset))
        self._state = state
        return state

    def _parse(self, state, raw):
        pos, base = 0, state.offset
        while pos < len(raw):
            at = base + pos
            if len(raw) - pos < RECORD.size:
                raise self._corrupt(f"it ends in a cut-short record at byte "
                                    f"{at}")
            kind, klen, vlen, crc = RECORD.unpack_from(raw, pos)
            if kind not in (_SET, _DELETE):
                raise self._corrupt(f"the record at byte {at} has the "
                                    f"unknown kind {kind!r}")
            end = pos + RECORD.size + klen + vlen
            if end > len(raw):
                raise self._corrupt(
                    f"the record at byte {at} declares {klen + vlen} bytes "
                    f"and only {len(raw) - pos - RECORD.size} follow")
            key = raw[pos + RECORD.size:pos + RECORD.size + klen]
            value = raw[pos + RECORD.size + klen:end]
            if zlib.crc32(value, zlib.crc32(key, zlib.crc32(kind))) != crc:
                raise self._corrupt(f"the record at byte {at} fails its "
                                    f"checksum")
            state.apply(kind, key, value)
            pos = end
        state.offset = base + pos

    def _append(self, fd, state, kind, key, value=b""):
        rec = _record(kind, key, value)
        try:
            _pwrite_all(fd, rec, state.offset)
        except OSError:
            try:  # leave no cut-short record behind
                os.ftruncate(fd, state.offset)
            except OSError:
                pass
            raise
        state.apply(kind, key, value)
        state.offset += len(rec)
        if state.offset > max(self.compact_min_bytes,
                              self.compact_ratio * (HEADER.size +
                                                    state.live)):
            self._compact(fd, state)

    def _compact(self, fd, state):
        """Writes the live records to a new file renamed over the path;
        on failure the file stays as it is."""
        file_id = secrets.randbits(64)
        parts = [HEADER.pack(MAGIC, VERSION, file_id)]
        parts += [_record(_SET, k, v) for k, v in state.data.items()]
        data = b"".join(parts)
        folder, name = os.path.split(os.path.abspath(self.path))
        tmp = os.path.join(folder, f".{name}.{os.getpid()}."
                                   f"{secrets.token_hex(4)}.tmp")
        try:
            out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                          os.O_CLOEXEC, 0o600)
            try:
                os.fchmod(out, os.fstat(fd).st_mode & 0o7777)
                _pwrite_all(out, data, 0)
                os.fsync(out)
            finally:
                os.close(out)
            os.replace(tmp, self.path)
        except OSError as err:
            log.debug("FileStore: could not compact %s: %s", self.path, err)
            try:
                os.unlink(tmp)
            except OSError:
                pass
            return
        state.file_id = file_id
        state.offset = len(data)
        self.compactions += 1

    # ------------------------------------------------------------ the store

    def _join(self, fd, state):
        key = self._USERS.encode()
        users = parse_int(state.data.get(key, b"0")) or 0
        if 0 < self.world_size <= users:
            raise self._problem(
                f"already counts {users} processes for a world of "
                f"{self.world_size}: it is left over from an earlier run (or "
                f"the processes disagree on world_size); remove it, or use "
                f"a new file for each run")
        self._append(fd, state, _SET, key, str(users + 1).encode())

    def _key(self, key):
        return key_bytes(key, self.limits, "FileStore")

    def _get(self, key):
        kb = self._key(key)
        return self._locked(lambda fd, state: state.data.get(kb))

    def set(self, key, value):
        kb = self._key(key)
        vb = value_bytes(value, self.limits, "FileStore")
        self._locked(lambda fd, state: self._put(fd, state, kb, vb))

    def _put(self, fd, state, key, value):
        old = state.data.get(key)
        if old is None and len(state.data) >= self.limits.max_keys:
            raise RuntimeError(
                f"FileStore: the store holds {len(state.data)} keys, its "
                f"limit (PYGPU_STORE_MAX_KEYS); the new key "
                f"{key.decode(errors='replace')!r} was refused")
        held = state.live - len(state.data) * RECORD.size
        grow = len(value) - len(old) if old is not None \
            else len(key) + len(value)
        if held + grow > self.limits.max_total_bytes:
            raise RuntimeError(
                f"FileStore: the store holds {held} bytes; "
                f"{key.decode(errors='replace')!r} would take it past its "
                f"limit of {self.limits.max_total_bytes} bytes "
                f"(PYGPU_STORE_MAX_TOTAL_BYTES)")
        self._append(fd, state, _SET, key, value)

    def add(self, key, amount):
        kb = self._key(key)
        amount = int(amount)

        def op(fd, state):
            current = parse_int(state.data.get(kb, b"0"))
            if current is None:
                raise RuntimeError(f"FileStore: add: the value of key "
                                   f"{key!r} is not an integer")
            total = current + amount
            self._put(fd, state, kb, str(total).encode())
            return total
        return self._locked(op)

    def check(self, keys):
        kbs = [self._key(k) for k in keys]
        return self._locked(
            lambda fd, state: all(k in state.data for k in kbs))

    def delete_key(self, key):
        kb = self._key(key)

        def op(fd, state):
            if kb not in state.data:
                return False
            self._append(fd, state, _DELETE, kb)
            return True
        return self._locked(op)

    def num_keys(self):
        return self._locked(lambda fd, state: len(state.data))

    def close(self):
        """Counts this process out; the world_size-th to leave removes
        the file."""
        if self._closed:
            return
        self._closed = True
        if self.world_size <= 0 or not os.path.exists(self.path):
            return

        def op(fd, state):
            key = self._EXITS.encode()
            left = (parse_int(state.data.get(key, b"0")) or 0) + 1
            self._append(fd, state, _SET, key, str(left).encode())
            if left >= self.world_size:
                os.unlink(self.path)
        try:
            self._locked(op)
        except OSError as err:
            if err.errno != errno.ENOENT:
                raise
