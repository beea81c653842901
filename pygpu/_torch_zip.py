"""The zip container of torch's checkpoints, written and read without
torch: uncompressed records under one top folder, each record's data
starting on a 64-byte boundary of the file (a padding extra field "FB",
as torch pads them), a data descriptor after each record's data (its
CRC-32 is computed on a second thread while the data is written), and
zip64 end records, as torch writes them.

The reader takes the central directory from Python's zipfile module and
reads each record's bytes itself, straight into their final buffer (or
maps them): it accepts only stored records, whose declared sizes must lie
inside the file, so no record can ask for more memory than the file
holds; each record's local header must name it, and the storage records
read together cannot hold more bytes than the file."""
import mmap
import os
import struct
import zipfile
import zlib

import numpy as np

from . import _C
from ._serial_common import BadFile, not_the_file

ALIGN = 64
_LOCAL = struct.Struct("<IHHHHHIIIHH")      # 30 bytes
_CENTRAL = struct.Struct("<IHHHHHHIIIHHHHHII")  # 46 bytes
_FLAGS = 0x0808  # bit 3: a data descriptor follows; bit 11: UTF-8 names
_DOS_DATE = (0 << 9) | (1 << 5) | 1  # 1980-01-01, zip's earliest
_BIG = 0xFFFFFFFF
_CHUNK = 64 << 20  # bytes a write hands the kernel at once
# With CRC-32s, a record goes out in steps small enough to stay in the
# cache between the checksum's read and the write's copy.
_CRC_STEP = 512 << 10
# The carry-less multiply's CRC-32 (cpu/cpu_crc32.c), where the CPU has it:
# zlib's table-driven one runs at a third of its speed or less.
_crc32 = _C._crc32 if _C._crc32_fast() else zlib.crc32


class Writer:
    """Writes records to the binary file f, which need not be seekable;
    crc32=False writes 0 for every record's CRC-32, as torch does after
    torch.serialization.set_crc32_options(False) (torch.load does not
    check it; zip tools will)."""

    def __init__(self, f, crc32=True):
        self.f = f
        self.crc32 = crc32
        self.pos = 0
        self.entries = []

    def _write(self, b):
        self.f.write(b)
        self.pos += len(b)

    def add(self, name, data):
        """Adds the record name (a str) holding data (bytes or a 1-d
        contiguous NumPy array), its data 64-byte aligned in the file."""
        view = memoryview(data).cast("B")
        size = view.nbytes
        raw_name = name.encode("utf-8")
        offset = self.pos
        zip64 = size >= _BIG
        extra = struct.pack("<HHQQ", 1, 16, 0, 0) if zip64 else b""
        # the "FB" field: 4 bytes of header and the padding
        end = offset + _LOCAL.size + len(raw_name) + len(extra) + 4
        pad = (-end) % ALIGN
        extra += struct.pack("<HH", 0x4246, pad) + b"\0" * pad
        self._write(_LOCAL.pack(
            0x04034B50, 45 if zip64 else 20, _FLAGS, 0, 0, _DOS_DATE, 0,
            _BIG if zip64 else 0, _BIG if zip64 else 0, len(raw_name),
            len(extra)))
        self._write(raw_name)
        self._write(extra)
        crc = 0
        step = _CRC_STEP if self.crc32 else _CHUNK
        for i in range(0, size, step):
            part = view[i:i + step]
            if self.crc32:
                crc = _crc32(part, crc)
            self._write(part)
        if zip64:
            self._write(struct.pack("<IIQQ", 0x08074B50, crc, size, size))
        else:
            self._write(struct.pack("<IIII", 0x08074B50, crc, size, size))
        self.entries.append((raw_name, offset, crc, size))

    def close(self):
        """Writes the central directory and the end records."""
        start = self.pos
        for raw_name, offset, crc, size in self.entries:
            big = [v for v in (size, size) if v >= _BIG]
            if offset >= _BIG:
                big.append(offset)
            extra = struct.pack(f"<HH{len(big)}Q", 1, 8 * len(big), *big) \
                if big else b""
            self._write(_CENTRAL.pack(
                0x02014B50, 45, 45 if big else 20, _FLAGS, 0, 0, _DOS_DATE,
                crc, min(size, _BIG), min(size, _BIG), len(raw_name),
                len(extra), 0, 0, 0, 0, min(offset, _BIG)))
            self._write(raw_name)
            self._write(extra)
        n, cd_size, end64 = len(self.entries), self.pos - start, self.pos
        self._write(struct.pack("<IQHHIIQQQQ", 0x06064B50, 44, 45, 45, 0, 0,
                                n, n, cd_size, start))
        self._write(struct.pack("<IIQI", 0x07064B50, 0, end64, 1))
        self._write(struct.pack("<IHHHHIIH", 0x06054B50, 0, 0,
                                min(n, 0xFFFF), min(n, 0xFFFF),
                                min(cd_size, _BIG), min(start, _BIG), 0))


_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
# Below this, buffers come from the C heap: pygpu raises glibc's mmap
# threshold to 32 MiB at import (csrc/cpu/cpu_malloc.c), so the memory of a
# checkpoint loaded before is reused, with its pages already in.
_HEAP_BUFFER = 32 << 20


