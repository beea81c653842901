"""Checkpoints: saving and loading a state dict of 16 float32 tensors of
64 MiB (1 GiB; --quick: 16 x 8 MiB) with pygpu.save / pygpu.load,
against cp of the same file and torch.save / torch.load, plain and with
mmap=True (bench_checkpoint.py: files in /dev/shm when it has room);
host work on any device, in ms per checkpoint, with pygpu's time over
torch's."""
from bench_checkpoint import measure

from .cpuload import LoadMeter

NAME = "checkpoint"


def run(ctx):
    if not ctx.measures_by_other_means():
        return
    mib, rounds = (8, 3) if ctx.quick else (64, 5)
    meter = LoadMeter().start()
    med, rss, nbytes = measure(mib, rounds, say=ctx.say)
    load = meter.stop()
    for case, times in med.items():
        for impl, seconds in times.items():
            ctx.record_value(case, impl, seconds * 1e3, "ms", size=nbytes,
                             dtype="float32", note="median over "
                             f"{rounds} rounds, 16 x {mib} MiB", load=load)
        if "torch" in times:
            ctx.ratios.append({
                "suite": ctx.suite, "case": case, "size": nbytes,
                "dtype": "float32", "device": ctx.device, "num": "pygpu",
                "den": "torch", "ratio": times["pygpu"] / times["torch"],
                "meaning": "time", "threads": ctx.threads,
                **{k: load[k] for k in ("load_cores", "loaded")
                   if k in load}})
    for what, added in rss.items():
        ctx.record_value(f"RssAnon added by {what}", what.split()[0],
                         added / 2**20, "MiB", size=nbytes, load=load)
