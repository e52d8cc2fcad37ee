import pytest

import ember
from ember.utils.data import (
    BatchSampler,
    DistributedSampler,
    RandomSampler,
    SequentialSampler,
    SubsetRandomSampler,
    WeightedRandomSampler,
)


def gen(seed):
    g = ember.Generator()
    g.manual_seed(seed)
    return g


def test_sequential():
    s = SequentialSampler(range(5))
    assert list(s) == [0, 1, 2, 3, 4] and len(s) == 5


def test_random_permutation_and_reproducible():
    s = RandomSampler(range(20), generator=gen(3))
    a = list(s)
    assert sorted(a) == list(range(20)) and len(s) == 20
    assert list(RandomSampler(range(20), generator=gen(3))) == a


def test_random_num_samples_and_replacement():
    s = RandomSampler(range(4), num_samples=10, generator=gen(0))
    got = list(s)
    assert len(got) == 10 and sorted(got[:4]) == [0, 1, 2, 3] and sorted(got[4:8]) == [0, 1, 2, 3]
    r = list(RandomSampler(range(3), replacement=True, num_samples=70, generator=gen(1)))
    assert len(r) == 70 and set(r) <= {0, 1, 2}


def test_random_default_generator_follows_manual_seed():
    ember.manual_seed(5)
    a = list(RandomSampler(range(10)))
    ember.manual_seed(5)
    assert list(RandomSampler(range(10))) == a


def test_random_errors():
    with pytest.raises(TypeError, match="replacement should be a boolean"):
        RandomSampler(range(3), replacement=1)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler(range(3), num_samples=0)
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        RandomSampler([], num_samples=None)


def test_subset_random():
    s = SubsetRandomSampler([10, 20, 30], generator=gen(0))
    assert sorted(s) == [10, 20, 30] and len(s) == 3


def test_weighted():
    s = WeightedRandomSampler([0.0, 1.0, 0.0], 5, generator=gen(0))
    assert list(s) == [1] * 5 and len(s) == 5
    s = WeightedRandomSampler([0.1, 0.9, 0.4, 0.7], 4, replacement=False, generator=gen(0))
    assert sorted(s) == [0, 1, 2, 3]
    with pytest.raises(ValueError, match="num_samples should be a positive integer"):
        WeightedRandomSampler([1.0], True)
    with pytest.raises(ValueError, match="replacement should be a boolean"):
        WeightedRandomSampler([1.0], 1, replacement=0)
    with pytest.raises(ValueError, match="weights should be a 1d sequence"):
        WeightedRandomSampler([[1.0]], 1)


def test_batch_sampler():
    assert list(BatchSampler(range(10), 3, False)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9]]
    assert list(BatchSampler(range(10), 3, True)) == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert len(BatchSampler(range(10), 3, False)) == 4
    assert len(BatchSampler(range(10), 3, True)) == 3
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), 0, False)
    with pytest.raises(ValueError, match="batch_size should be a positive integer"):
        BatchSampler(range(3), True, False)
    with pytest.raises(ValueError, match="drop_last should be a boolean"):
        BatchSampler(range(3), 2, 0)


def test_distributed(tmp_path):
    ds = range(10)
    parts = [list(DistributedSampler(ds, 3, r, shuffle=False)) for r in range(3)]
    assert parts == [[0, 3, 6, 9], [1, 4, 7, 0], [2, 5, 8, 1]]
    parts = [list(DistributedSampler(ds, 3, r, shuffle=False, drop_last=True)) for r in range(3)]
    assert parts == [[0, 3, 6], [1, 4, 7], [2, 5, 8]]
    s = [DistributedSampler(ds, 2, r, seed=1) for r in range(2)]
    a = sorted(list(s[0]) + list(s[1]))
    assert a == list(range(10)) and len(s[0]) == 5
    first = list(s[0])
    s[0].set_epoch(1)
    assert list(s[0]) != first
    with pytest.raises(ValueError, match="Invalid rank 3"):
        DistributedSampler(ds, 3, 3)
    try:
        import ember.distributed as dist
    except ImportError:  # ember-mp not installed
        with pytest.raises(RuntimeError, match="Requires distributed package"):
            DistributedSampler(ds)
    else:
        with pytest.raises(ValueError, match="Default process group has not been initialized"):
            DistributedSampler(ds)
        dist.init_process_group("shm", init_method=f"file://{tmp_path}/rdv", rank=0,
                                world_size=1)
        try:
            s = DistributedSampler(ds, shuffle=False)
            assert (s.num_replicas, s.rank, list(s)) == (1, 0, list(range(10)))
        finally:
            dist.destroy_process_group()
    assert list(DistributedSampler(range(2), 5, 4, shuffle=False)) == [0]


def test_samplers_match_torch():
    torch = pytest.importorskip("torch")
    tu = torch.utils.data

    def tgen(seed):
        g = torch.Generator()
        g.manual_seed(seed)
        return g

    assert list(RandomSampler(range(50), generator=gen(0))) == list(
        tu.RandomSampler(range(50), generator=tgen(0)))
    assert list(RandomSampler(range(7), replacement=True, num_samples=40, generator=gen(2))) == list(
        tu.RandomSampler(range(7), replacement=True, num_samples=40, generator=tgen(2)))
    assert list(SubsetRandomSampler([5, 6, 7, 8], generator=gen(1))) == list(
        tu.SubsetRandomSampler([5, 6, 7, 8], generator=tgen(1)))
    for r in range(2):
        assert list(DistributedSampler(range(11), 2, r, seed=3)) == list(
            tu.DistributedSampler(range(11), 2, r, seed=3))
    ember.manual_seed(0)
    torch.manual_seed(0)
    assert list(RandomSampler(range(30))) == list(tu.RandomSampler(range(30)))


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402


@settings(max_examples=40, deadline=None)
@given(n=st.integers(0, 40), bs=st.integers(1, 9), drop=st.booleans())
def test_batch_sampler_partitions(n, bs, drop):
    batches = list(BatchSampler(range(n), bs, drop))
    assert len(batches) == len(BatchSampler(range(n), bs, drop))
    flat = [i for b in batches for i in b]
    assert flat == list(range(len(flat)))
    assert all(len(b) == bs for b in batches[:-1])
    assert len(flat) == (n - n % bs if drop else n)


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 30), replicas=st.integers(1, 5), drop=st.booleans(), shuffle=st.booleans())
def test_distributed_covers_the_dataset(n, replicas, drop, shuffle):
    parts = [list(DistributedSampler(range(n), replicas, r, shuffle=shuffle, drop_last=drop))
             for r in range(replicas)]
    sizes = {len(p) for p in parts}
    assert len(sizes) == 1 and sizes.pop() == len(DistributedSampler(range(n), replicas, 0,
                                                                       drop_last=drop))
    union = {i for p in parts for i in p}
    if drop:
        assert len(union) == sum(len(p) for p in parts)  # no index twice
    else:
        assert union == set(range(n))
