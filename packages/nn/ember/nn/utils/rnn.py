"""Variable-length sequences for recurrent layers (torch.nn.utils.rnn): padding and packing.

Everything is composed of differentiable core ops (cat, stack, indexing); the loops run over
time steps, never over elements.
"""

from __future__ import annotations

from typing import NamedTuple

import ember

__all__ = ["PackedSequence", "pad_sequence", "pack_padded_sequence", "pad_packed_sequence",
           "pack_sequence", "unpad_sequence", "unpack_sequence", "invert_permutation"]


class PackedSequence(NamedTuple):
    """The time-major concatenation of a batch of sequences sorted by decreasing length.

    ``data[sum(batch_sizes[:t]) : sum(batch_sizes[:t+1])]`` are the batch's elements at time
    ``t``; ``batch_sizes`` is an int64 CPU tensor; ``sorted_indices`` / ``unsorted_indices``
    map between the caller's batch order and the sorted one (None when the input was sorted).
    """

    data: ember.Tensor
    batch_sizes: ember.Tensor
    sorted_indices: ember.Tensor | None = None
    unsorted_indices: ember.Tensor | None = None

    def to(self, *args, **kwargs) -> PackedSequence:
        data = self.data.to(*args, **kwargs)
        if data is self.data:
            return self
        # the indices follow the data's device; batch_sizes stays on the CPU (torch's layout)
        sorted_indices, unsorted_indices = (
            None if t is None else t.to(device=data.device)
            for t in (self.sorted_indices, self.unsorted_indices))
        return self._replace(data=data, sorted_indices=sorted_indices,
                             unsorted_indices=unsorted_indices)

    @property
    def is_cuda(self) -> bool:
        return self.data.device.type == "cuda"


def invert_permutation(permutation):
    """The inverse of a 1-d int64 permutation tensor (None stays None)."""
    if permutation is None:
        return None
    perm = [int(i) for i in permutation.tolist()]
    inv = [0] * len(perm)
    for i, j in enumerate(perm):
        inv[j] = i
    return ember.tensor(inv, dtype=permutation.dtype, device=permutation.device)


def _take(x, dim: int, index) -> ember.Tensor:
    """``x.index_select(dim, index)`` composed of select + stack (a loop over the batch)."""
    return ember.stack([x.select(dim, int(i)) for i in index.tolist()], dim)


def _lengths_list(lengths) -> list[int]:
    if isinstance(lengths, ember.Tensor):
        if lengths.dim() != 1:
            raise ValueError(f"lengths must be a 1-d tensor, got shape {tuple(lengths.shape)}")
        return [int(v) for v in lengths.tolist()]
    return [int(v) for v in lengths]


def pad_sequence(sequences, batch_first: bool = False, padding_value: float = 0.0,
                 padding_side: str = "right") -> ember.Tensor:
    """Stack tensors of shape ``(L_i, *)`` into ``(max L, B, *)`` (``(B, max L, *)`` when
    batch_first), filling with ``padding_value`` on ``padding_side``."""
    if padding_side not in ("left", "right"):
        raise ValueError(f"Expected padding_side to be one of left or right, but got "
                         f"{padding_side}.")
    if isinstance(sequences, ember.Tensor):
        sequences = sequences.unbind(0)
    sequences = list(sequences)
    if len(sequences) == 0:
        raise RuntimeError("received an empty list of sequences")
    trailing = tuple(sequences[0].shape[1:])
    for s in sequences:
        if tuple(s.shape[1:]) != trailing:
            raise RuntimeError("The size of tensor a must match the size of tensor b at "
                               f"non-singleton dimension: got {tuple(s.shape)} and "
                               f"{(sequences[0].shape[0],) + trailing}")
    max_len = max(s.shape[0] for s in sequences)
    rows = []
    for s in sequences:
        n = max_len - s.shape[0]
        if n:
            pad = ember.full((n, *trailing), padding_value, dtype=s.dtype, device=s.device)
            s = ember.cat([s, pad] if padding_side == "right" else [pad, s])
        rows.append(s)
    return ember.stack(rows, 0 if batch_first else 1)


