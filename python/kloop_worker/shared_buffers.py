"""Buffers the checker allocates and a candidate host maps: the memory of a call, shared.

The checker (the worker) allocates every guarded buffer (tensors.GuardedBuffer) through
``SharedAllocator.empty_u8``, which replaces the backend's:

* numpy, torch on the CPU: a memfd (os.memfd_create) of the buffer's size, mapped here; the host
  maps the same memfd, received over its socket (SCM_RIGHTS). Pages are page-aligned, so the
  data of a guarded buffer (+256 bytes) stays 64-byte aligned in both processes.
* torch on CUDA: a driver allocation of its own, whole 2 MiB pages (cuda_ipc.Allocation), shared
  by its CUDA IPC handle; the host maps exactly that allocation (cuda_ipc.Imported). Never a
  block of torch's caching allocator: its IPC handle would map the whole segment around it.

A buffer is mapped into a host only when an argument set that uses it is first sent there
(reference buffers, pristine copies and spare sets never are). When the checker drops a buffer,
its id is queued and the next request tells each host to drop its mapping (``take_dropped``).

The host side (``HostBuffers``) keeps the mappings by id and builds the candidate's typed views
from (buffer id, byte offset, dtype, shape): the two processes map a buffer at different
addresses, so a view is described by offsets, never by pointers.
"""

from __future__ import annotations

import mmap
import os
import weakref
from typing import Any, Dict, List, Tuple

from .tensors import ELEMENT_BYTES


def _device_index(backend) -> int:
    index = backend.device.index
    return int(index) if index is not None else int(backend.torch.cuda.current_device())


