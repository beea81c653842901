"""finfo/iinfo against NumPy's; promote_types, result_type and can_cast
against torch's tables and against the dtypes the C ops produce."""
import itertools

import numpy as np
import pytest

import pygpu

from conftest import dtype_name

F16, F32, F64, I64 = pygpu.float16, pygpu.float32, pygpu.float64, pygpu.int64
B, U8, I32, BF16 = pygpu.bool, pygpu.uint8, pygpu.int32, pygpu.bfloat16
DTYPES = [B, U8, I32, I64, F16, BF16, F32, F64]
FLOATS = [F16, F32, F64]  # those NumPy has
INTS = [U8, I32, I64]

# torch.promote_types on pygpu's dtypes, written out (torch's documented
# table: bool < uint8 < int32 < int64 < floats; float16 with bfloat16 is
# float32).
PROMOTE = {
    (B, B): B, (B, U8): U8, (B, I32): I32, (B, I64): I64, (B, F16): F16,
    (B, BF16): BF16, (B, F32): F32, (B, F64): F64,
    (U8, U8): U8, (U8, I32): I32, (U8, I64): I64, (U8, F16): F16,
    (U8, BF16): BF16, (U8, F32): F32, (U8, F64): F64,
    (I32, I32): I32, (I32, I64): I64, (I32, F16): F16, (I32, BF16): BF16,
    (I32, F32): F32, (I32, F64): F64,
    (I64, I64): I64, (I64, F16): F16, (I64, BF16): BF16, (I64, F32): F32,
    (I64, F64): F64,
    (F16, F16): F16, (F16, BF16): F32, (F16, F32): F32, (F16, F64): F64,
    (BF16, BF16): BF16, (BF16, F32): F32, (BF16, F64): F64,
    (F32, F32): F32, (F32, F64): F64,
    (F64, F64): F64,
}


# -- finfo / iinfo ------------------------------------------------------------

@pytest.mark.parametrize("dtype", FLOATS, ids=dtype_name)
def test_finfo_matches_numpy(dtype):
    got, want = pygpu.finfo(dtype), np.finfo(dtype.numpy_dtype)
    assert got.bits == want.bits
    for attr in ("eps", "max", "min", "tiny", "smallest_normal"):
        value = getattr(got, attr)
        assert type(value) is float, attr
        assert value == float(getattr(want, attr)), attr
    # NumPy's is 10**-precision rounded to the type; torch's is a double
    assert type(got.resolution) is float
    assert got.resolution == 10.0 ** -want.precision
    assert want.dtype.type(got.resolution) == want.resolution
    assert got.dtype == dtype_name(dtype) == str(want.dtype)


def test_finfo_defaults_to_the_default_dtype():
    assert pygpu.finfo() == pygpu.finfo(pygpu.float32)
    assert pygpu.finfo().dtype == "float32"
    assert pygpu.finfo(None).eps == float(np.finfo(np.float32).eps)
    assert pygpu.finfo(F16) != pygpu.finfo(F32)
    assert "eps=0.000976562" in repr(pygpu.finfo(F16))


def test_finfo_bfloat16():
    got = pygpu.finfo(BF16)
    assert got.bits == 16 and got.eps == 2.0 ** -7
    assert got.max == float.fromhex("0x1.fep127") == -got.min
    assert got.tiny == got.smallest_normal == 2.0 ** -126
    assert got.resolution == 0.01 and got.dtype == "bfloat16"
    assert repr(got) == (
        "finfo(resolution=0.01, min=-3.38953e+38, max=3.38953e+38, "
        "eps=0.0078125, smallest_normal=1.17549e-38, tiny=1.17549e-38, "
        "dtype=bfloat16)")


@pytest.mark.parametrize("dtype", INTS, ids=dtype_name)
def test_iinfo_matches_numpy(dtype):
    got, want = pygpu.iinfo(dtype), np.iinfo(dtype.numpy_dtype)
    assert (got.bits, got.max, got.min) == (want.bits, want.max, want.min)
    assert type(got.max) is int and type(got.min) is int
    assert got.dtype == dtype_name(dtype)


