"""torch.backends.cpu: which vector instructions the CPU loops use."""
from .. import _C


def get_cpu_capability():
    """"DEFAULT", "AVX2" or "AVX512": the version of the vectorized CPU
    loops this process runs, picked at import from the CPU, or lower when
    the environment variable PYGPU_CPU_CAPABILITY (default, avx2, avx512)
    asks for less."""
    return _C._cpu_capability()
