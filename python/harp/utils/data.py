"""harp.utils.data: torch.utils.data's datasets, samplers and DataLoader
over harp tensors.

    ds = TensorDataset(harp.from_numpy(x), harp.from_numpy(y))
    train, val = random_split(ds, [0.8, 0.2])
    for xb, yb in DataLoader(train, batch_size=64, shuffle=True):
        ...

As torch's, a DataLoader draws index batches from a sampler, reads the
samples from the dataset and merges them with `collate_fn`
(`default_collate`: harp tensors stacked with harp.stack, NumPy arrays and
Python numbers made into harp tensors, tuples, lists and dicts
recursively). Random orders come from harp's random streams: each epoch of
a shuffling loader (and each random_split) takes the next seed of
`generator=` (a harp.Generator; harp's default generator unless given) and
permutes with NumPy's generator seeded by it, so `harp.manual_seed(s)`
repeats the orders and successive epochs differ.

A batch of a TensorDataset (or of a Subset of one) with the default collate
is read in one piece: the rows of each tensor taken with NumPy into a new
leaf (or `index_select` for a tensor that requires a gradient), so a
training loop compiles nothing for its batches. Indexing a harp tensor
sample by sample (`x[i]`) puts each index into the graph, so a Dataset that
returns such views compiles a new graph for every batch: return NumPy
arrays from `__getitem__`, or use TensorDataset.

Loading runs in the calling process: `num_workers`, `pin_memory`,
`timeout`, `worker_init_fn`, `prefetch_factor` and `persistent_workers`
are accepted and change nothing, and `get_worker_info()` is None.
"""

import bisect
import collections.abc
import math
import warnings

import numpy as np

from .. import _harp
from .._harp import Tensor

__all__ = [
    "BatchSampler", "ConcatDataset", "DataLoader", "Dataset", "IterableDataset",
    "RandomSampler", "Sampler", "SequentialSampler", "Subset",
    "SubsetRandomSampler", "TensorDataset", "default_collate", "default_convert",
    "get_worker_info", "random_split",
]


def _numpy_rng(generator):
    """A NumPy generator seeded with the next seed of `generator` (a
    harp.Generator; harp's default generator when None)."""
    from ..random import next_seed
    return np.random.default_rng(next_seed(generator))


# Datasets --------------------------------------------------------------------


class Dataset:
    """A map-style dataset (torch.utils.data.Dataset): subclasses define
    `__getitem__(index)` and usually `__len__()`. `a + b` concatenates."""

    def __getitem__(self, index):
        raise NotImplementedError("%s must define __getitem__" % type(self).__name__)

    def __add__(self, other):
        return ConcatDataset([self, other])


class IterableDataset(Dataset):
    """A dataset read as a stream (torch.utils.data.IterableDataset):
    subclasses define `__iter__()`. A DataLoader batches what it yields, in
    order (it cannot shuffle or sample it)."""

    def __iter__(self):
        raise NotImplementedError("%s must define __iter__" % type(self).__name__)

    def __add__(self, other):
        raise TypeError("IterableDataset: cannot be concatenated with +")


class TensorDataset(Dataset):
    """Samples that are the rows of tensors of one length
    (torch.utils.data.TensorDataset): item i is (t[i] for t in tensors).
    NumPy arrays are made into harp tensors (harp.from_numpy)."""

    def __init__(self, *tensors):
        if not tensors:
            raise ValueError("TensorDataset: needs at least one tensor")
        converted = []
        for i, t in enumerate(tensors):
            if isinstance(t, np.ndarray):
                t = _harp.from_numpy(t, "cpu")
            if not isinstance(t, Tensor):
                raise TypeError("TensorDataset: tensor %d is a %s, not a harp.Tensor "
                                "or a NumPy array" % (i, type(t).__name__))
            if t.ndim == 0:
                raise ValueError("TensorDataset: tensor %d is 0-d; each needs a first "
                                 "dim to index" % i)
            converted.append(t)
        sizes = [t.shape[0] for t in converted]
        if any(size != sizes[0] for size in sizes):
            raise ValueError("TensorDataset: size mismatch between tensors: first "
                             "dims %s" % sizes)
        self.tensors = tuple(converted)

    def __getitem__(self, index):
        return tuple(t[index] for t in self.tensors)

    def __len__(self):
        return self.tensors[0].shape[0]

    def _batch(self, indices):
        """default_collate of the items at `indices`, one new tensor each."""
        rows = np.asarray(indices, dtype=np.int64)
        batch = []
        for t in self.tensors:
            if t.requires_grad:  # keep the graph: a gather with a run-time index
                batch.append(t.index_select(0, _harp.from_numpy(rows, t.device)))
            else:
                batch.append(_harp.from_numpy(np.ascontiguousarray(t.numpy()[rows]),
                                              t.device))
        return batch


