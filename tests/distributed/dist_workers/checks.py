"""What the worker scripts share: run the named checks (all, or those on
the command line), then write "ok" or the traceback per check to
$DIST_OUT/rank<r>.json, or print them when DIST_OUT is not set."""
import json
import os
import sys
import traceback


def run_and_report(checks, run_check, rank, extra=None):
    results = {}
    only = sys.argv[1:]
    for name in checks:
        if only and name not in only:
            continue
        try:
            run_check(name)
            results[name] = "ok"
        except Exception:  # noqa: BLE001 - reported to the test
            results[name] = traceback.format_exc()
    out = os.environ.get("DIST_OUT")
    if out:
        with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
            json.dump(dict(extra or {}, results=results), f)
        return
    bad = {k: v for k, v in results.items() if v != "ok"}
    for k, v in bad.items():
        print(f"rank {rank}: {k}: {v}", file=sys.stderr)
    print(f"rank {rank}: {len(results) - len(bad)} of {len(results)} "
          f"checks passed")
