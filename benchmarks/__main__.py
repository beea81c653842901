"""python -m benchmarks: run the benchmark suites (see runner/)."""
import os
import sys


def _preset_threads(argv):
    """--threads N also sizes the BLAS and OpenMP pools, which read their
    environment variables once, when NumPy or torch loads them: set those
    before anything imports NumPy."""
    for i, arg in enumerate(argv):
        value = None
        if arg == "--threads" and i + 1 < len(argv):
            value = argv[i + 1]
        elif arg.startswith("--threads="):
            value = arg.split("=", 1)[1]
        if value and value.isdigit() and "numpy" not in sys.modules:
            for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                        "MKL_NUM_THREADS"):
                os.environ[var] = value


_preset_threads(sys.argv[1:])
from .runner import main  # noqa: E402

sys.exit(main())
