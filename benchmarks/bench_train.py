"""One training step of the tutorial's model (784-256-relu-10 float32):
forward, cross-entropy, backward and an Adam step, at batch 32 and 4096,
pygpu against torch with the same weights and data on the same device
(CUDA when present) and on the CPU; then pygpu against itself with
Adam(foreach=False) (pygpu-per-op: an op per term and parameter, not the
fused step), timed apart from torch.  All start from the same weights and
take one step on the same batch first, and the updated weights are
compared (so the timed steps do the same work); figures are medians of
interleaved rounds (bench_ops.compare), so the ratios come from one run.

  python benchmarks/bench_train.py [--json PATH] [--quick] [--cpu-only]
"""

import numpy as np

import pygpu
from pygpu import nn
from bench_ops import TORCH_CUDA, compare, each_device, ratios, report, \
    save, script_args, torch

BATCHES = (32, 4096)


def make_step(lib, device, w, xs, ys, **adam):
    """The model with weights w, and one training step on (xs, ys), in lib
    (pygpu or torch: the same code runs in both); adam: Adam's keyword
    arguments besides lr."""
    nn = lib.nn
    model = nn.Sequential(nn.Linear(784, 256), nn.ReLU(),
                          nn.Linear(256, 10)).to(device)
    with lib.no_grad():
        for p, v in zip(model.parameters(), w):
            p.copy_(lib.tensor(v, device=device))
    opt = lib.optim.Adam(model.parameters(), lr=1e-3, **adam)
    loss_fn = nn.CrossEntropyLoss()
    x = lib.tensor(xs, device=device)
    y = lib.tensor(ys, device=device)

    def step():
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()
        return loss
    return model, step


def bench(device, quick):
    rng = np.random.default_rng(0)
    pygpu.manual_seed(0)
    init = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    w = [p.detach().numpy().copy() for p in init.parameters()]
    sync = pygpu.cuda.synchronize if device == "cuda" else None
    tsync = torch.cuda.synchronize if device == "cuda" and torch else None
    for batch in BATCHES:
        xs = rng.standard_normal((batch, 784)).astype(np.float32)
        ys = rng.integers(0, 10, batch)
        pm, pstep = make_step(pygpu, device, w, xs, ys)
        _, slow = make_step(pygpu, device, w, xs, ys, foreach=False)
        impls = {"pygpu": (pstep, sync)}
        ploss = pstep().item()
        assert slow().item() == ploss
        if torch is not None and (device == "cpu" or TORCH_CUDA):
            tm, tstep = make_step(torch, device, w, xs, ys)
            tloss = tstep().item()
            assert abs(ploss - tloss) <= 1e-4 * abs(tloss), (ploss, tloss)
            for a, b in zip(pm.parameters(), tm.parameters()):
                np.testing.assert_allclose(a.detach().cpu().numpy(),
                                           b.detach().cpu().numpy(),
                                           rtol=1e-3, atol=1e-4)
            impls["torch"] = (tstep, tsync)
        inner = max(3, int(4e8 / (batch * 784 * 256 * 6)) * 4)
        if quick:
            inner = max(2, inner // 4)
        case = f"train step b={batch}"
        for impl, us in compare(impls, inner, 11 if quick else 21).items():
            report(device, case, impl, us, "us")
        ratios(device, case, False, "torch")
        # apart from torch, whose spinning threads slow whatever follows it
        own = {"pygpu": (pstep, sync), "pygpu-per-op": (slow, sync)}
        case += " (fused vs per-op Adam)"
        for impl, us in compare(own, inner, 11 if quick else 21).items():
            report(device, case, impl, us, "us")
        ratios(device, case, False, "pygpu-per-op")


def main():
    args = script_args()
    each_device(bench, args)
    save(args.json, model="784-256-relu-10 float32, CrossEntropyLoss, "
         "Adam(lr=1e-3)")


if __name__ == "__main__":
    main()
