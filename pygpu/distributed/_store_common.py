"""What the stores share: the Store interface, the limits, the token, and
TCPStore's wire format (used by its client and its server).

A request is one frame, ``u8 command, u32 key length, key, u64 value
length, value``; a reply is ``u8 status, u64 length, payload``.  Every
integer is big-endian.
"""
import dataclasses
import datetime
import math
import os
import socket
import struct
import time

HEAD = struct.Struct("!BIQ")
REPLY = struct.Struct("!BQ")

# Commands.  0-5 are the original set; WAIT and AUTH came later (a server
# that predates them answers MISSING, which the client takes as "poll
# check instead" and "no token needed").
SET, GET, ADD, CHECK, DELETE, NUM_KEYS, WAIT, AUTH = range(8)
COMMAND_NAMES = ("set", "get", "add", "check", "delete_key", "num_keys",
                 "wait", "auth")

# Statuses.  ERROR: the request was refused, the connection stays usable.
# CLOSING: the request was refused and the server closes the connection
# after this reply (a frame it cannot trust, a wrong or missing token).
# TIMEOUT: a wait's deadline passed; the payload names the missing keys.
OK, MISSING, ERROR, CLOSING, TIMEOUT = range(5)

TOKEN_ENV = "PYGPU_STORE_TOKEN"
MAX_TOKEN_BYTES = 1024
MAX_NUMBER_BYTES = 32   # an add's amount or a wait's timeout, in decimal
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1


def token_from(token):
    """The token as bytes (b"" for none): the argument when given, else
    the environment variable."""
    if token is None:
        token = os.environ.get(TOKEN_ENV, "")
    if isinstance(token, str):
        token = token.encode()
    if not isinstance(token, (bytes, bytearray)):
        raise TypeError(f"the store token is str or bytes, not "
                        f"{type(token).__name__}")
    if len(token) > MAX_TOKEN_BYTES:
        raise ValueError(f"the store token is {len(token)} bytes, more "
                         f"than {MAX_TOKEN_BYTES}")
    return bytes(token)


def _env_number(name, default, kind):
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw)
    except ValueError:
        raise ValueError(f"environment variable {name} is {raw!r}, not "
                         f"a number") from None
    if not value > 0 or (kind is float and not math.isfinite(value)):
        raise ValueError(f"environment variable {name} is {raw!r}; it "
                         f"must be positive")
    return value


@dataclasses.dataclass(frozen=True)
class StoreLimits:
    """The limits a store enforces, each settable by keyword or by its
    environment variable (the keyword wins).

    max_key_bytes (PYGPU_STORE_MAX_KEY_BYTES, 8 KiB) and max_value_bytes
    (PYGPU_STORE_MAX_VALUE_BYTES, 8 MiB) are torch's TCPStore limits on a
    key and a value; max_request_keys (PYGPU_STORE_MAX_REQUEST_KEYS, 128 Ki)
    is torch's limit on the keys of one check or wait, whose keys together
    are at most max_value_bytes.  max_keys (PYGPU_STORE_MAX_KEYS, 1 Mi) and
    max_total_bytes (PYGPU_STORE_MAX_TOTAL_BYTES, 1 GiB) bound what the
    store holds; max_connections (PYGPU_STORE_MAX_CONNECTIONS, 16 Ki)
    bounds a TCPStore server's open connections (more wait in the listen
    backlog); idle_timeout (PYGPU_STORE_IDLE_TIMEOUT, 60 s) is how long a
    server keeps a connection that stopped in the middle of a frame, that
    has sent nothing since it was accepted, or that does not read its
    replies."""

    max_key_bytes: int = 8 * 1024
    max_value_bytes: int = 8 * 1024 * 1024
    max_request_keys: int = 128 * 1024
    max_keys: int = 1024 * 1024
    max_total_bytes: int = 1024 * 1024 * 1024
    max_connections: int = 16 * 1024
    idle_timeout: float = 60.0

    _ENV = {
        "max_key_bytes": ("PYGPU_STORE_MAX_KEY_BYTES", int),
        "max_value_bytes": ("PYGPU_STORE_MAX_VALUE_BYTES", int),
        "max_request_keys": ("PYGPU_STORE_MAX_REQUEST_KEYS", int),
        "max_keys": ("PYGPU_STORE_MAX_KEYS", int),
        "max_total_bytes": ("PYGPU_STORE_MAX_TOTAL_BYTES", int),
        "max_connections": ("PYGPU_STORE_MAX_CONNECTIONS", int),
        "idle_timeout": ("PYGPU_STORE_IDLE_TIMEOUT", float),
    }

    def __post_init__(self):
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if isinstance(value, bool) or not isinstance(value, field.type) \
                    and not (field.type is float and isinstance(value, int)):
                raise TypeError(f"StoreLimits.{field.name} is "
                                f"{field.type.__name__}, not "
                                f"{type(value).__name__}")
            if not value > 0:
                raise ValueError(f"StoreLimits.{field.name} must be "
                                 f"positive, got {value}")

    @classmethod
    def from_env(cls, **given):
        """The limits from the environment, overridden by the keywords
        that are not None."""
        values = {}
        for name, (env, kind) in cls._ENV.items():
            if given.get(name) is not None:
                values[name] = given.pop(name)
            else:
                values[name] = _env_number(env, getattr(cls, name), kind)
        if given:
            raise TypeError(f"unknown store limits {sorted(given)}")
        return cls(**values)


