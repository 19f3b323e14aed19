"""Guarded, poisoned tensors for one call, on numpy or torch: the Python twin of
src/check/guarded_buffer and src/runner/call_buffers.

Every tensor is one allocation of bytes laid out as kloop's guarded_buffer lays it out::

    [ front red zone (256 B) | data | back red zone (256 B) ]

with the same canary pattern (byte k of a zone is 0x80 | ((29 k + phase) mod 127), phases 0x35
front and 0x4A back), the data 64-byte aligned and the back zone starting at the first byte past
the data. The candidate gets a typed, shaped *view* of the data only; after the call the zones are
compared with the pattern and the first damaged byte is reported as an offset from the data's
first byte (negative: before it), exactly as the native runner reports it. Outputs are poisoned
before every call (canonical quiet NaN for floats, 0xFF bytes for integers); inputs keep a
pristine copy so that a modified input is found byte for byte.

Backends: ``numpy`` (host arrays; bf16 needs the ml_dtypes package) and ``torch`` (tensors on
"cuda", or on "cpu" when no GPU is visible, e.g. for TRITON_INTERPRET=1).
"""

from __future__ import annotations

from typing import Dict, List, Optional

import numpy as np

from . import inits, scattered_draws
from .protocol import CallPlan, TensorPlan, derive_seed

REDZONE_BYTES = 256
ALIGNMENT = 64
FRONT_PHASE = 0x35
BACK_PHASE = 0x4A

ELEMENT_BYTES = {"f32": 4, "f64": 8, "f16": 2, "bf16": 2, "i32": 4, "i64": 8}
FLOAT_DTYPES = ("f32", "f64", "f16", "bf16")
# The poison of each dtype as the bit pattern of a same-width integer (guarded_buffer::poison).
POISON_BITS = {"f16": 0x7E00, "bf16": 0x7FC0, "f32": 0x7FC00000, "f64": 0x7FF8000000000000}
_INT_OF_WIDTH = {2: np.int16, 4: np.int32, 8: np.int64}


def _equal_bytes_np(a: np.ndarray, b: np.ndarray) -> bool:
    """Two contiguous byte arrays compared, as 8-byte words when the size allows (faster)."""
    if a.size != b.size:
        return False
    if a.size % 8 == 0:
        a, b = a.view(np.uint64), b.view(np.uint64)
    return bool((a == b).all())


def canary(n: int, phase: int) -> np.ndarray:
    k = np.arange(n, dtype=np.int64)
    return (0x80 | ((k * 29 + phase) % 0x7F)).astype(np.uint8)


def front_bytes() -> int:
    return (REDZONE_BYTES + ALIGNMENT - 1) // ALIGNMENT * ALIGNMENT


_FRONT = canary(front_bytes(), FRONT_PHASE)
_BACK = canary(REDZONE_BYTES, BACK_PHASE)


def _signed_bits(value: int, width: int) -> int:
    """An unsigned bit pattern as the signed integer of the same width (for fill())."""
    bits = width * 8
    return value - (1 << bits) if value >= (1 << (bits - 1)) else value


def f64_to_bf16_bits(values: np.ndarray) -> np.ndarray:
    """Round to nearest even bf16 (through f32), NaN to the canonical 0x7FC0; uint16 bits.

    In uint32, in place on one temporary: a 67M-element tensor is converted in ~1 s, where the
    uint64 form with np.where took ~7 s (it dominated the Python worker's input generation on
    the H200's large shapes). Only NaN bit patterns can wrap around in uint32, and those are
    replaced afterwards, so the bits are the same as the uint64 form's."""
    f = np.asarray(values, dtype=np.float32)
    bits = f.view(np.uint32)
    r = np.right_shift(bits, 16)
    r &= 1
    r += bits
    r += 0x7FFF
    r >>= 16
    out = r.astype(np.uint16)
    nan = np.isnan(f)
    if nan.any():
        out[nan] = 0x7FC0
    return out


