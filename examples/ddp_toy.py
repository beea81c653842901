"""PyTorch's basic DistributedDataParallel example, as written for torch
with `import pygpu as torch`: a toy model, one training step on every
rank, under the launcher:

    python -m pygpu.distributed.run --nproc_per_node 2 examples/ddp_toy.py

NCCL and one GPU per rank when CUDA is there, "gloo" (which pygpu runs on
MPI) on the CPU otherwise.  Each rank prints its loss; DDP leaves the same
parameters on every rank, which the script checks.
"""
import os

import pygpu as torch
import pygpu.distributed as dist
import pygpu.nn as nn
import pygpu.optim as optim

DDP = torch.nn.parallel.DistributedDataParallel


class ToyModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic():
    cuda = torch.cuda.is_available()
    if cuda:
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank()
    print(f"Start running basic DDP example on rank {rank}.")
    torch.manual_seed(rank)  # different initial weights: DDP syncs them
    device_id = rank % torch.cuda.device_count() if cuda else "cpu"
    model = ToyModel().to(device_id)
    ddp_model = DDP(model, device_ids=[device_id] if cuda else None)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5).to(device_id)
    loss = loss_fn(outputs, labels)
    loss.backward()
    optimizer.step()
    print(f"rank {rank}: loss {loss.item():.4f}")

    # Every rank holds the same parameters after the step.
    for p in model.parameters():
        mine = p.detach().clone()
        first = mine.clone()
        dist.broadcast(first, src=0)
        assert torch.equal(mine, first), "parameters differ across ranks"
    dist.destroy_process_group()


if __name__ == "__main__":
    demo_basic()
