"""Rendezvous: from init_method (env://, tcp://host:port, file://path) or
a given store to (store, rank, world_size), then the checks that every
process agrees on the world before any backend starts."""
import os
import time
import urllib.parse

from .store import FileStore, PrefixStore, TCPStore

__all__ = ["rendezvous", "check_world"]


def _env_int(name, given, what):
    if given is not None and given >= 0:
        return given
    value = os.environ.get(name)
    if value is None:
        raise ValueError(
            f"Error initializing torch.distributed using env:// rendezvous: "
            f"environment variable {name} expected, but not set" if what
            else f"{name} is not set")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"environment variable {name} is {value!r}, not "
                         f"an integer") from None


def rendezvous(init_method, rank, world_size, timeout):
    """(store, rank, world_size) for an init_method URL."""
    url = urllib.parse.urlparse(init_method)
    query = dict(urllib.parse.parse_qsl(url.query))
    if "rank" in query and rank < 0:
        rank = int(query["rank"])
    if "world_size" in query and world_size < 0:
        world_size = int(query["world_size"])
    if url.scheme == "env":
        rank = _env_int("RANK", rank, True)
        world_size = _env_int("WORLD_SIZE", world_size, True)
        host = os.environ.get("MASTER_ADDR")
        if host is None:
            _env_int("MASTER_ADDR", None, True)
        port = _env_int("MASTER_PORT", None, True)
    elif url.scheme == "tcp":
        rank = _env_int("RANK", rank, True)
        world_size = _env_int("WORLD_SIZE", world_size, True)
        host, port = url.hostname, url.port
        if host is None or port is None:
            raise ValueError(f"tcp:// init_method needs host:port, got "
                             f"{init_method!r}")
    elif url.scheme == "file":
        rank = _env_int("RANK", rank, True)
        world_size = _env_int("WORLD_SIZE", world_size, True)
        path = url.path if not url.netloc else url.netloc + url.path
        if not path:
            raise ValueError(f"file:// init_method needs a path, got "
                             f"{init_method!r}")
        _check_rank(rank, world_size)
        return FileStore(path, world_size, timeout), rank, world_size
    else:
        raise ValueError(f"No rendezvous handler for {url.scheme}:// "
                         f"(env://, tcp://host:port and file://path are)")
    _check_rank(rank, world_size)
    store = TCPStore(host, port, world_size, is_master=rank == 0,
                     timeout=timeout, wait_for_workers=False)
    return store, rank, world_size


def _check_rank(rank, world_size):
    if world_size <= 0:
        raise ValueError(f"world_size must be positive, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"rank {rank} is out of range for a world of "
                         f"{world_size} (0 <= rank < world_size)")


def check_world(store, rank, world_size, timeout_s, prefix):
    """Every process publishes its world size under prefix; returns once
    all world_size ranks have, raising RuntimeError as soon as one
    disagrees, on a duplicate rank, or at the timeout (naming the ranks
    that never arrived)."""
    s = PrefixStore(prefix, store)
    if s.add(f"count/{rank}", 1) > 1:
        raise RuntimeError(
            f"init_process_group: rank {rank} was claimed by two processes "
            f"(is RANK set the same in two of them?)")
    s.set(f"world_size/{rank}", str(world_size))
    seen = {}
    deadline = time.monotonic() + timeout_s
    pause = 0.001
    while True:
        for r in range(world_size):
            if r in seen or not s.check([f"world_size/{r}"]):
                continue
            seen[r] = int(s.get(f"world_size/{r}"))
            if seen[r] != world_size:
                _linger(s, rank, len(seen))
                raise RuntimeError(
                    f"init_process_group: mismatched world sizes: rank "
                    f"{rank} has world_size {world_size} but rank {r} has "
                    f"world_size {seen[r]} (set WORLD_SIZE the same in "
                    f"every process)")
        if len(seen) == world_size:
            return
        if time.monotonic() >= deadline:
            missing = sorted(set(range(world_size)) - set(seen))
            raise RuntimeError(
                f"init_process_group: timed out after {timeout_s:g} s "
                f"waiting for ranks {missing} of a world of {world_size} "
                f"(not started, crashed, or started with another "
                f"WORLD_SIZE?)")
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def _linger(s, rank, arrived, limit_s=3.0):
    """Counts this rank's failure; rank 0, whose process serves a
    TCPStore, waits (a few seconds at most) until the other ranks seen
    have read what they need to report the mismatch themselves."""
    failed = s.add("failed", 1)
    if rank != 0:
        return
    deadline = time.monotonic() + limit_s
    while failed < arrived and time.monotonic() < deadline:
        time.sleep(0.01)
        failed = s.add("failed", 0)