def bf16_bits_to_f64(bits: np.ndarray) -> np.ndarray:
    return (bits.astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def host_bytes(dtype: str, values: np.ndarray) -> np.ndarray:
    """Generated values (float64 or int64) stored in ``dtype``, as raw little-endian bytes."""
    if dtype == "f32":
        typed = np.asarray(values, dtype=np.float64).astype(np.float32)
    elif dtype == "f64":
        typed = np.asarray(values, dtype=np.float64)
    elif dtype == "f16":
        typed = np.asarray(values, dtype=np.float64).astype(np.float16)
    elif dtype == "bf16":
        typed = f64_to_bf16_bits(values)
    elif dtype == "i32":
        typed = inits.to_integer(np.asarray(values), 32).astype(np.int32)
    elif dtype == "i64":
        typed = inits.to_integer(np.asarray(values), 64).astype(np.int64)
    else:
        raise ValueError("unknown dtype '%s'" % dtype)
    return np.ascontiguousarray(typed).view(np.uint8).reshape(-1)


# ---- array backends --------------------------------------------------------------------------


class NumpyBackend:
    """Host arrays. The candidate gets numpy views; bf16 views need ml_dtypes."""

    name = "numpy"
    is_torch = False
    is_cuda = False

    def __init__(self):
        self._bf16 = None
        try:
            import ml_dtypes  # type: ignore

            self._bf16 = np.dtype(ml_dtypes.bfloat16)
        except Exception:
            self._bf16 = None

    def describe(self) -> Dict[str, object]:
        return {"tensors": "numpy", "numpy": np.__version__, "bf16": "ml_dtypes" if self._bf16 is not None else None}

    def check_dtype(self, dtype: str) -> None:
        if dtype == "bf16" and self._bf16 is None:
            raise RuntimeError(
                "bf16 tensors as numpy arrays need the ml_dtypes package (pip install ml_dtypes), "
                "or run the op with torch tensors ([python] device = \"cuda\")"
            )

    def np_dtype(self, dtype: str):
        if dtype == "bf16":
            self.check_dtype(dtype)
            return self._bf16
        return {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i32": np.int32, "i64": np.int64}[dtype]

    def empty_u8(self, n: int):
        raw = np.empty(n + ALIGNMENT, dtype=np.uint8)
        off = (-raw.ctypes.data) % ALIGNMENT
        return raw[off : off + n]

    def upload(self, dst, host_u8: np.ndarray) -> None:
        dst[...] = host_u8

    def generate_on_device(self, init, view, seed: int) -> bool:
        return False  # host arrays: inits.generate is the path

    def typed_view(self, data_u8, dtype: str, shape: List[int]):
        return data_u8.view(self.np_dtype(dtype)).reshape(tuple(shape))

    def poison_view(self, data_u8, dtype: str):
        """(view, value): writing ``value`` over ``view`` poisons the data (canonical quiet NaN
        for floats, 0xFF bytes for integers); made once per buffer."""
        if dtype in POISON_BITS:
            width = ELEMENT_BYTES[dtype]
            return data_u8.view(_INT_OF_WIDTH[width]), _signed_bits(POISON_BITS[dtype], width)
        return data_u8, 0xFF

    def fill(self, view, value: int) -> None:
        view[...] = value

    def copy(self, dst, src) -> None:
        dst[...] = src

    def clone(self, x):
        return x.copy()

    def first_difference(self, a, b) -> int:
        if np.array_equal(a, b):
            return -1
        return int(np.argmax(a != b))

    def first_mismatch(self, a, pattern: np.ndarray) -> int:
        return self.first_difference(a, pattern)

    def all_equal(self, pairs) -> bool:
        """Whether every (a, b) pair of byte arrays is equal."""
        return all(_equal_bytes_np(a, b) for a, b in pairs)

    def concat(self, parts):
        return np.concatenate(parts)

    def scatter_bytes(self, data_u8, byte_index: np.ndarray, values_u8: np.ndarray) -> None:
        data_u8[byte_index] = values_u8

    def pattern(self, which: str):
        return _FRONT if which == "front" else _BACK

    def to_host(self, x) -> np.ndarray:
        return x

    def as_f64(self, data_u8, dtype: str):
        if dtype == "bf16":
            return bf16_bits_to_f64(data_u8.view(np.uint16))
        return data_u8.view(self.np_dtype(dtype)).astype(np.float64)

    def synchronize(self) -> None:
        pass


class TorchBackend:
    """torch tensors on ``device`` ("cuda" or "cpu")."""

    is_torch = True

    def __init__(self, torch_module, device: str):
        self.torch = torch_module
        self.device = torch_module.device(device)
        self.is_cuda = self.device.type == "cuda"
        self.name = "torch-" + self.device.type
        t = torch_module
        self._dtypes = {"f32": t.float32, "f64": t.float64, "f16": t.float16, "bf16": t.bfloat16, "i32": t.int32, "i64": t.int64}
        self._ints = {2: t.int16, 4: t.int32, 8: t.int64}
        self._patterns = {
            "front": t.from_numpy(_FRONT.copy()).to(self.device),
            "back": t.from_numpy(_BACK.copy()).to(self.device),
        }

    def describe(self) -> Dict[str, object]:
        d: Dict[str, object] = {"tensors": self.name, "torch": self.torch.__version__, "numpy": np.__version__}
        if self.is_cuda:
            d["cuda_runtime"] = getattr(self.torch.version, "cuda", None)
        return d

    def check_dtype(self, dtype: str) -> None:
        pass

    def torch_dtype(self, dtype: str):
        return self._dtypes[dtype]

    def empty_u8(self, n: int):
        # The caching allocator aligns blocks to 512 bytes: the data (at +256) is 64-byte aligned.
        return self.torch.empty(n, dtype=self.torch.uint8, device=self.device)

    def upload(self, dst, host_u8: np.ndarray) -> None:
        dst.copy_(self.torch.from_numpy(np.ascontiguousarray(host_u8)))

    def generate_on_device(self, init, view, seed: int) -> bool:
        """On a GPU: ``init`` drawn into ``view`` by torch's generator there (inits.generate_torch).
        On the CPU the host path stays, so torch-cpu runs see the numpy backend's values."""
        return self.is_cuda and inits.generate_torch(init, view.view(-1), seed)

    def typed_view(self, data_u8, dtype: str, shape: List[int]):
        return data_u8.view(self._dtypes[dtype]).view(tuple(shape))

    def poison_view(self, data_u8, dtype: str):
        if dtype in POISON_BITS:
            width = ELEMENT_BYTES[dtype]
            return data_u8.view(self._ints[width]), _signed_bits(POISON_BITS[dtype], width)
        return data_u8, 0xFF

    def fill(self, view, value: int) -> None:
        view.fill_(value)

    def copy(self, dst, src) -> None:
        dst.copy_(src)

    def clone(self, x):
        return x.clone()

    def first_difference(self, a, b) -> int:
        if self.torch.equal(a, b):
            return -1
        return int((a != b).to(self.torch.uint8).argmax().item())

    def first_mismatch(self, a, pattern) -> int:
        return self.first_difference(a, pattern)

    def _wide(self, a, b):
        t = self.torch
        if a.numel() == b.numel() and a.numel() % 8 == 0 and a.storage_offset() % 8 == 0 and \
                b.storage_offset() % 8 == 0:
            return a.view(t.int64), b.view(t.int64)
        return a, b

    def all_equal(self, pairs) -> bool:
        """Whether every (a, b) pair of byte tensors is equal: compared on the device as 8-byte
        words where the layout allows, with one host synchronisation for all pairs."""
        t = self.torch
        if not pairs:
            return True
        flags = []
        for a, b in pairs:
            if a.numel() != b.numel():
                return False
            wa, wb = self._wide(a, b)
            flags.append(wa.ne(wb).any())
        return not bool(t.stack(flags).any().item())

    def concat(self, parts):
        return self.torch.cat(parts)

    def scatter_bytes(self, data_u8, byte_index: np.ndarray, values_u8: np.ndarray) -> None:
        t = self.torch
        idx = t.from_numpy(np.ascontiguousarray(byte_index, dtype=np.int64)).to(self.device)
        data_u8[idx] = t.from_numpy(np.ascontiguousarray(values_u8)).to(self.device)

    def pattern(self, which: str):
        return self._patterns[which]

    def to_host(self, x) -> np.ndarray:
        return x.detach().cpu().numpy()

    def as_f64(self, data_u8, dtype: str):
        return data_u8.view(self._dtypes[dtype]).to(self.torch.float64)

    def synchronize(self) -> None:
        if self.is_cuda:
            self.torch.cuda.synchronize()


# ---- one guarded tensor -------------------------------------------------------------------------


class GuardedBuffer:
    def __init__(self, backend, plan: TensorPlan):
        backend.check_dtype(plan.dtype)
        self.backend = backend
        self.plan = plan
        self.dtype = plan.dtype
        self.elem = ELEMENT_BYTES[plan.dtype]
        self.numel = plan.numel
        self.nbytes = self.numel * self.elem
        self.front = front_bytes()
        self.back = REDZONE_BYTES
        self.block = backend.empty_u8(self.front + self.nbytes + self.back)
        self.data = self.block[self.front : self.front + self.nbytes]
        self.view = backend.typed_view(self.data, plan.dtype, plan.shape)
        # Views made once: poisoning and rewriting the zones come before every bench call.
        self.front_zone = self.block[: self.front]
        self.back_zone = self.block[self.front + self.nbytes :]
        self._poison_view, self._poison_value = backend.poison_view(self.data, plan.dtype)
        self.reset_redzones()
        self.poison()  # zero-filled in C++; poisoned here (never read first)

    def reset_redzones(self) -> None:
        b = self.backend
        b.copy(self.front_zone, b.pattern("front"))
        b.copy(self.back_zone, b.pattern("back"))

    def poison(self) -> None:
        self.backend.fill(self._poison_view, self._poison_value)

    def first_redzone_violation(self) -> Optional[int]:
        b = self.backend
        k = b.first_mismatch(self.block[: self.front], b.pattern("front"))
        if k >= 0:
            return k - self.front
        k = b.first_mismatch(self.block[self.front + self.nbytes :], b.pattern("back"))
        if k >= 0:
            return self.nbytes + k
        return None

    def store(self, values: np.ndarray) -> None:
        self.backend.upload(self.data, host_bytes(self.dtype, values))

    def generate(self, init, is_integer: bool, dims: Dict[str, int], seed: int) -> None:
        """``init``'s values for this tensor from ``seed``: drawn on the device where the backend
        can (inits.generate_torch), else on the host and uploaded."""
        if not is_integer and self.backend.generate_on_device(init, self.view, seed):
            return
        self.store(inits.generate(init, self.numel, is_integer, dims, seed))


# ---- the buffers of one call ---------------------------------------------------------------


_IID = scattered_draws.IID_FORMS


class CallBuffers:
    """Inputs and outputs of one call_plan, as runner::call_buffers; one object = one set of addresses.

    ``pristine[i]`` is the value input i must have when a call returns (unless inout): the
    values the call was given. In the bench and A/B loops every call is prepared by
    prepare_call() after the inputs are set (restore_inputs(), or new values for a check), and
    verified by intact() after it."""

    def __init__(self, plan: CallPlan, backend):
        self.plan = plan
        self.backend = backend
        self.inits = [inits.parse(t.init) for t in plan.inputs]
        self.inputs = [GuardedBuffer(backend, t) for t in plan.inputs]
        self.outputs = [GuardedBuffer(backend, t) for t in plan.outputs]
        self.pristine = [None] * len(self.inputs)
        self._zones = None  # every red zone, and their patterns in that order (intact())
        self._zone_pattern = None

    def _remember(self, i: int) -> None:
        """The pristine copy of input i := its current bytes (in place once it exists)."""
        if self.pristine[i] is None:
            self.pristine[i] = self.backend.clone(self.inputs[i].data)
        else:
            self.backend.copy(self.pristine[i], self.inputs[i].data)

    def fill_inputs(self, seed: int) -> None:
        for i, (t, buf) in enumerate(zip(self.plan.inputs, self.inputs)):
            buf.generate(self.inits[i], t.dtype not in FLOAT_DTYPES, self.plan.dims, derive_seed(seed, t.name))
            self._remember(i)

    def fill_inputs_shifted(self, source: "CallBuffers", seed: int, remember: bool = True) -> None:
        """New values at the same addresses: iid inputs get ``source``'s values circularly shifted
        by a seed-derived offset (never 0); structured ones are generated from the seed. Without
        ``remember`` the pristine copies are left to prepare_call()."""
        for i, (t, buf) in enumerate(zip(self.plan.inputs, self.inputs)):
            n = t.numel
            if self.inits[i].kind not in _IID or n < 2:
                buf.generate(self.inits[i], t.dtype not in FLOAT_DTYPES, self.plan.dims, derive_seed(seed, t.name))
            else:
                g = np.random.Generator(np.random.PCG64(derive_seed(seed, t.name)))
                shift = 1 + int(g.integers(0, n - 1))
                e = buf.elem
                src = source.inputs[i].data
                b = self.backend
                b.copy(buf.data[: (n - shift) * e], src[shift * e :])
                b.copy(buf.data[(n - shift) * e :], src[: shift * e])
            if remember:
                self._remember(i)

    def restore_inputs(self) -> None:
        """The set's own values written again (data := pristine): what an unchecked call's
        preparation writes, the same traffic as new values, so that the time a preparation takes
        does not tell a checked call from another. Also resets inout inputs between calls."""
        for i, buf in enumerate(self.inputs):
            self.backend.copy(buf.data, self.pristine[i])

    def change_scattered(self, seed: int) -> int:
        """The partial change of a check (scattered_draws.py): the current values with
        min(16, total) positions over the independent-draw inputs redrawn from their
        initialisers; the pristine copies are left to prepare_call(). Returns the number of
        positions drawn."""
        numels = [t.numel for t in self.plan.inputs]
        drawn = 0
        for i, pos in scattered_draws.plan_change(self.inits, numels, seed):
            t, buf = self.plan.inputs[i], self.inputs[i]
            values = scattered_draws.fresh_values(
                self.inits[i], int(pos.size), t.dtype not in FLOAT_DTYPES, self.plan.dims, derive_seed(seed, t.name)
            )
            byte_index = (pos[:, None] * buf.elem + np.arange(buf.elem, dtype=np.int64)[None, :]).reshape(-1)
            self.backend.scatter_bytes(buf.data, byte_index, host_bytes(t.dtype, values))
            drawn += int(pos.size)
        return drawn

    def poison_outputs(self) -> None:
        for o in self.outputs:
            o.poison()

    def remember_inputs(self) -> None:
        """Pristine copies of the inputs as they now are: what the check after a call compares
        them with."""
        for i in range(len(self.inputs)):
            self._remember(i)

    def prepare_call(self) -> None:
        """What every call of the bench and A/B loops gets before it, checked or not: outputs
        poisoned, red zones rewritten, pristine copies taken of the inputs as they now are."""
        for i in range(len(self.inputs)):
            self._remember(i)
        self.poison_outputs()
        self.reset_redzones()

    def intact(self) -> bool:
        """After a call: every red zone holds its pattern and every input (not inout) its
        pristine bytes. One batched comparison (on the device for torch, one synchronisation);
        find_red_zone_violations / find_changed_inputs say what is wrong when it is not."""
        b = self.backend
        if self._zones is None:
            self._zones = [z for buf in self.inputs + self.outputs for z in (buf.front_zone, buf.back_zone)]
            self._zone_pattern = b.concat([b.pattern(w) for _ in self._zones[::2] for w in ("front", "back")])
        pairs = [(b.concat(self._zones), self._zone_pattern)]
        for i, (t, buf) in enumerate(zip(self.plan.inputs, self.inputs)):
            if not t.inout:
                pairs.append((buf.data, self.pristine[i]))
        return b.all_equal(pairs)

    def copy_inputs_from(self, other: "CallBuffers") -> None:
        for i, buf in enumerate(self.inputs):
            self.backend.copy(buf.data, other.inputs[i].data)
            self._remember(i)

    def copy_inputs_given_to(self, other: "CallBuffers") -> None:
        """The values ``other``'s last call was given (its pristine copies): for the reference of
        a checked timed call, so that an inout input the candidate updated is not passed on."""
        for i, buf in enumerate(self.inputs):
            self.backend.copy(buf.data, other.pristine[i])
            self._remember(i)

    def input_bytes(self) -> int:
        return sum(b.nbytes for b in self.inputs)

    def tensors(self) -> Dict[str, object]:
        """The views the candidate gets, by name (inputs, then outputs)."""
        d = {t.name: b.view for t, b in zip(self.plan.inputs, self.inputs)}
        d.update({t.name: b.view for t, b in zip(self.plan.outputs, self.outputs)})
        return d

    def find_changed_inputs(self) -> List[Dict[str, object]]:
        changed = []
        for i, (t, buf) in enumerate(zip(self.plan.inputs, self.inputs)):
            if t.inout:
                continue
            k = self.backend.first_difference(buf.data, self.pristine[i])
            if k >= 0:
                changed.append({"name": t.name, "first_changed": k // buf.elem})
        return changed

    def find_red_zone_violations(self) -> List[Dict[str, object]]:
        bad = []
        for t, buf in list(zip(self.plan.inputs, self.inputs)) + list(zip(self.plan.outputs, self.outputs)):
            off = buf.first_redzone_violation()
            if off is not None:
                bad.append({"name": t.name, "byte_offset": off})
        return bad

    def reset_redzones(self) -> None:
        for buf in self.inputs + self.outputs:
            buf.reset_redzones()


def outputs_bitwise_equal(a: CallBuffers, b: CallBuffers) -> bool:
    return all(a.backend.first_difference(x.data, y.data) < 0 for x, y in zip(a.outputs, b.outputs))
