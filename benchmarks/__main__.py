"""python -m benchmarks: run the benchmark suites (see runner/)."""
import sys

from .runner import main

sys.exit(main())