def test_iinfo_int64():
    got = pygpu.iinfo(I64)
    assert got.dtype == "int64"
    assert pygpu.iinfo(pygpu.long) == got
    assert repr(got) == "iinfo(min=-9.22337e+18, max=9.22337e+18, dtype=int64)"


def test_info_of_the_wrong_kind_raises():
    with pytest.raises(TypeError, match=r"pygpu\.finfo\(\) requires a "
                       r"floating point input type\. Use pygpu\.iinfo"):
        pygpu.finfo(I64)
    for dtype in FLOATS + [BF16]:
        with pytest.raises(TypeError, match=r"pygpu\.iinfo\(\) requires an "
                           r"integer input type\. Use pygpu\.finfo"):
            pygpu.iinfo(dtype)
    for dtype in (B, U8, I32):
        with pytest.raises(TypeError, match="requires a floating point"):
            pygpu.finfo(dtype)
    with pytest.raises(TypeError, match="pygpu.bool is not supported by "
                       "pygpu.iinfo"):
        pygpu.iinfo(B)
    with pytest.raises(TypeError, match="must be pygpu.dtype, not str"):
        pygpu.finfo("float32")
    with pytest.raises(TypeError, match="must be pygpu.dtype"):
        pygpu.iinfo(np.int64)
    with pytest.raises(TypeError):
        pygpu.iinfo()


# -- default dtype, is_floating_point -----------------------------------------

def test_default_dtype_is_what_factories_make():
    assert pygpu.get_default_dtype() is F32
    assert pygpu.tensor(1.5).dtype is pygpu.get_default_dtype()
    assert pygpu.zeros(2).dtype is pygpu.get_default_dtype()
    assert pygpu.rand(2).dtype is pygpu.get_default_dtype()


@pytest.mark.parametrize("dtype", DTYPES, ids=dtype_name)
def test_is_floating_point(dtype):
    assert pygpu.is_floating_point(pygpu.zeros(2, dtype=dtype)) is (
        dtype in (F16, BF16, F32, F64))


def test_is_floating_point_wants_a_tensor():
    with pytest.raises(TypeError, match="must be Tensor, not float"):
        pygpu.is_floating_point(1.0)


# -- promote_types, can_cast --------------------------------------------------

@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)),
                         ids=lambda d: dtype_name(d))
def test_promote_types_table_and_symmetry(a, b):
    want = PROMOTE.get((a, b)) or PROMOTE[(b, a)]
    assert pygpu.promote_types(a, b) is want
    assert pygpu.promote_types(b, a) is want


def test_promote_types_wants_dtypes():
    with pytest.raises(TypeError, match="must be pygpu.dtype, not int"):
        pygpu.promote_types(F32, 1)


# torch.can_cast: never to a lower category (float > integer > bool).
CAN_CAST_FALSE = {(f, i) for f in (F16, BF16, F32, F64) for i in (B, U8, I32,
                                                                   I64)}
CAN_CAST_FALSE |= {(i, B) for i in (U8, I32, I64)}


@pytest.mark.parametrize("a,b", list(itertools.product(DTYPES, DTYPES)),
                         ids=lambda d: dtype_name(d))
def test_can_cast_table(a, b):
    assert pygpu.can_cast(a, b) is ((a, b) not in CAN_CAST_FALSE)


def test_can_cast_wants_dtypes():
    with pytest.raises(TypeError, match="must be pygpu.dtype"):
        pygpu.can_cast(float, F32)


# -- result_type against the ops ----------------------------------------------

def _operands(device="cpu"):
    """Every kind of operand pygpu's arithmetic takes: each dtype as an n-d
    and a 0-d tensor, and Python bool, int and float."""
    ops = {}
    for d in DTYPES:
        ops[f"{dtype_name(d)}[2]"] = pygpu.ones(2, dtype=d, device=device)
        ops[f"{dtype_name(d)}[]"] = pygpu.ones((), dtype=d, device=device)
    ops.update({"bool": True, "int": 3, "float": 2.5})
    return ops