def value_limit(limits, cmd):
    """The most value bytes a frame of command cmd may carry."""
    if cmd == SET:
        return limits.max_value_bytes
    if cmd in (ADD, WAIT):
        return MAX_NUMBER_BYTES
    if cmd == AUTH:
        return MAX_TOKEN_BYTES
    return 0


def key_limit(limits, cmd):
    """The most key bytes a frame of command cmd may carry (the keys of
    a check or a wait, NUL-separated, together)."""
    if cmd in (CHECK, WAIT):
        return limits.max_value_bytes
    if cmd in (NUM_KEYS, AUTH):
        return 0
    return limits.max_key_bytes


def split_keys(field):
    return field.split(b"\0") if field else []


def tune(sock):
    """TCP_NODELAY and keepalive (a peer that vanished without closing is
    noticed after about two minutes) on a connected socket."""
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
    for name, value in (("TCP_KEEPIDLE", 60), ("TCP_KEEPINTVL", 10),
                        ("TCP_KEEPCNT", 6)):
        option = getattr(socket, name, None)
        if option is not None:
            try:
                sock.setsockopt(socket.IPPROTO_TCP, option, value)
            except OSError:
                pass


# ------------------------------------------------------------ the interface

DEFAULT_TIMEOUT = datetime.timedelta(seconds=300)


def seconds(timeout):
    if timeout is None:
        return DEFAULT_TIMEOUT.total_seconds()
    if isinstance(timeout, datetime.timedelta):
        return timeout.total_seconds()
    return float(timeout)


def as_bytes(value):
    if isinstance(value, str):
        return value.encode()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"store values are bytes or str, not "
                    f"{type(value).__name__}")


def key_bytes(key, limits, store):
    """key (str or bytes) as bytes, checked against the key limit."""
    kb = key.encode() if isinstance(key, str) else as_bytes(key)
    if len(kb) > limits.max_key_bytes:
        raise ValueError(f"{store}: a key of {len(kb)} bytes is more than "
                         f"the store's limit of {limits.max_key_bytes} bytes "
                         f"(PYGPU_STORE_MAX_KEY_BYTES)")
    return kb


def value_bytes(value, limits, store):
    vb = as_bytes(value)
    if len(vb) > limits.max_value_bytes:
        raise ValueError(f"{store}: a value of {len(vb)} bytes is more than "
                         f"the store's limit of {limits.max_value_bytes} "
                         f"bytes (PYGPU_STORE_MAX_VALUE_BYTES)")
    return vb


def parse_int(raw):
    """A stored or sent decimal integer, or None when raw is not one."""
    if len(raw) > MAX_NUMBER_BYTES:
        return None
    try:
        return int(raw)
    except ValueError:
        return None


class Store:
    """The store interface: set, get, add, check, wait, delete_key,
    num_keys, and the timeout used by the blocking calls."""

    def __init__(self, timeout=None):
        self._timeout = seconds(timeout)

    @property
    def timeout(self):
        return datetime.timedelta(seconds=self._timeout)

    def set_timeout(self, timeout):
        self._timeout = seconds(timeout)

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
        limit = self._timeout if timeout is None else seconds(timeout)
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
