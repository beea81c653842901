"""pygpu's benchmarks.

``python -m benchmarks`` (from the repository root) runs every suite in one
process and writes results.json, results.md and plots; see
``python -m benchmarks --help`` and benchmarks/runner/.  The bench_*.py
scripts here still run on their own; the runner reuses their helpers.
"""
import os
import sys

# The bench_*.py scripts import each other (and provenance) as top-level
# modules; make that work when they are imported through this package.
_HERE = os.path.dirname(os.path.abspath(__file__))
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)