def pack_padded_sequence(input, lengths, batch_first: bool = False,
                         enforce_sorted: bool = True) -> PackedSequence:
    """Pack a padded batch ``(T, B, *)`` (``(B, T, *)`` when batch_first) whose sequences have
    the given lengths."""
    lens = _lengths_list(lengths)
    batch_dim = 0 if batch_first else 1
    if len(lens) != input.shape[batch_dim]:
        raise RuntimeError(f"Expected `len(lengths)` to be equal to batch_size, but got "
                           f"{len(lens)} (batch_size={input.shape[batch_dim]})")
    if enforce_sorted:
        if any(a < b for a, b in zip(lens, lens[1:])):
            raise RuntimeError("`lengths` array must be sorted in decreasing order when "
                               "`enforce_sorted` is True. You can pass `enforce_sorted=False` "
                               "to pack_padded_sequence and/or pack_sequence to sidestep this "
                               "requirement if you do not need ONNX exportability.")
        sorted_indices = None
    else:
        order = sorted(range(len(lens)), key=lambda i: -lens[i])
        sorted_indices = ember.tensor(order, dtype=ember.int64, device=input.device)
        lens = [lens[i] for i in order]
        input = _take(input, batch_dim, sorted_indices)
    if lens and lens[-1] <= 0:
        raise RuntimeError("Length of all samples has to be greater than 0, but found an "
                           "element in 'lengths' that is <= 0")
    if batch_first:
        input = input.transpose(0, 1)
    if lens and lens[0] > input.shape[0]:
        raise RuntimeError(f"Expected sequence length to be at most {input.shape[0]}, but got "
                           f"{lens[0]}")
    max_len = lens[0] if lens else 0
    batch_sizes = [sum(1 for n in lens if n > t) for t in range(max_len)]
    data = ember.cat([input[t, :bs] for t, bs in enumerate(batch_sizes)])
    return PackedSequence(data, ember.tensor(batch_sizes, dtype=ember.int64), sorted_indices,
                          invert_permutation(sorted_indices))


def pad_packed_sequence(sequence: PackedSequence, batch_first: bool = False,
                        padding_value: float = 0.0, total_length: int | None = None):
    """The inverse of pack_padded_sequence: ``(padded, lengths)`` with lengths an int64
    tensor in the caller's original batch order."""
    data, batch_sizes = sequence.data, [int(b) for b in sequence.batch_sizes.tolist()]
    max_len = len(batch_sizes)
    if total_length is not None:
        if total_length < max_len:
            raise ValueError("Expected total_length to be at least the length of the longest "
                             f"sequence in input, but got total_length={total_length} and max "
                             f"sequence length being {max_len}")
    else:
        total_length = max_len
    batch = batch_sizes[0] if batch_sizes else 0
    trailing = tuple(data.shape[1:])
    rows, offset = [], 0
    for bs in batch_sizes:
        row = data[offset:offset + bs]
        if bs < batch:
            row = ember.cat([row, ember.full((batch - bs, *trailing), padding_value,
                                             dtype=data.dtype, device=data.device)])
        rows.append(row)
        offset += bs
    for _ in range(total_length - max_len):
        rows.append(ember.full((batch, *trailing), padding_value, dtype=data.dtype,
                               device=data.device))
    out = ember.stack(rows, 0)
    # lengths stay on the CPU, as torch's
    lengths = ember.tensor([sum(1 for b in batch_sizes if b > i) for i in range(batch)],
                           dtype=ember.int64)
    if sequence.unsorted_indices is not None:
        out = _take(out, 1, sequence.unsorted_indices)
        lengths = ember.tensor([lengths.tolist()[i] for i in sequence.unsorted_indices.tolist()],
                               dtype=ember.int64)
    if batch_first:
        out = out.transpose(0, 1)
    return out, lengths


def pack_sequence(sequences, enforce_sorted: bool = True) -> PackedSequence:
    """pad_sequence followed by pack_padded_sequence."""
    lengths = [s.shape[0] for s in sequences]
    return pack_padded_sequence(pad_sequence(sequences), lengths, enforce_sorted=enforce_sorted)


def unpad_sequence(padded_sequences, lengths, batch_first: bool = False):
    """The list of unpadded sequences of a padded batch."""
    if not batch_first:
        padded_sequences = padded_sequences.transpose(0, 1)
    return [padded_sequences[i, :n] for i, n in enumerate(_lengths_list(lengths))]


def unpack_sequence(packed_sequences: PackedSequence):
    """The list of sequences held by a PackedSequence, in the original order."""
    padded, lengths = pad_packed_sequence(packed_sequences, batch_first=True)
    return unpad_sequence(padded, lengths, batch_first=True)
