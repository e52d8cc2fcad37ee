"""DataLoader in the main process: arguments, batching, shuffling, len()."""

import os
import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    IterableDataset,
    SequentialSampler,
    TensorDataset,
    default_collate,
    default_convert,
)


class Squares(Dataset):
    def __init__(self, n=10):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        if not 0 <= i < self.n:
            raise IndexError(i)
        return {"x": np.full((2,), i, np.float32), "y": i * i}


class Count(IterableDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(range(self.n))

    def __len__(self):
        return self.n


def test_defaults():
    dl = DataLoader(Squares())
    assert dl.batch_size == 1 and dl.num_workers == 0 and dl.drop_last is False
    assert dl.timeout == 0 and dl.prefetch_factor is None and dl.collate_fn is default_collate
    assert isinstance(dl.sampler, SequentialSampler) and isinstance(dl.batch_sampler, BatchSampler)
    assert DataLoader(Squares(), num_workers=2).prefetch_factor == 2
    assert DataLoader(Squares(), batch_size=None).collate_fn is default_convert


@pytest.mark.parametrize(
    "kwargs, exc, match",
    [
        (dict(num_workers=-1), ValueError, "num_workers option should be non-negative"),
        (dict(timeout=-1), ValueError, "timeout option should be non-negative"),
        (dict(prefetch_factor=2), ValueError, "prefetch_factor option could only be specified"),
        (dict(num_workers=1, prefetch_factor=-1), ValueError, "prefetch_factor option should be"),
        (dict(persistent_workers=True), ValueError, "persistent_workers option needs"),
        (dict(sampler=[0, 1], shuffle=True), ValueError, "sampler option is mutually exclusive"),
        (dict(batch_sampler=[[0]], batch_size=2), ValueError, "batch_sampler option is mutually"),
        (dict(batch_sampler=[[0]], drop_last=True), ValueError, "batch_sampler option is mutually"),
        (dict(batch_size=None, drop_last=True), ValueError, "batch_size=None option disables"),
        (dict(multiprocessing_context="fork"), ValueError, "multiprocessing_context can only"),
        (dict(num_workers=1, multiprocessing_context="nope"), ValueError, "valid start method"),
        (dict(num_workers=1, multiprocessing_context=3), TypeError, "valid context object"),
        (dict(batch_size=0), ValueError, "batch_size should be a positive integer"),
    ],
)
def test_argument_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        DataLoader(Squares(), **kwargs)


def test_iterable_dataset_argument_errors():
    with pytest.raises(ValueError, match="expected unspecified shuffle option"):
        DataLoader(Count(3), shuffle=True)
    with pytest.raises(ValueError, match="expected unspecified sampler option"):
        DataLoader(Count(3), sampler=[0])
    with pytest.raises(ValueError, match="expected unspecified batch_sampler option"):
        DataLoader(Count(3), batch_sampler=[[0]])


def test_attributes_frozen():
    dl = DataLoader(Squares())
    with pytest.raises(ValueError, match="batch_size attribute should not be set"):
        dl.batch_size = 3
    dl.num_workers = 0  # allowed, as in torch
    with pytest.raises(NotImplementedError):
        import pickle

        pickle.dumps(dl)


def test_batches_and_len():
    dl = DataLoader(Squares(10), batch_size=4)
    batches = list(dl)
    assert len(dl) == 3 and len(batches) == 3
    assert batches[0]["x"].shape == (4, 2) and batches[0]["y"].tolist() == [0, 1, 4, 9]
    assert batches[2]["y"].tolist() == [64, 81]
    dl = DataLoader(Squares(10), batch_size=4, drop_last=True)
    assert len(dl) == 2 and len(list(dl)) == 2


def test_no_auto_batching():
    dl = DataLoader(Squares(3), batch_size=None)
    items = list(dl)
    assert len(dl) == 3 and isinstance(items[1]["x"], ember.Tensor) and items[1]["y"] == 1


def test_batch_sampler_and_custom_collate():
    dl = DataLoader(Squares(6), batch_sampler=[[5, 0], [1]], collate_fn=lambda b: [s["y"] for s in b])
    assert list(dl) == [[25, 0], [1]] and len(dl) == 2


def test_tensor_dataset_loader():
    x = ember.arange(10, dtype=ember.float32)
    dl = DataLoader(TensorDataset(x, x * 2), batch_size=5)
    a, b = next(iter(dl))
    assert a.tolist() == [0, 1, 2, 3, 4] and b.tolist() == [0, 2, 4, 6, 8]


def test_shuffle_reproducible_with_generator():
    def order(seed):
        g = ember.Generator()
        g.manual_seed(seed)
        return [b["y"].tolist() for b in DataLoader(Squares(10), batch_size=3, shuffle=True,
                                                     generator=g)]

    assert order(1) == order(1) and order(1) != order(2)
    flat = sorted(v for b in order(1) for v in b)
    assert flat == [i * i for i in range(10)]


def test_shuffle_matches_torch():
    torch = pytest.importorskip("torch")
    g, tg = ember.Generator(), torch.Generator()
    g.manual_seed(3)
    tg.manual_seed(3)
    ours = [b.tolist() for b in DataLoader(range(20), batch_size=6, shuffle=True, generator=g)]
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(range(20), batch_size=6,
                                                              shuffle=True, generator=tg)]
    assert ours == theirs
    ember.manual_seed(9)
    torch.manual_seed(9)
    ours = [b.tolist() for b in DataLoader(range(20), batch_size=6, shuffle=True)]
    theirs = [b.tolist() for b in torch.utils.data.DataLoader(range(20), batch_size=6,
                                                              shuffle=True)]
    assert ours == theirs


def test_iterable_dataset_single_process():
    dl = DataLoader(Count(7), batch_size=3)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5], [6]] and len(dl) == 3
    dl = DataLoader(Count(7), batch_size=3, drop_last=True)
    assert [b.tolist() for b in dl] == [[0, 1, 2], [3, 4, 5]] and len(dl) == 2
    assert [int(b) for b in DataLoader(Count(3), batch_size=None)] == [0, 1, 2]


def test_pin_memory_without_cuda_warns():
    with pytest.warns(UserWarning, match="no accelerator is found"):
        batches = list(DataLoader(Squares(2), pin_memory=True))
    assert len(batches) == 2


def test_timeout_needs_workers():
    with pytest.raises(AssertionError, match="requires timeout == 0"):
        iter(DataLoader(Squares(2), timeout=1))


def test_any_iterable_of_batches_works():
    def my_loader(n, bs):
        for s in range(0, n, bs):
            yield ember.arange(s, min(s + bs, n))

    total = sum(int(b.sum().item()) for b in my_loader(10, 4))
    assert total == 45
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert sum(int(b.sum().item()) for b in DataLoader(range(10), batch_size=4)) == 45


def test_too_many_workers_warns():
    with pytest.warns(UserWarning, match="suggested max number of worker"):
        DataLoader(Squares(), num_workers=(os.cpu_count() or 1) * 4 + 1)


def test_reachable_from_plain_import_ember():
    import ember as e

    assert e.utils.data.DataLoader is DataLoader