OPERANDS = _operands()
TENSOR_PAIRS = [(x, y) for x, y in itertools.product(OPERANDS, OPERANDS)
                if isinstance(OPERANDS[x], pygpu.Tensor)
                or isinstance(OPERANDS[y], pygpu.Tensor)]


@pytest.mark.parametrize("x,y", TENSOR_PAIRS,
                         ids=[f"{x}-{y}" for x, y in TENSOR_PAIRS])
def test_result_type_is_the_ops_dtype(x, y, device):
    ops = _operands(device)
    a, b = ops[x], ops[y]
    want = pygpu.result_type(a, b)
    assert (a + b).dtype is want
    assert (a * b).dtype is want
    assert pygpu.add(a, b).dtype is want
    # true division: bool and integer results become the default dtype
    assert (a / b).dtype is (want if want.is_floating_point else F32)
    if B not in (getattr(a, "dtype", None), getattr(b, "dtype", None)) \
            and not isinstance(a, bool) and not isinstance(b, bool):
        assert (a - b).dtype is want  # torch refuses - on bools


@pytest.mark.parametrize("x,y", TENSOR_PAIRS,
                         ids=[f"{x}-{y}" for x, y in TENSOR_PAIRS])
def test_result_type_follows_torchs_rule(x, y):
    """The rule spelled out: the highest category among the operands wins;
    within it, the highest priority (n-d tensor, 0-d tensor, number) among
    operands of that category decides, promoting within it; a Python float
    decides as the default dtype."""
    a, b = OPERANDS[x], OPERANDS[y]

    def kind(v):
        if isinstance(v, pygpu.Tensor):
            return v.dtype, 2 if v.ndim else 1
        if isinstance(v, bool):
            return B, 0
        return (F32, 0) if isinstance(v, float) else (I64, 0)

    def category(d):
        return 0 if d is B else 1 + d.is_floating_point

    ka, kb = kind(a), kind(b)
    top = max(category(ka[0]), category(kb[0]))
    cands = [k for k in (ka, kb) if category(k[0]) == top]
    best = max(p for _, p in cands)
    want = [d for d, p in cands if p == best]
    want = want[0] if len(want) == 1 else pygpu.promote_types(*want)
    assert pygpu.result_type(a, b) is want


@pytest.mark.parametrize("a,b,want", [
    (1, 2, I64), (True, 2, I64), (1, 2.5, F32), (2.5, 0.5, F32),
    (True, False, B),
    (pygpu.ones(3, dtype=B), 1, I64), (pygpu.ones(3, dtype=B), 1.0, F32),
    (pygpu.ones(3, dtype=U8), 1000, U8), (pygpu.ones(3, dtype=I32), True, I32),
    (pygpu.ones(3, dtype=U8), pygpu.ones((), dtype=I64), U8),
    (pygpu.ones(3, dtype=B), pygpu.ones((), dtype=U8), U8),
    (pygpu.ones(3, dtype=B), pygpu.ones((), dtype=F64), F64),
    (pygpu.ones(3, dtype=F16), pygpu.ones(3, dtype=BF16), F32),
    (pygpu.ones(3, dtype=BF16), 2.5, BF16),
    (pygpu.ones((), dtype=F64), pygpu.ones(3, dtype=I64), F64),
    (pygpu.ones((), dtype=F64), pygpu.ones(3, dtype=F16), F16),
    (pygpu.ones((), dtype=F64), pygpu.ones((), dtype=F16), F64),
    (pygpu.ones(3, dtype=F16), 1e10, F16),
    (pygpu.ones(3, dtype=I64), 0.5, F32),
])
def test_result_type_examples(a, b, want):
    assert pygpu.result_type(a, b) is want
    assert pygpu.result_type(b, a) is want


def test_result_type_wants_tensors_or_numbers():
    with pytest.raises(TypeError, match="must be Tensor or Number, not str"):
        pygpu.result_type(pygpu.ones(2), "1")
    with pytest.raises(TypeError, match="tensor1"):
        pygpu.result_type(None, 1)
