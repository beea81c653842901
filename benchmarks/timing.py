"""Host timing shared by the benchmark scripts (no library imported)."""
import statistics
import time


def median_call_ns(fn, calls, repeats, warm=None):
    """Median over `repeats` batches of the mean host time of one fn() in
    a batch of `calls`, after `warm` untimed calls (min(calls, 100) when
    None): caches, lazy initialisation, threads woken."""
    for _ in range(min(calls, 100) if warm is None else warm):
        fn()
    batches = []
    for _ in range(repeats):
        t0 = time.perf_counter_ns()
        for _ in range(calls):
            fn()
        batches.append((time.perf_counter_ns() - t0) / calls)
    return statistics.median(batches)
