"""Memory the judge shares with one candidate child: the only place their tensors meet.

    arena = Arena.create(nbytes, "cuda")          # in the judge: memory of its own, nothing else in it
    fd = arena.fd                                 # sent to the child over their socket (SCM_RIGHTS)
    view = Arena.attach(fd, nbytes, "cuda")       # in the child: the same bytes, mapped
    x = view.tensor(offset, torch.float32, (64, 128))

The judge writes a call's inputs into its arena just before that call and reads the outputs back from it; the
child sees nothing of the judge's memory but this. On a GPU the arena is a physical allocation of the CUDA
driver's virtual memory API exported as a POSIX file descriptor (``cuMemCreate`` +
``cuMemExportToShareableHandle``): file descriptors pass between PID namespaces, where the legacy ``cudaIpc``
handles do not, and the allocation lives until both sides released it, so a child that dies cannot pull memory
out from under the judge. On a CPU it is a ``memfd``: the same design, no CUDA.

The driver is reached through ``ctypes`` (``libcuda.so.1``, which every CUDA install has): PyTorch exposes no
export of one allocation as a file descriptor. Tensors over the mapping are made with
``__cuda_array_interface__`` (zero copy); the ``Arena`` must outlive them.
"""

from __future__ import annotations

import ctypes
import fcntl
import mmap
import os
from typing import Any

ALIGN = 256  # bytes: every slot starts at a multiple of this (any dtype's alignment, and coalesced)

# CUDA driver enums (cuda.h)
_CU_MEM_ALLOCATION_TYPE_PINNED = 1
_CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR = 1
_CU_MEM_LOCATION_TYPE_DEVICE = 1
_CU_MEM_ALLOC_GRANULARITY_MINIMUM = 0
_CU_MEM_ACCESS_FLAGS_PROT_READWRITE = 3


class _Location(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("id", ctypes.c_int)]


class _AllocFlags(ctypes.Structure):
    _fields_ = [("compressionType", ctypes.c_ubyte), ("gpuDirectRDMACapable", ctypes.c_ubyte),
                ("usage", ctypes.c_ushort), ("reserved", ctypes.c_ubyte * 4)]


class _AllocProp(ctypes.Structure):
    _fields_ = [("type", ctypes.c_int), ("requestedHandleTypes", ctypes.c_int), ("location", _Location),
                ("win32HandleMetaData", ctypes.c_void_p), ("allocFlags", _AllocFlags)]


class _AccessDesc(ctypes.Structure):
    _fields_ = [("location", _Location), ("flags", ctypes.c_int)]


class CudaError(RuntimeError):
    """A CUDA driver call of the arena failed (its name and the driver's error code)."""


_DRIVER: Any = None


def _driver() -> Any:
    global _DRIVER
    if _DRIVER is None:
        _DRIVER = ctypes.CDLL("libcuda.so.1")
    return _DRIVER


def _check(name: str, *args: Any) -> None:
    fn = getattr(_driver(), name)
    code = fn(*args)
    if code != 0:
        raise CudaError(f"{name} failed with CUDA driver error {code}")


def _device_ordinal() -> int:
    """The current device's ordinal, with its primary context current on this thread (via PyTorch)."""
    import torch

    index = torch.cuda.current_device()
    torch.cuda.set_device(index)  # makes the primary context current for driver calls on this thread
    return index


def _prop(device: int) -> _AllocProp:
    prop = _AllocProp()
    prop.type = _CU_MEM_ALLOCATION_TYPE_PINNED
    prop.requestedHandleTypes = _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR
    prop.location = _Location(_CU_MEM_LOCATION_TYPE_DEVICE, device)
    return prop


def _granularity(prop: _AllocProp) -> int:
    size = ctypes.c_size_t()
    _check("cuMemGetAllocationGranularity", ctypes.byref(size), ctypes.byref(prop),
           _CU_MEM_ALLOC_GRANULARITY_MINIMUM)
    return size.value


def _round_up(n: int, step: int) -> int:
    return (n + step - 1) // step * step


class _CudaArrayInterface:
    """Bytes at a device address, as ``torch.as_tensor`` reads them (keeps ``owner``, the arena, alive; also the
    child's guards past a storage, ``child/guards.py``, which own nothing)."""

    def __init__(self, ptr: int, nbytes: int, owner: Arena | None = None) -> None:
        self.owner = owner
        self.__cuda_array_interface__ = {"shape": (nbytes,), "typestr": "|u1", "data": (ptr, False),
                                         "version": 3, "strides": None}


