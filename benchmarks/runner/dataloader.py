"""DataLoader: one epoch over a TensorDataset of 60,000 28x28 float32
images with int64 labels, batch 64, shuffled, num_workers 0 and 2
(bench_dataloader.py), pygpu against torch; host work on any device."""
from bench_dataloader import WORKERS, epoch_times, make_data

from .cpuload import LoadMeter

NAME = "dataloader"


def run(ctx):
    if not ctx.measures_by_other_means():
        return
    data = make_data()
    for workers in WORKERS:
        case = f"epoch workers={workers}"
        meter = LoadMeter().start()
        times = epoch_times(workers, ctx.quick, data)
        load = meter.stop()
        for impl, us in times.items():
            ctx.record_value(case, impl, us * 1e3, "ns",
                             note="median host time of one epoch",
                             load=load)
        if "torch" in times:
            ctx.ratios.append({
                "suite": ctx.suite, "case": case, "size": None,
                "dtype": "float32", "device": ctx.device, "num": "pygpu",
                "den": "torch", "ratio": times["pygpu"] / times["torch"],
                "meaning": "time", "threads": ctx.threads,
                **{k: load[k] for k in ("load_cores", "loaded")
                   if k in load}})
