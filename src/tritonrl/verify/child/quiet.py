"""Memory the watch did not see written must not change: keyed checksums of storages (candidate child).

The shadows (``witness.py``) keep a copy of every storage the watch saw written in a forward. The rest
of what a forward handles is *quiet*: the inputs (the arena), the parameters, data made before the forward (a
buffer from ``__init__``, a cache from an earlier call). Native code handed a raw address (numpy through an
``__array_interface__`` naming ``x.data_ptr()``) can write there with no aten op and no launch; a kernel reading it
then computes from data nobody saw made. So each quiet storage has a checksum, keyed with a secret of this child
(a weight per byte position, a hash of the position and the key: no change cancels without the key):

- taken when a storage is first handed to a launch in a forward, or when the watch writes it (a launch into an
  input, as a task that mutates its input does), and, for what survives a phase, when the phase ends
  (``origins.Origins.absorb``);
- compared before every launch and at the end of the forward, and when a storage made earlier is met again
  (``Origins.recall``: changed since, it is ``FOREIGN``).

Correctness forwards and the model's constructions only: a timed call does no device work outside its kernels.
"""

from __future__ import annotations

import secrets

import torch

_empty = torch.empty
_zeros = torch.zeros
_arange = torch.arange
_set = torch.Tensor.set_
_untyped_storage = torch.Tensor.untyped_storage
_from_weak = torch.UntypedStorage._new_with_weak_ptr
CHUNK_WORDS = 1 << 22  # int32 words per chunk: one chunk's weights (32 MiB of int64) are made once per device
MIN_WEIGHTS = 1 << 12  # the fewest weights made at once (a grown set replaces the smaller)
GROUP_CHUNKS = 4       # chunks hashed at a time (bounds the temporary int64 copies: 128 MiB)
CHUNK_SALT = 1 << 40   # chunk indices hash as positions no chunk has
_KEY = [secrets.randbits(62) | 1 for _ in range(3)]  # this child's secret, drawn before the candidate is imported
_CHUNK_WEIGHTS: dict[torch.device, torch.Tensor] = {}  # kept on the device, as the per-call weights' freed blocks
                                                       # were: a kernel reading memory at computed addresses could
                                                       # find either (docs/verifier.md, "quiet memory")


def checksum(t: torch.Tensor | torch.UntypedStorage) -> tuple[int, bytes]:
    """(keyed sum of the 32-bit words of the whole storage of ``t`` (a tensor or a storage), its last bytes that
    make no whole word). Word ``i`` of chunk ``c`` weighs ``w[i] * k[c]`` (both keyed hashes, odd: the weight of
    a position is still unknown without the key); ``w`` is made once per device, as long as the longest storage so
    far needs (a power of two words, at most a chunk), so a storage costs three passes over its words and one
    synchronization (a KernelBench GEMM's watched forward spent 24 ms of 61 on checksums, ten passes each and one
    synchronization per 16 M words: docs/benchmarks-history.md). A whole chunk's ``w`` took 76 ms on the CPU, in
    every candidate's child, whose storages at the CPU's sizes are a few thousand words: 14% of a verdict."""
    storage = t if isinstance(t, torch.UntypedStorage) else _untyped_storage(t)
    flat = _set(_empty(0, dtype=torch.uint8, device=storage.device), storage)
    whole = flat.numel() // 4 * 4
    words = flat[:whole].view(torch.int32)
    weights = _chunk_weights(flat.device, min(words.numel(), CHUNK_WORDS))
    total = _zeros((), dtype=torch.int64, device=flat.device)
    full = words.numel() // CHUNK_WORDS
    for first in range(0, full, GROUP_CHUNKS):
        last = min(full, first + GROUP_CHUNKS)
        block = words[first * CHUNK_WORDS:last * CHUNK_WORDS].view(last - first, CHUNK_WORDS).to(torch.int64)
        total += ((block * weights).sum(dim=1) * _chunk_keys(first, last, flat.device)).sum()
    rest = words[full * CHUNK_WORDS:]
    if rest.numel():
        total += ((rest.to(torch.int64) * weights[:rest.numel()]).sum() * _chunk_keys(full, full + 1, flat.device)).sum()
    tail = flat[whole:]
    return int(total), (bytes(tail.cpu().tolist()) if tail.numel() else b"")


def _chunk_weights(device: torch.device, words: int) -> torch.Tensor:
    """The weights of a chunk's first ``words`` positions at least (a position's weight never depends on how many
    were made)."""
    weights = _CHUNK_WEIGHTS.get(device)
    if weights is None or weights.numel() < words:
        size = min(CHUNK_WORDS, max(MIN_WEIGHTS, 1 << (words - 1).bit_length()))
        weights = _CHUNK_WEIGHTS[device] = _weights(_arange(size, dtype=torch.int64, device=device))
    return weights


def _chunk_keys(first: int, last: int, device: torch.device) -> torch.Tensor:
    return _weights(_arange(CHUNK_SALT + first, CHUNK_SALT + last, dtype=torch.int64, device=device))


def checksum_of_ref(ref) -> tuple[int, bytes] | None:
    """``checksum`` of the storage a ``StorageWeakRef`` points at, or None if it is gone."""
    storage = _from_weak(ref.cdata)
    return None if storage is None else checksum(storage)


def _weights(position: torch.Tensor) -> torch.Tensor:
    """A keyed pseudo-random int64 weight per word position (wrapping arithmetic: deterministic on every device)."""
    h = (position ^ _KEY[0]) * _KEY[1]
    h = h ^ (h >> 29)
    return (h * _KEY[2]) | 1