class Subset(Dataset):
    """The items of `dataset` at `indices`, in that order
    (torch.utils.data.Subset)."""

    def __init__(self, dataset, indices):
        self.dataset = dataset
        self.indices = indices

    def __getitem__(self, index):
        if isinstance(index, list):
            return self.dataset[[self.indices[i] for i in index]]
        return self.dataset[self.indices[index]]

    def __len__(self):
        return len(self.indices)


class ConcatDataset(Dataset):
    """Datasets one after another (torch.utils.data.ConcatDataset)."""

    def __init__(self, datasets):
        self.datasets = list(datasets)
        if not self.datasets:
            raise ValueError("ConcatDataset: datasets should not be an empty iterable")
        for d in self.datasets:
            if isinstance(d, IterableDataset):
                raise TypeError("ConcatDataset: does not support IterableDataset")
        self.cumulative_sizes = []
        total = 0
        for d in self.datasets:
            total += len(d)
            self.cumulative_sizes.append(total)

    def __len__(self):
        return self.cumulative_sizes[-1]

    def __getitem__(self, index):
        if index < 0:
            if -index > len(self):
                raise ValueError("ConcatDataset: absolute value of index should not "
                                 "exceed dataset length")
            index += len(self)
        which = bisect.bisect_right(self.cumulative_sizes, index)
        start = self.cumulative_sizes[which - 1] if which else 0
        return self.datasets[which][index - start]


def _batch_of(dataset, indices):
    """default_collate of dataset[i] for i in indices read in one piece,
    where the dataset is a TensorDataset or Subsets of one (with their
    __getitem__); None for any other dataset."""
    while isinstance(dataset, Subset) and type(dataset).__getitem__ is Subset.__getitem__:
        indices = [dataset.indices[i] for i in indices]
        dataset = dataset.dataset
    if isinstance(dataset, TensorDataset) and \
            type(dataset).__getitem__ is TensorDataset.__getitem__:
        return dataset._batch(indices)
    return None


def random_split(dataset, lengths, generator=None):
    """Subsets of `dataset` of the given lengths, or of fractions of it that
    add up to 1 (each floor(fraction * len), the remainder handed out one by
    one from the first), over a random permutation drawn from `generator`
    (harp's default generator unless given) (torch.utils.data.random_split)."""
    lengths = list(lengths)
    n = len(dataset)
    if math.isclose(sum(lengths), 1) and sum(lengths) <= 1:
        counts = []
        for i, fraction in enumerate(lengths):
            if not 0 <= fraction <= 1:
                raise ValueError("random_split: fraction at index %d is not between 0 "
                                 "and 1" % i)
            counts.append(int(math.floor(n * fraction)))
        for i in range(n - sum(counts)):
            counts[i % len(counts)] += 1
        for i, count in enumerate(counts):
            if count == 0:
                warnings.warn("random_split: length of split at index %d is 0; this "
                              "might result in an empty dataset" % i)
        lengths = counts
    if sum(lengths) != n:
        raise ValueError("random_split: the lengths add up to %d, not to the length of "
                         "the dataset (%d)" % (sum(lengths), n))
    order = _numpy_rng(generator).permutation(n).tolist()
    subsets, end = [], 0
    for length in lengths:
        subsets.append(Subset(dataset, order[end:end + length]))
        end += length
    return subsets


# Samplers --------------------------------------------------------------------


class Sampler:
    """An iterable of dataset indices (torch.utils.data.Sampler)."""

    def __init__(self, data_source=None):
        pass

    def __iter__(self):
        raise NotImplementedError


class SequentialSampler(Sampler):
    """0, 1, ..., len(data_source) - 1."""

    def __init__(self, data_source):
        self.data_source = data_source

    def __iter__(self):
        return iter(range(len(self.data_source)))

    def __len__(self):
        return len(self.data_source)


