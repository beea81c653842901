"""FileStore's file: clear errors for files that are foreign, of another
format version, cut short, corrupt or left over from an earlier run; the
file compacted instead of growing without bound, with processes that
append and compact at the same time losing nothing."""
import os
import struct
import subprocess
import sys
import tempfile

import pytest

from pygpu.distributed import _file_store as fs
from pygpu.distributed.store import FileStore, StoreLimits



def test_an_empty_existing_file_is_a_new_store(tmp_path):
    with tempfile.NamedTemporaryFile(dir=tmp_path, delete=False) as f:
        path = f.name  # torch's usual way of making a FileStore path
    s = FileStore(path, 1)
    s.set("k", "v")
    assert s.get("k") == b"v"
    with open(path, "rb") as f:
        assert f.read(8) == fs.MAGIC
    s.close()
    assert not os.path.exists(path)


@pytest.mark.parametrize("content", [
    b"hello, this is a text file\n",
    b"PYG",                       # not even a whole magic
    struct.pack("!IQ", 1, 1) + b"k1",  # the format before the header
])
def test_a_foreign_file_is_refused(tmp_path, content):
    path = tmp_path / "store"
    path.write_bytes(content)
    if content == b"PYG":  # a prefix of the magic: a header cut short
        with pytest.raises(RuntimeError, match="is corrupt: its header is "
                           "cut short"):
            FileStore(str(path), 1)
    else:
        with pytest.raises(RuntimeError, match=f"{path} is not a pygpu "
                           "FileStore file"):
            FileStore(str(path), 1)
    assert path.read_bytes() == content  # left as it was


def test_a_file_of_another_version_is_refused(tmp_path):
    path = tmp_path / "store"
    path.write_bytes(fs.HEADER.pack(fs.MAGIC, 7, 1234))
    with pytest.raises(RuntimeError, match="format 7, and this pygpu reads "
                       "format 1 only"):
        FileStore(str(path), 1)


def _store_with_records(tmp_path):
    path = str(tmp_path / "store")
    s = FileStore(path, -1)
    s.set("alpha", b"A" * 100)
    s.set("beta", b"B" * 10)
    return path, s


def test_a_cut_short_record_is_reported(tmp_path):
    path, s = _store_with_records(tmp_path)
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        f.truncate(size - 3)
    with pytest.raises(RuntimeError, match=r"is corrupt: the record at byte "
                       r"\d+ declares 14 bytes and only 11 follow"):
        FileStore(path, -1)  # a fresh reader
    with open(path, "r+b") as f:
        f.truncate(size - 14 - fs.RECORD.size + 5)
    with pytest.raises(RuntimeError, match="ends in a cut-short record"):
        s.check(["beta"])  # a reader with the file cached up to beta
    assert s._state is None  # nothing half-read is kept


def test_a_damaged_record_fails_its_checksum(tmp_path):
    path, s = _store_with_records(tmp_path)
    data = bytearray(open(path, "rb").read())
    at = data.index(b"A" * 100)
    data[at + 50] ^= 0x20
    open(path, "wb").write(bytes(data))
    with pytest.raises(RuntimeError, match="fails its checksum"):
        FileStore(path, -1)
    data[at + 50] ^= 0x20
    data[fs.HEADER.size] = ord("X")  # the first record's kind
    open(path, "wb").write(bytes(data))
    with pytest.raises(RuntimeError, match="unknown kind b'X'"):
        FileStore(path, -1)


def test_a_stale_file_is_refused(tmp_path):
    path = str(tmp_path / "store")
    a, b = FileStore(path, 2), FileStore(path, 2)
    with pytest.raises(RuntimeError, match="already counts 2 processes for "
                       "a world of 2: it is left over from an earlier run"):
        FileStore(path, 2)
    a.close()
    b.close()
    assert not os.path.exists(path)
    FileStore(path, 2).close()  # a new run on a removed file is fine


def test_repeated_sets_and_adds_are_compacted(tmp_path):
    path = str(tmp_path / "store")
    s = FileStore(path, -1)
    other = FileStore(path, -1)  # a second reader with its own cache
    s.compact_min_bytes = 16 * 1024
    value = os.urandom(1000)
    sizes = []
    for i in range(400):
        s.set("same", value + str(i).encode())
        s.add("counter", 1)
        if i % 37 == 0:  # the other reader follows across rewrites
            assert other.get("same") == value + str(i).encode()
            assert other.add("counter", 0) == i + 1
        sizes.append(os.path.getsize(path))
    # 400 KB were appended; the file stays within the bound
    assert max(sizes) <= 16 * 1024 + 2 * (1000 + 64)
    assert min(sizes[100:]) < 4 * 1024  # rewritten down to its live records
    assert s.compactions >= 10
    assert s.get("same") == value + b"399"
    assert other.add("counter", 0) == 400
    assert FileStore(path, -1).num_keys() == 3  # same, counter, users
    leftovers = [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
    assert leftovers == []


WORKER = r"""
import sys
from pygpu.distributed.store import FileStore
s = FileStore(sys.argv[1], -1)
s.compact_min_bytes = 2048
for i in range(int(sys.argv[2])):
    s.add("shared", 1)
    s.set("mine/" + sys.argv[3], str(i))
print("done", s.compactions, s.relocks, flush=True)
"""


def test_processes_appending_while_others_compact_lose_nothing(tmp_path):
    path = str(tmp_path / "store")
    FileStore(path, -1)
    env = dict(os.environ)
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, path, "300",
                               str(r)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for r in range(3)]
    compactions = relocks = 0
    for p in procs:
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0 and out.startswith("done "), err
        compactions += int(out.split()[1])
        relocks += int(out.split()[2])
    assert compactions >= 3
    print(f"\n{compactions} compactions, {relocks} locks taken again")
    s = FileStore(path, -1)
    assert s.add("shared", 0) == 900
    assert [s.get(f"mine/{r}") for r in range(3)] == [b"299"] * 3
    assert os.path.getsize(path) < 8 * 1024


def test_limits(tmp_path):
    s = FileStore(str(tmp_path / "store"), -1,
                  limits=StoreLimits(max_keys=3, max_value_bytes=100,
                                     max_key_bytes=10, max_total_bytes=200))
    s.set("a", b"1")
    with pytest.raises(ValueError, match="a value of 101 bytes"):
        s.set("b", b"x" * 101)
    with pytest.raises(ValueError, match="a key of 11 bytes"):
        s.set("k" * 11, b"")
    s.set("b", b"2")  # with the users count: 3 keys
    with pytest.raises(RuntimeError, match="holds 3 keys, its limit"):
        s.set("c", b"3")
    s.set("a", b"x" * 100)  # the users count's 24 bytes, then 101, 2
    with pytest.raises(RuntimeError, match="holds 127 bytes; 'b' would take "
                       "it past its limit of 200 bytes"):
        s.set("b", b"x" * 100)
    s.set("a", "text")
    with pytest.raises(RuntimeError, match="add: the value of key 'a' is "
                       "not an integer"):
        s.add("a", 1)
    assert s.delete_key("b") and not s.delete_key("b")
    s.set("c", b"3")