class SharedAllocator:
    """A backend (tensors.NumpyBackend / TorchBackend) whose allocations hosts can map; every
    other attribute is the wrapped backend's."""

    def __init__(self, backend):
        self._backend = backend
        self._next_id = 1
        self._by_address: Dict[int, int] = {}
        self._records: Dict[int, Dict[str, Any]] = {}
        self._dropped: List[int] = []

    def __getattr__(self, name):
        return getattr(self._backend, name)

    @property
    def wrapped(self):
        return self._backend

    # -- allocation -------------------------------------------------------------------------------

    def empty_u8(self, n: int):
        b = self._backend
        buf_id = self._next_id
        self._next_id += 1
        record: Dict[str, Any] = {"bytes": n}
        if getattr(b, "is_cuda", False):
            from . import cuda_ipc

            cuda_ipc.use_device(_device_index(b))
            memory = cuda_ipc.Allocation(n)
            block = memory.tensor(b.torch, b.device)
            record["kind"] = "cuda_ipc"
            record["memory"] = weakref.ref(memory)
            address = int(block.data_ptr())
        else:
            fd = os.memfd_create("kloop-buffer-%d" % buf_id, getattr(os, "MFD_CLOEXEC", 1))
            os.ftruncate(fd, max(n, 1))
            mapping = mmap.mmap(fd, max(n, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            if getattr(b, "is_torch", False):
                block = b.torch.frombuffer(mapping, dtype=b.torch.uint8, count=n) if n else b.torch.empty(0, dtype=b.torch.uint8)
                address = int(block.data_ptr()) if n else -buf_id
            else:
                import numpy as np

                block = np.frombuffer(mapping, dtype=np.uint8, count=n)
                address = int(block.ctypes.data) if n else -buf_id
            record["kind"] = "memfd"
            record["fd"] = fd
        record["address"] = address
        self._by_address[address] = buf_id
        self._records[buf_id] = record
        weakref.finalize(block, self._release, buf_id)
        return block

    def _release(self, buf_id: int) -> None:
        record = self._records.pop(buf_id, None)
        if record is None:
            return
        self._by_address.pop(record["address"], None)
        fd = record.get("fd")
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        self._dropped.append(buf_id)

    # -- what a host needs ----------------------------------------------------------------------

    def id_of(self, block) -> int:
        """The id of a block this allocator returned (never empty: a guarded buffer has its red
        zones)."""
        if getattr(self._backend, "is_torch", False):
            return self._by_address[int(block.data_ptr())]
        return self._by_address[int(block.ctypes.data)]

    def map_request(self, buf_id: int) -> Tuple[Dict[str, Any], List[int]]:
        """The request that maps buffer ``buf_id`` into a host, and the descriptors it carries."""
        r = self._records[buf_id]
        req: Dict[str, Any] = {"op": "map", "buffer": buf_id, "bytes": r["bytes"], "kind": r["kind"]}
        if r["kind"] == "memfd":
            return req, [r["fd"]]
        if "ipc" not in r:
            memory = r["memory"]()
            if memory is None:
                raise KeyError("buffer %d is gone" % buf_id)
            r["ipc"] = memory.export()
        req["ipc"] = r["ipc"]
        return req, []

    def take_dropped(self) -> List[int]:
        out, self._dropped = self._dropped, []
        return out


class HostBuffers:
    """The host's mappings of the checker's buffers, and the candidate's views of them."""

    def __init__(self, backend):
        self.backend = backend
        self.blocks: Dict[int, Any] = {}

    def map(self, req: Dict[str, Any], fds: List[int]) -> None:
        n = int(req["bytes"])
        b = self.backend
        if req["kind"] == "memfd":
            fd = fds[0]
            try:
                mapping = mmap.mmap(fd, max(n, 1), mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            finally:
                for f in fds:
                    os.close(f)
            if b.is_torch:
                block = b.torch.frombuffer(mapping, dtype=b.torch.uint8, count=n) if n else b.torch.empty(0, dtype=b.torch.uint8)
            else:
                import numpy as np

                block = np.frombuffer(mapping, dtype=np.uint8, count=n)
        else:
            from . import cuda_ipc

            cuda_ipc.use_device(_device_index(b))
            block = cuda_ipc.Imported(str(req["ipc"]), n).tensor(b.torch, b.device)
        self.blocks[int(req["buffer"])] = block

    def drop(self, ids: List[int]) -> None:
        for i in ids:
            self.blocks.pop(int(i), None)

    def view(self, buf_id: int, offset: int, dtype: str, shape: List[int]):
        numel = 1
        for d in shape:
            numel *= int(d)
        block = self.blocks[buf_id]
        data = block[offset : offset + numel * ELEMENT_BYTES[dtype]]
        return self.backend.typed_view(data, dtype, list(shape))


class ArgumentViews:
    """One argument set as the host sees it: what candidate.Callee.kwargs / finish read of a
    tensors.CallBuffers (``tensors()`` by name, ``outputs[i].view``)."""

    class _Output:
        def __init__(self, view):
            self.view = view

    def __init__(self, buffers: HostBuffers, inputs: List[Tuple], outputs: List[Tuple], buffer_ids: List[int]):
        self.names_in = [t[0] for t in inputs]
        self.names_out = [t[0] for t in outputs]
        self.buffer_ids = set(buffer_ids)
        self._views = {}
        for name, buf_id, offset, dtype, shape in list(inputs) + list(outputs):
            self._views[name] = buffers.view(buf_id, offset, dtype, shape)
        self.outputs = [self._Output(self._views[n]) for n in self.names_out]

    def tensors(self) -> Dict[str, Any]:
        return dict(self._views)


def describe_arguments(allocator: SharedAllocator, bufs) -> Tuple[List[Tuple], List[Tuple], List[int]]:
    """(inputs, outputs, buffer ids) of a tensors.CallBuffers: per tensor (name, buffer id, byte
    offset of its data, dtype, shape)."""
    ins, outs, ids = [], [], []
    for plans, guarded, into in ((bufs.plan.inputs, bufs.inputs, ins), (bufs.plan.outputs, bufs.outputs, outs)):
        for t, g in zip(plans, guarded):
            buf_id = getattr(g, "shared_buffer_id", None)
            if buf_id is None:
                buf_id = g.shared_buffer_id = allocator.id_of(g.block)
            ids.append(buf_id)
            into.append((t.name, buf_id, g.front, t.dtype, list(t.shape)))
    return ins, outs, ids