class RandomSampler(Sampler):
    """The indices in a random order: a permutation of them (several,
    then part of one, for num_samples > len), or num_samples indices drawn
    with replacement; each iteration takes the next seed of `generator`
    (harp's default generator unless given)."""

    def __init__(self, data_source, replacement=False, num_samples=None, generator=None):
        if not isinstance(replacement, bool):
            raise TypeError("RandomSampler: replacement should be a boolean value, but "
                            "got replacement=%r" % (replacement,))
        self.data_source = data_source
        self.replacement = replacement
        self._num_samples = num_samples
        self.generator = generator
        if not isinstance(self.num_samples, int) or isinstance(self.num_samples, bool) \
                or self.num_samples <= 0:
            raise ValueError("RandomSampler: num_samples should be a positive integer "
                             "value, but got num_samples=%r" % (self.num_samples,))

    @property
    def num_samples(self):
        """How many indices an iteration gives (the dataset's length unless set)."""
        return len(self.data_source) if self._num_samples is None else self._num_samples

    def __iter__(self):
        n = len(self.data_source)
        rng = _numpy_rng(self.generator)
        if self.replacement:
            yield from rng.integers(0, n, size=self.num_samples).tolist()
            return
        for _ in range(self.num_samples // n):
            yield from rng.permutation(n).tolist()
        yield from rng.permutation(n)[:self.num_samples % n].tolist()

    def __len__(self):
        return self.num_samples


class SubsetRandomSampler(Sampler):
    """The given indices in a random order, a new one each iteration
    (torch.utils.data.SubsetRandomSampler)."""

    def __init__(self, indices, generator=None):
        self.indices = indices
        self.generator = generator

    def __iter__(self):
        for i in _numpy_rng(self.generator).permutation(len(self.indices)).tolist():
            yield self.indices[i]

    def __len__(self):
        return len(self.indices)


def _check_batching(op, batch_size, drop_last):
    if not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0:
        raise ValueError("%s: batch_size should be a positive integer value, but got "
                         "batch_size=%r" % (op, batch_size))
    if not isinstance(drop_last, bool):
        raise ValueError("%s: drop_last should be a boolean value, but got drop_last=%r"
                         % (op, drop_last))


class BatchSampler(Sampler):
    """Lists of batch_size indices from `sampler`, the last one shorter
    unless drop_last (torch.utils.data.BatchSampler)."""

    def __init__(self, sampler, batch_size, drop_last):
        _check_batching("BatchSampler", batch_size, drop_last)
        self.sampler = sampler
        self.batch_size = batch_size
        self.drop_last = drop_last

    def __iter__(self):
        batch = []
        for index in self.sampler:
            batch.append(index)
            if len(batch) == self.batch_size:
                yield batch
                batch = []
        if batch and not self.drop_last:
            yield batch

    def __len__(self):
        if self.drop_last:
            return len(self.sampler) // self.batch_size
        return (len(self.sampler) + self.batch_size - 1) // self.batch_size


# Collation -------------------------------------------------------------------

_COLLATE_ERROR = ("default_collate: batch must contain harp tensors, NumPy arrays, "
                  "numbers, dicts or lists; found %s")


def _strings_or_objects(array):
    return array.dtype.kind in "USO"


def default_collate(batch):
    """Merges a list of samples into a batch, as torch's default_collate:
    harp tensors are stacked (harp.stack, a new first dim), NumPy arrays
    stacked into a tensor of their dtype, NumPy scalars made a tensor,
    Python floats a float64 tensor and ints (bools) an int64 (bool) tensor;
    strings stay a list; dicts, namedtuples, tuples and lists are merged
    field by field (a tuple gives a list)."""
    from .._ops import stack
    elem = batch[0]
    if isinstance(elem, Tensor):
        return stack(batch, 0)
    if isinstance(elem, np.ndarray):
        if _strings_or_objects(elem):
            raise TypeError(_COLLATE_ERROR % elem.dtype)
        return _harp.from_numpy(np.stack(batch), "cpu")
    if isinstance(elem, (np.bool_, np.number, np.object_)):
        array = np.asarray(batch)
        if _strings_or_objects(array):
            raise TypeError(_COLLATE_ERROR % array.dtype)
        return _harp.from_numpy(array, "cpu")
    if isinstance(elem, float):
        return _harp.from_numpy(np.asarray(batch, dtype=np.float64), "cpu")
    if isinstance(elem, int):
        array = np.asarray(batch)
        if array.dtype == np.float64:  # a float among the ints: torch's float32
            array = array.astype(np.float32)
        return _harp.from_numpy(array, "cpu")
    if isinstance(elem, (str, bytes)):
        return batch
    if isinstance(elem, collections.abc.Mapping):
        merged = {key: default_collate([d[key] for d in batch]) for key in elem}
        try:
            return type(elem)(merged)
        except TypeError:  # a mapping type that cannot be built from a dict
            return merged
    if isinstance(elem, tuple) and hasattr(elem, "_fields"):  # a namedtuple
        return type(elem)(*(default_collate(s) for s in zip(*batch)))
    if isinstance(elem, collections.abc.Sequence):
        size = len(elem)
        if any(len(sample) != size for sample in batch):
            raise RuntimeError("default_collate: each element in list of batch should "
                               "be of equal size")
        merged = [default_collate(s) for s in zip(*batch)]
        if isinstance(elem, tuple):
            return merged
        try:
            return type(elem)(merged)
        except TypeError:  # a sequence type that cannot be built from a list
            return merged
    raise TypeError(_COLLATE_ERROR % type(elem))


def default_convert(data):
    """What a DataLoader without batching (batch_size=None) does to each
    sample, as torch's default_convert: NumPy arrays and scalars become harp
    tensors (string and object arrays stay), containers are converted
    element by element (a tuple gives a list), anything else stays."""
    if isinstance(data, Tensor):
        return data
    if isinstance(data, np.ndarray):
        return data if _strings_or_objects(data) else _harp.from_numpy(data, "cpu")
    if isinstance(data, (np.bool_, np.number)):
        return _harp.from_numpy(np.asarray(data), "cpu")
    if isinstance(data, collections.abc.Mapping):
        converted = {key: default_convert(data[key]) for key in data}
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    if isinstance(data, tuple) and hasattr(data, "_fields"):
        return type(data)(*(default_convert(d) for d in data))
    if isinstance(data, tuple):
        return [default_convert(d) for d in data]
    if isinstance(data, collections.abc.Sequence) and not isinstance(data, (str, bytes)):
        converted = [default_convert(d) for d in data]
        try:
            return type(data)(converted)
        except TypeError:
            return converted
    return data


def get_worker_info():
    """None: harp's DataLoader loads in the calling process."""
    return None


# The loader --------------------------------------------------------------------


class DataLoader:
    """Batches of a dataset (torch.utils.data.DataLoader): `batch_size`
    samples at a time (None: single samples, not batched), in order or
    reshuffled every epoch (`shuffle`, drawing from `generator`), or in the
    order of a `sampler` / `batch_sampler`; `drop_last` drops a last
    incomplete batch; `collate_fn` merges the samples (default_collate).
    The worker arguments are accepted and ignored (one process)."""

    def __init__(self, dataset, batch_size=1, shuffle=None, sampler=None,
                 batch_sampler=None, num_workers=0, collate_fn=None,
                 pin_memory=False, drop_last=False, timeout=0,
                 worker_init_fn=None, multiprocessing_context=None,
                 generator=None, *, prefetch_factor=2, persistent_workers=False,
                 pin_memory_device=""):
        if not isinstance(num_workers, int) or num_workers < 0:
            raise ValueError("DataLoader: num_workers option should be a non-negative "
                             "int, got %r" % (num_workers,))
        if timeout < 0:
            raise ValueError("DataLoader: timeout option should be non-negative")
        if persistent_workers and num_workers == 0:
            raise ValueError("DataLoader: persistent_workers option needs num_workers > 0")
        iterable = isinstance(dataset, IterableDataset)
        if iterable:
            for name, value in (("shuffle", shuffle), ("sampler", sampler),
                                ("batch_sampler", batch_sampler)):
                if value not in (None, False):
                    raise ValueError("DataLoader with IterableDataset: expected "
                                     "unspecified %s option, but got %s=%r"
                                     % (name, name, value))
        else:
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("DataLoader: sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError("DataLoader: batch_sampler option is mutually exclusive "
                                 "with batch_size, shuffle, sampler, and drop_last")
            batch_size, drop_last = None, False
        elif batch_size is None and drop_last:
            raise ValueError("DataLoader: batch_size=None option disables auto-batching "
                             "and is mutually exclusive with drop_last")
        if sampler is None and not iterable:
            sampler = RandomSampler(dataset, generator=generator) if shuffle \
                else SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None and not iterable:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)
        if iterable and batch_size is not None:
            _check_batching("DataLoader", batch_size, drop_last)
        self.dataset = dataset
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.num_workers = num_workers
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.multiprocessing_context = multiprocessing_context
        self.prefetch_factor = prefetch_factor
        self.persistent_workers = persistent_workers
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None or (
            isinstance(self.dataset, IterableDataset) and self.batch_size is not None)

    def __iter__(self):
        if isinstance(self.dataset, IterableDataset):
            return self._iterate_stream()
        if self.batch_sampler is None:
            return (self.collate_fn(self.dataset[i]) for i in self.sampler)
        return self._iterate_batches()

    def _iterate_batches(self):
        for indices in self.batch_sampler:
            batch = None
            if self.collate_fn is default_collate:
                batch = _batch_of(self.dataset, indices)
            if batch is None:
                batch = self.collate_fn([self.dataset[i] for i in indices])
            yield batch

    def _iterate_stream(self):
        if self.batch_size is None:
            for sample in self.dataset:
                yield self.collate_fn(sample)
            return
        batch = []
        for sample in self.dataset:
            batch.append(sample)
            if len(batch) == self.batch_size:
                yield self.collate_fn(batch)
                batch = []
        if batch and not self.drop_last:
            yield self.collate_fn(batch)

    def __len__(self):
        if isinstance(self.dataset, IterableDataset):
            n = len(self.dataset)
            if self.batch_size is None:
                return n
            if self.drop_last:
                return n // self.batch_size
            return (n + self.batch_size - 1) // self.batch_size
        if self.batch_sampler is not None:
            return len(self.batch_sampler)
        return len(self.sampler)
