import warnings

import numpy as np
import pytest

import ember
from ember.utils.data import (
    ChainDataset,
    ConcatDataset,
    Dataset,
    IterableDataset,
    StackDataset,
    Subset,
    TensorDataset,
    random_split,
)


class Range(IterableDataset):
    def __init__(self, a, b):
        self.a, self.b = a, b

    def __iter__(self):
        return iter(range(self.a, self.b))

    def __len__(self):
        return self.b - self.a


def test_dataset_base():
    with pytest.raises(NotImplementedError, match="__getitem__"):
        Dataset()[0]
    assert isinstance(Range(0, 2) + Range(2, 3), ChainDataset)


def test_tensor_dataset():
    x = ember.arange(12).reshape(6, 2)
    y = ember.arange(6)
    ds = TensorDataset(x, y)
    assert len(ds) == 6
    a, b = ds[4]
    assert a.tolist() == [8, 9] and b.item() == 4
    with pytest.raises(AssertionError, match="Size mismatch"):
        TensorDataset(x, ember.arange(5))


def test_concat_dataset():
    ds = ConcatDataset([list(range(3)), list(range(10, 15))])
    assert len(ds) == 8
    assert [ds[i] for i in range(8)] == [0, 1, 2, 10, 11, 12, 13, 14]
    assert ds[-1] == 14 and ds.cumulative_sizes == [3, 8]
    with pytest.raises(ValueError, match="absolute value"):
        ds[-9]
    with pytest.raises(AssertionError, match="empty"):
        ConcatDataset([])
    with pytest.raises(AssertionError, match="IterableDataset"):
        ConcatDataset([Range(0, 2)])


def test_chain_dataset():
    ds = ChainDataset([Range(0, 2), Range(5, 7)])
    assert list(ds) == [0, 1, 5, 6] and len(ds) == 4
    with pytest.raises(AssertionError, match="only supports IterableDataset"):
        list(ChainDataset([[1, 2]]))


def test_subset_and_getitems():
    ds = Subset(list(range(10, 20)), [3, 1, 4])
    assert len(ds) == 3 and ds[0] == 13 and ds.__getitems__([2, 1]) == [14, 11]


def test_stack_dataset():
    a, b = list(range(3)), ["x", "y", "z"]
    assert StackDataset(a, b)[1] == (1, "y")
    assert StackDataset(n=a, s=b)[2] == {"n": 2, "s": "z"}
    assert StackDataset(a, b).__getitems__([0, 2]) == [(0, "x"), (2, "z")]
    assert StackDataset(n=a, s=b).__getitems__([1]) == [{"n": 1, "s": "y"}]
    assert len(StackDataset(a, b)) == 3
    with pytest.raises(ValueError, match="Size mismatch"):
        StackDataset(a, [1])
    with pytest.raises(ValueError, match="At least one"):
        StackDataset()
    with pytest.raises(ValueError, match="both types"):
        StackDataset(a, s=b)


def test_random_split_lengths_and_fractions():
    g = ember.Generator()
    g.manual_seed(42)
    parts = random_split(range(10), [3, 7], generator=g)
    assert [len(p) for p in parts] == [3, 7]
    assert sorted(parts[0].indices + parts[1].indices) == list(range(10))
    parts = random_split(range(30), [0.3, 0.3, 0.4])
    assert [len(p) for p in parts] == [9, 9, 12]
    parts = random_split(range(5), [0.5, 0.5])  # remainder round robin
    assert [len(p) for p in parts] == [3, 2]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        random_split(range(1), [0.1, 0.9])
    assert any("Length of split at index 1 is 0" in str(x.message) for x in w)
    with pytest.raises(ValueError, match="Sum of input lengths"):
        random_split(range(10), [3, 3])
    with pytest.raises(ValueError, match="Fraction at index 0"):
        random_split(range(10), [1.5, -0.5])


def test_random_split_matches_torch():
    torch = pytest.importorskip("torch")
    g, tg = ember.Generator(), torch.Generator()
    g.manual_seed(7)
    tg.manual_seed(7)
    ours = random_split(range(20), [0.25, 0.75], generator=g)
    theirs = torch.utils.data.random_split(range(20), [0.25, 0.75], generator=tg)
    assert [p.indices for p in ours] == [p.indices for p in theirs]


def test_tensor_dataset_numpy_values():
    x = ember.from_numpy(np.arange(6, dtype=np.float32))
    assert TensorDataset(x)[2][0].item() == 2.0