class Arena:
    """A block of ``nbytes`` shared between the judge and one child; ``tensor`` views slices of it."""

    def __init__(self, device: str, nbytes: int, fd: int, base: Any, release: Any) -> None:
        self.device, self.nbytes, self.fd = device, nbytes, fd
        self._base = base          # a uint8 tensor over the whole arena
        self._release = release    # what frees the mapping (and the allocation, on the judge's side)
        self.closed = False

    # ------------------------------------------------------------ both sides
    def tensor(self, offset: int, dtype: Any, shape: tuple[int, ...] | list[int]) -> Any:
        """A tensor of ``dtype`` and ``shape`` over the arena's bytes at ``offset`` (contiguous, no copy)."""
        import torch

        numel = 1
        for d in shape:
            numel *= int(d)
        nbytes = numel * torch.empty((), dtype=dtype).element_size()
        if offset < 0 or offset % ALIGN or offset + nbytes > self.nbytes:
            raise ValueError(f"slot [{offset}, {offset + nbytes}) is not inside the arena of {self.nbytes} bytes")
        return self._base[offset:offset + nbytes].view(dtype).view(tuple(int(d) for d in shape))

    def close(self) -> None:
        """Release the mapping (tensors over it must no longer be used) and the file descriptor."""
        if self.closed:
            return
        self.closed = True
        self._base = None
        self._release()

    # ------------------------------------------------------------ the judge
    @classmethod
    def create(cls, nbytes: int, device: str) -> Arena:
        """New memory of at least ``nbytes`` (rounded up to the allocation granularity) on ``device``."""
        nbytes = max(ALIGN, _round_up(nbytes, ALIGN))
        if device == "cpu":
            fd = os.memfd_create("tritonrl-arena", os.MFD_CLOEXEC | os.MFD_ALLOW_SEALING)
            os.ftruncate(fd, nbytes)
            # Its size is fixed for good: a child holding the fd cannot shrink it under the judge's mapping
            # (a read there would be a SIGBUS in the judge, with every other candidate's session in it).
            fcntl.fcntl(fd, fcntl.F_ADD_SEALS, fcntl.F_SEAL_SHRINK | fcntl.F_SEAL_GROW | fcntl.F_SEAL_SEAL)
            return cls._map_cpu(fd, nbytes)
        ordinal = _device_ordinal()
        prop = _prop(ordinal)
        nbytes = _round_up(nbytes, _granularity(prop))
        handle = ctypes.c_ulonglong()
        _check("cuMemCreate", ctypes.byref(handle), ctypes.c_size_t(nbytes), ctypes.byref(prop),
               ctypes.c_ulonglong(0))
        try:
            fd = ctypes.c_int(-1)
            _check("cuMemExportToShareableHandle", ctypes.byref(fd), handle,
                   _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, ctypes.c_ulonglong(0))
            arena = cls._map_cuda(handle, nbytes, ordinal, fd.value)
        finally:
            _check("cuMemRelease", handle)  # the mapping (and the child's, later) keep the memory alive
        return arena

    # ------------------------------------------------------------ the child
    @classmethod
    def attach(cls, fd: int, nbytes: int, device: str) -> Arena:
        """Map the arena the judge made, from the file descriptor it sent."""
        if device == "cpu":
            return cls._map_cpu_closing(fd, nbytes)
        ordinal = _device_ordinal()
        handle = ctypes.c_ulonglong()
        _check("cuMemImportFromShareableHandle", ctypes.byref(handle), ctypes.c_void_p(fd),
               _CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)
        try:
            arena = cls._map_cuda(handle, nbytes, ordinal, fd)
        finally:
            _check("cuMemRelease", handle)
        return arena

    # ------------------------------------------------------------ mapping
    @classmethod
    def _map_cpu(cls, fd: int, nbytes: int) -> Arena:
        import torch

        region = mmap.mmap(fd, nbytes, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        base = torch.frombuffer(region, dtype=torch.uint8, count=nbytes)

        def release() -> None:
            try:
                region.close()
            except BufferError:  # a tensor still exports the buffer: the mapping goes with the process
                pass
            os.close(fd)
        return cls("cpu", nbytes, fd, base, release)

    @classmethod
    def _map_cpu_closing(cls, fd: int, nbytes: int) -> Arena:
        """The child's mapping of the judge's memfd, its descriptor closed at once: with no descriptor left (Python's
        ``mmap`` would keep a duplicate) the candidate cannot map the memfd again, executable: a file it could
        write, outside every ``noexec`` mount."""
        import torch

        libc = ctypes.CDLL(None, use_errno=True)
        libc.mmap.restype = ctypes.c_void_p
        libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int,
                              ctypes.c_long]
        try:
            addr = libc.mmap(None, nbytes, mmap.PROT_READ | mmap.PROT_WRITE, mmap.MAP_SHARED, fd, 0)
        finally:
            os.close(fd)
        if addr in (None, ctypes.c_void_p(-1).value):
            raise OSError(ctypes.get_errno(), "mapping the arena failed")
        base = torch.frombuffer((ctypes.c_uint8 * nbytes).from_address(addr), dtype=torch.uint8, count=nbytes)

        def release() -> None:
            pass  # views of it may outlive the arena (the candidate's own references): it goes with the process
        return cls("cpu", nbytes, -1, base, release)

    @classmethod
    def _map_cuda(cls, handle: ctypes.c_ulonglong, nbytes: int, ordinal: int, fd: int) -> Arena:
        import torch

        ptr = ctypes.c_ulonglong()
        _check("cuMemAddressReserve", ctypes.byref(ptr), ctypes.c_size_t(nbytes), ctypes.c_size_t(0),
               ctypes.c_ulonglong(0), ctypes.c_ulonglong(0))
        try:
            _check("cuMemMap", ptr, ctypes.c_size_t(nbytes), ctypes.c_size_t(0), handle, ctypes.c_ulonglong(0))
            access = _AccessDesc(_Location(_CU_MEM_LOCATION_TYPE_DEVICE, ordinal), _CU_MEM_ACCESS_FLAGS_PROT_READWRITE)
            _check("cuMemSetAccess", ptr, ctypes.c_size_t(nbytes), ctypes.byref(access), ctypes.c_size_t(1))
        except CudaError:
            _driver().cuMemAddressFree(ptr, ctypes.c_size_t(nbytes))
            raise
        arena: Arena | None = None

        def release() -> None:
            torch.cuda.synchronize()  # no kernel of this process may still use the mapping
            _driver().cuMemUnmap(ptr, ctypes.c_size_t(nbytes))
            _driver().cuMemAddressFree(ptr, ctypes.c_size_t(nbytes))
            os.close(fd)

        arena = cls(f"cuda:{ordinal}", nbytes, fd, None, release)
        arena._base = torch.as_tensor(_CudaArrayInterface(ptr.value, nbytes, arena), device=f"cuda:{ordinal}")
        return arena


