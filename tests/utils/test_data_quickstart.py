"""The flow of PyTorch's quickstart, written for pygpu as
`import pygpu as torch`: FashionMNIST-shaped data (random, learnable: each
class has its own template) in TensorDatasets, DataLoader(batch_size=64),
the quickstart's network, CrossEntropyLoss and SGD(lr=1e-3), its train and
test loops, then saving and loading the state dict."""
import numpy as np

import pygpu as torch
from pygpu import nn
from pygpu.utils.data import DataLoader, TensorDataset

device = "cuda" if torch.cuda.is_available() else "cpu"


def fashion_like(n, seed):
    """n 28x28 float32 images in [0, 1] of 10 classes: a class's template
    (fixed across calls) plus noise."""
    templates = np.random.default_rng(1234).random((10, 28, 28)) > 0.5
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 10, n)
    x = 0.9 * templates[y] + 0.1 * rng.random((n, 28, 28))
    return TensorDataset(torch.from_numpy(x.astype(np.float32)),
                         torch.from_numpy(y))


class NeuralNetwork(nn.Module):
    def __init__(self):
        super().__init__()
        self.flatten = nn.Flatten()
        self.linear_relu_stack = nn.Sequential(
            nn.Linear(28 * 28, 512),
            nn.ReLU(),
            nn.Linear(512, 512),
            nn.ReLU(),
            nn.Linear(512, 10),
        )

    def forward(self, x):
        x = self.flatten(x)
        logits = self.linear_relu_stack(x)
        return logits


def train(dataloader, model, loss_fn, optimizer):
    size = len(dataloader.dataset)
    model.train()
    losses = []
    for batch, (X, y) in enumerate(dataloader):
        X, y = X.to(device), y.to(device)
        pred = model(X)
        loss = loss_fn(pred, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
        assert (batch + 1) * len(X) <= size + 63
    return float(np.mean(losses))


def test(dataloader, model, loss_fn):
    size = len(dataloader.dataset)
    num_batches = len(dataloader)
    model.eval()
    test_loss, correct = 0, 0
    with torch.no_grad():
        for X, y in dataloader:
            X, y = X.to(device), y.to(device)
            pred = model(X)
            test_loss += loss_fn(pred, y).item()
            correct += (pred.argmax(1) == y).type(torch.float).sum().item()
    test_loss /= num_batches
    correct /= size
    return test_loss, correct


test.__test__ = False  # the quickstart's name for it, not a pytest test


def test_quickstart_flow(tmp_path):
    torch.manual_seed(0)
    training_data = fashion_like(768, seed=1)
    test_data = fashion_like(256, seed=2)
    batch_size = 64
    train_dataloader = DataLoader(training_data, batch_size=batch_size)
    test_dataloader = DataLoader(test_data, batch_size=batch_size)
    for X, y in test_dataloader:
        assert X.shape == (64, 28, 28) and X.dtype == torch.float32
        assert y.shape == (64,) and y.dtype == torch.int64
        break

    model = NeuralNetwork().to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3)

    before_loss, before_acc = test(test_dataloader, model, loss_fn)
    epoch_losses = [train(train_dataloader, model, loss_fn, optimizer)
                    for _ in range(3)]
    after_loss, after_acc = test(test_dataloader, model, loss_fn)
    assert all(b < a for a, b in zip(epoch_losses, epoch_losses[1:]))
    assert after_loss < before_loss - 0.02
    assert 0.0 <= before_acc <= 1.0 and after_acc > before_acc
    assert model.training is False

    path = tmp_path / "model.pth"
    torch.save(model.state_dict(), path)
    model2 = NeuralNetwork().to(device)
    model2.load_state_dict(torch.load(path, weights_only=True))
    model2.eval()
    x = test_data.tensors[0][:16].to(device)
    with torch.no_grad():
        a, b = model(x), model2(x)
    np.testing.assert_array_equal(a.cpu().numpy(), b.cpu().numpy())
    classes = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
               "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
    predicted = classes[b[0].argmax(0).item()]
    assert predicted in classes
