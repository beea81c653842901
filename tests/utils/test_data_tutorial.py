"""The flow of PyTorch's "Datasets & DataLoaders" tutorial, written for
pygpu as `import pygpu as torch` (random images in place of files): a
custom Dataset with a transform and a target transform, a shuffling
DataLoader, a look at one batch, then a custom collate, samplers and
workers."""
import numpy as np

import pygpu as torch
from pygpu.utils.data import DataLoader, Dataset

LABELS = {0: "T-Shirt", 1: "Trouser", 2: "Pullover", 3: "Dress",
          4: "Coat", 5: "Sandal", 6: "Shirt", 7: "Sneaker", 8: "Bag",
          9: "Ankle Boot"}


class CustomImageDataset(Dataset):
    """The tutorial's dataset, with an array of uint8 "images" and labels
    instead of an annotations file and an image folder."""

    def __init__(self, n, transform=None, target_transform=None, seed=0):
        rng = np.random.default_rng(seed)
        self.images = rng.integers(0, 256, (n, 1, 28, 28), dtype=np.uint8)
        self.img_labels = rng.integers(0, 10, n)
        self.transform = transform
        self.target_transform = target_transform

    def __len__(self):
        return len(self.img_labels)

    def __getitem__(self, idx):
        image = torch.from_numpy(self.images[idx].copy())
        label = int(self.img_labels[idx])
        if self.transform:
            image = self.transform(image)
        if self.target_transform:
            label = self.target_transform(label)
        return image, label


def to_tensor(image):
    """ToTensor's scaling: uint8 [0, 255] -> float32 [0, 1]."""
    return image.type(torch.float) / 255


def one_hot(y):
    """The tutorial's target Lambda, as it writes it."""
    return torch.zeros(10, dtype=torch.float).scatter_(
        0, torch.tensor(y), value=1)


def test_iterate_through_the_dataloader():
    training_data = CustomImageDataset(300, transform=to_tensor)
    test_data = CustomImageDataset(100, transform=to_tensor, seed=1)
    image, label = training_data[7]
    assert image.shape == (1, 28, 28) and image.dtype == torch.float32
    assert 0 <= image.min().item() and image.max().item() <= 1
    assert LABELS[label] in LABELS.values()
    np.testing.assert_allclose(image.numpy(),
                               training_data.images[7] / 255, rtol=1e-6)

    torch.manual_seed(0)
    train_dataloader = DataLoader(training_data, batch_size=64,
                                  shuffle=True)
    test_dataloader = DataLoader(test_data, batch_size=64, shuffle=True)
    assert len(train_dataloader) == 5 and len(test_dataloader) == 2

    train_features, train_labels = next(iter(train_dataloader))
    assert train_features.size() == (64, 1, 28, 28)
    assert train_labels.size() == (64,)
    assert train_features.dtype == torch.float32
    assert train_labels.dtype == torch.int64
    img = train_features[0].squeeze()
    assert img.shape == (28, 28)
    # the first image is the one its label says it is
    matches = [i for i in range(300)
               if np.allclose(training_data.images[i, 0] / 255, img.numpy())]
    assert train_labels[0].item() in training_data.img_labels[matches]

    seen = torch.cat([y for _, y in train_dataloader])
    assert sorted(seen.tolist()) == sorted(training_data.img_labels.tolist())


def test_target_transform():
    ds = CustomImageDataset(10, transform=to_tensor,
                            target_transform=one_hot)
    _, target = ds[3]
    want = np.zeros(10, np.float32)
    want[ds.img_labels[3]] = 1
    np.testing.assert_array_equal(target.numpy(), want)
    _, targets = next(iter(DataLoader(ds, batch_size=4)))
    assert targets.shape == (4, 10) and targets.sum().item() == 4
    assert targets.argmax(1).tolist() == ds.img_labels[:4].tolist()


def pad_collate(batch):
    """A custom collate: images of different widths padded to the widest,
    with the original widths."""
    width = max(x.shape[-1] for x, _ in batch)
    out = torch.zeros(len(batch), 1, 28, width)
    for i, (x, _) in enumerate(batch):
        out[i, :, :, :x.shape[-1]] = x
    labels = torch.tensor([y for _, y in batch])
    widths = torch.tensor([x.shape[-1] for x, _ in batch])
    return out, labels, widths


def test_custom_collate():
    ds = CustomImageDataset(
        20, transform=lambda im: to_tensor(im)[:, :, :10 + im[0, 0, 0] % 9])
    images, labels, widths = next(iter(DataLoader(ds, batch_size=8,
                                                  collate_fn=pad_collate)))
    assert images.shape == (8, 1, 28, max(widths.tolist()))
    assert labels.tolist() == ds.img_labels[:8].tolist()
    for i in range(8):
        w = widths[i].item()
        np.testing.assert_allclose(images[i, 0, :, :w].numpy(),
                                   ds.images[i, 0, :, :w] / 255, rtol=1e-6)
        assert images[i, 0, :, w:].abs().sum().item() == 0


def test_samplers_and_workers():
    ds = CustomImageDataset(120, transform=to_tensor)
    weights = [5.0 if y == 3 else 1.0 for y in ds.img_labels]
    sampler = torch.utils.data.WeightedRandomSampler(
        weights, num_samples=600, replacement=True)
    loader = DataLoader(ds, batch_size=50, sampler=sampler)
    labels = torch.cat([y for _, y in loader]).tolist()
    assert len(labels) == 600
    share = np.mean(np.array(labels) == 3)
    base = np.mean(ds.img_labels == 3)
    assert share > 2 * base  # the weighted class comes up more often

    torch.manual_seed(4)
    one = [y.tolist() for _, y in DataLoader(ds, batch_size=32,
                                             shuffle=True)]
    torch.manual_seed(4)
    two = [y.tolist() for _, y in DataLoader(ds, batch_size=32,
                                             shuffle=True, num_workers=2)]
    assert one == two and len(one) == 4