def new_buffer(size):
    """A new uint8 array of size bytes to read into.  Up to 32 MiB, from the
    heap (NumPy): a checkpoint loaded again reuses the memory of the one
    before instead of faulting fresh pages in (16 tensors of 8 MiB: 23-25
    ms a load against 60-66 with a fresh map each, torch 28-36, on the
    2-core test machine; a first load 45-130 against 62-87).  A larger one
    is an anonymous map populated when made: the kernel supplies its pages
    in one pass instead of one fault per page as the read touches them
    (and without the huge-page compaction that NumPy's large arrays can
    stall on), which makes reading a big checkpoint several times
    faster."""
    if size < _HEAP_BUFFER or not _POPULATE:
        return np.empty(size, np.uint8)
    try:
        m = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE |
                      mmap.MAP_ANONYMOUS | _POPULATE)
    except OSError:
        raise MemoryError(f"cannot map {size} bytes") from None
    return np.frombuffer(m, np.uint8)


def bad_archive(msg):
    return BadFile(f"pygpu.load: malformed checkpoint archive: {msg}")


class Reader:
    """The records of a torch zip checkpoint in the seekable binary file
    f: names relative to the top folder, data offsets checked against the
    file's size."""

    def __init__(self, f):
        self.f = f
        try:
            self.size = f.seek(0, os.SEEK_END)
            f.seek(0)
            z = zipfile.ZipFile(f)
            infos = z.infolist()
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError,
                ValueError, struct.error, NotImplementedError,
                IndexError) as e:
            raise bad_archive(f"failed finding central directory ({e}); "
                              f"the file is truncated or is not a zip "
                              f"archive") from e
        except OSError as e:
            raise bad_archive(f"failed reading the zip archive ({e})") \
                from e
        if not infos:
            raise bad_archive("the archive has no records")
        self.handed = 0  # bytes of storage records read or mapped so far
        self.prefix = infos[0].filename.split("/", 1)[0] + "/"
        self.records = {}
        for info in infos:
            if info.filename.startswith(self.prefix):
                self.records[info.filename[len(self.prefix):]] = info

    def has(self, name):
        return name in self.records

    def _locate(self, name):
        """(offset of the data in the file, size) of a record."""
        info = self.records.get(name)
        if info is None:
            raise bad_archive(f"no record {self.prefix}{name}")
        if info.compress_type != zipfile.ZIP_STORED:
            raise bad_archive(
                f"record {info.filename} is compressed (method "
                f"{info.compress_type}); checkpoints store their records "
                f"uncompressed, as torch.save writes them")
        size = info.file_size
        if info.compress_size != size:
            raise bad_archive(f"record {info.filename} declares {size} "
                              f"bytes but stores {info.compress_size}")
        at = info.header_offset
        if at < 0 or at + _LOCAL.size > self.size:
            raise bad_archive(f"record {info.filename}'s header lies past "
                              f"the end of the file")
        self.f.seek(at)
        head = self.f.read(_LOCAL.size)
        if len(head) != _LOCAL.size:
            raise bad_archive(f"record {info.filename} is truncated")
        sig, *_, name_len, extra_len = _LOCAL.unpack(head)
        if sig != 0x04034B50 or \
                self.f.read(name_len) != info.orig_filename.encode(
                    "utf-8" if info.flag_bits & 0x800 else "cp437"):
            raise bad_archive(f"bad local header for {info.filename}")
        start = at + _LOCAL.size + name_len + extra_len
        if size > self.size or start + size > self.size:
            raise bad_archive(
                f"record {info.filename} declares {size} bytes at offset "
                f"{start}, past the end of the {self.size}-byte file")
        return start, size

    def read(self, name):
        """A small record's bytes."""
        start, size = self._locate(name)
        self.f.seek(start)
        data = self.f.read(size)
        if len(data) != size:
            raise bad_archive(f"record {self.prefix}{name} is truncated")
        return data

    def size_of(self, name):
        return self._locate(name)[1]

    def _take(self, name):
        """_locate, counting the bytes handed out: records whose entries
        point at the same bytes cannot make the reader hold more than the
        file."""
        start, size = self._locate(name)
        self.handed += size
        if self.handed > self.size:
            raise bad_archive(f"the storage records hold {self.handed} "
                              f"bytes, more than the {self.size}-byte file: "
                              f"records overlap")
        return start, size

    def read_array(self, name):
        """A record's bytes read straight into a new uint8 array."""
        start, size = self._take(name)
        try:
            out = new_buffer(size)
        except MemoryError as e:  # not the file's fault: it has the bytes
            raise not_the_file(e)
        self.f.seek(start)
        view = memoryview(out)
        got = 0
        while got < size:
            n = self.f.readinto(view[got:])
            if not n:
                raise bad_archive(f"record {self.prefix}{name} is "
                                  f"truncated")
            got += n
        return out

    def map_array(self, name, path):
        """A record's bytes as a copy-on-write map of the file at path."""
        start, size = self._take(name)
        if size == 0:
            return np.empty(0, np.uint8)
        return np.memmap(path, np.uint8, mode="c", offset=start,
                         shape=(size,))
