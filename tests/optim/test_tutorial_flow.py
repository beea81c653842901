"""torch's "Optimizing Model Parameters" flow, written against pygpu under
torch's names: a small network, a loss function, an optimizer, a
train_loop and a test_loop over batches, and a learning-rate scheduler
stepping once an epoch. The data are made here: random inputs labelled by
a fixed random linear teacher, cut into batches with tensor indexing."""
import numpy as np
import pytest

import pygpu as torch
from pygpu import nn


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(4 * 4, 32),
            nn.ReLU(),
            nn.Linear(32, 32),
            nn.ReLU(),
            nn.Linear(32, 4),
        )

    def forward(self, x):
        x = self.flatten(x)
        return self.linear_relu_stack(x)


def make_data(rng, n, device):
    """n images of 4x4 values and labels 0..3: the argmax of a fixed
    linear map of each image (learnable, not trivially)."""
    teacher = np.random.default_rng(1234).standard_normal((16, 4))
    x = rng.standard_normal((n, 4, 4)).astype(np.float32)
    y = np.argmax(x.reshape(n, 16) @ teacher, axis=1).astype(np.int64)
    return torch.tensor(x, device=device), torch.tensor(y, device=device)


class Batches:
    """The (X, y) batches of a data set: shuffled each pass when asked
    (an index_select of a fresh permutation), the last one shorter."""

    def __init__(self, x, y, batch_size, shuffle, rng=None):
        self.x, self.y = x, y
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.rng = rng
        self.dataset_size = x.shape[0]

    def __len__(self):
        return -(-self.dataset_size // self.batch_size)

    def __iter__(self):
        x, y = self.x, self.y
        if self.shuffle:
            order = torch.tensor(self.rng.permutation(self.dataset_size),
                                 device=x.device)
            x, y = x.index_select(0, order), y.index_select(0, order)
        for start in range(0, self.dataset_size, self.batch_size):
            yield (x[start:start + self.batch_size],
                   y[start:start + self.batch_size])


def train_loop(dataloader, model, loss_fn, optimizer):
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    return losses


def test_loop(dataloader, model, loss_fn):
    model.eval()
    size = dataloader.dataset_size
    num_batches = len(dataloader)
    test_loss, correct = 0.0, 0.0
    with torch.no_grad():
        for X, y in dataloader:
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    return test_loss / num_batches, correct / size


test_loop.__test__ = False  # a helper named as the tutorial names it

OPTIMIZERS = {
    "SGD": (lambda p: torch.optim.SGD(p, lr=0.1, momentum=0.9),
            lambda o: torch.optim.lr_scheduler.StepLR(o, 3, gamma=0.5)),
    "Adam": (lambda p: torch.optim.Adam(p, lr=1e-2),
             lambda o: torch.optim.lr_scheduler.ExponentialLR(o, 0.8)),
    "RMSprop": (lambda p: torch.optim.RMSprop(p, lr=2e-3),
                lambda o: torch.optim.lr_scheduler.CosineAnnealingLR(o, 8)),
    "NAdam": (lambda p: torch.optim.NAdam(p, lr=4e-3),
              lambda o: torch.optim.lr_scheduler.LinearLR(o, 1.0, 0.2, 8)),
    "RAdam": (lambda p: torch.optim.RAdam(p, lr=5e-2),
              lambda o: torch.optim.lr_scheduler.MultiStepLR(o, [5, 7])),
    "Adamax": (lambda p: torch.optim.Adamax(p, lr=1e-2),
               lambda o: torch.optim.lr_scheduler.ReduceLROnPlateau(o)),
    "Adagrad": (lambda p: torch.optim.Adagrad(p, lr=5e-2),
                lambda o: torch.optim.lr_scheduler.ConstantLR(o, 0.5, 2)),
}


@pytest.mark.parametrize("name", sorted(OPTIMIZERS))
def test_optimizing_model_parameters(device, rng, name):
    torch.manual_seed(0)
    train_x, train_y = make_data(rng, 512, device)
    test_x, test_y = make_data(rng, 256, device)
    train_dataloader = Batches(train_x, train_y, 64, shuffle=True, rng=rng)
    test_dataloader = Batches(test_x, test_y, 100, shuffle=False)
    assert len(train_dataloader) == 8 and len(test_dataloader) == 3

    model = NeuralNetwork().to(device)
    loss_fn = nn.CrossEntropyLoss()
    make_optimizer, make_scheduler = OPTIMIZERS[name]
    optimizer = make_optimizer(model.parameters())
    scheduler = make_scheduler(optimizer)

    first_loss, first_acc = test_loop(test_dataloader, model, loss_fn)
    epochs = 8
    lrs = []
    for t in range(epochs):
        losses = train_loop(train_dataloader, model, loss_fn, optimizer)
        assert len(losses) == 8 and all(np.isfinite(losses))
        test_loss, acc = test_loop(test_dataloader, model, loss_fn)
        if name == "Adamax":
            scheduler.step(test_loss)
        else:
            scheduler.step()
        lrs.append(scheduler.get_last_lr()[0])
    assert test_loss < 0.6 * first_loss, (first_loss, test_loss)
    assert acc > max(0.6, first_acc + 0.2), (first_acc, acc)
    assert all(p.device.type == device for p in model.parameters())
    if name == "SGD":
        assert lrs == pytest.approx([0.1, 0.1, 0.05, 0.05, 0.05, 0.025,
                                     0.025, 0.025])
    # The optimizer's state (and the scheduler's) survive a round trip.
    sd, ssd = optimizer.state_dict(), scheduler.state_dict()
    optimizer.load_state_dict(sd)
    scheduler.load_state_dict(ssd)
    assert scheduler.get_last_lr()[0] == lrs[-1]