class Layout:
    """Where each tensor of a call sits in an arena: slots laid out one after another, each aligned."""

    def __init__(self) -> None:
        self.slots: list[dict[str, Any]] = []
        self.nbytes = 0

    def add(self, dtype_name: str, shape: list[int], itemsize: int) -> dict[str, Any]:
        numel = 1
        for d in shape:
            numel *= int(d)
        slot = {"offset": self.nbytes, "dtype": dtype_name, "shape": [int(d) for d in shape]}
        self.slots.append(slot)
        self.nbytes += _round_up(max(1, numel * itemsize), ALIGN)
        return slot


FINGERPRINT_CHUNK = 1 << 22  # words per step: bounded int64 temporaries on any output size


def fingerprint(t: Any) -> str:
    """A position-sensitive checksum of a tensor's bytes, computed on its own device (both sides compute it the
    same way: the child on its output, the judge on the arena slot the output was copied into). The bytes are
    read as 32-bit words where their count allows (else bytes): a quarter of the elements to weigh."""
    import torch

    # through the class's own method, never the tensor's attribute: an output's own ``detach`` (a candidate's
    # callable) ran here, after the watch closed (the thirty-ninth red team; ``overrides.tensor_overrides``)
    flat = torch._C.TensorBase.detach(t).contiguous().reshape(-1).view(torch.uint8)
    if flat.numel() % 4 == 0 and flat.numel():
        flat = flat.view(torch.int32)
    sums = torch.zeros(2, dtype=torch.int64, device=flat.device)  # [words, position-weighted words]
    for start in range(0, flat.numel(), FINGERPRINT_CHUNK):
        chunk = flat[start:start + FINGERPRINT_CHUNK].to(torch.int64)
        weights = torch.arange(start, start + chunk.numel(), device=chunk.device, dtype=torch.int32) % 65521 + 1
        sums += torch.stack([chunk.sum(), (chunk * weights).sum()])  # wraps mod 2**64: exact in any order
    total, weighted = sums.tolist()  # one synchronization, whatever the size
    return f"{flat.numel()}:{flat.element_size()}:{total}:{weighted}"
