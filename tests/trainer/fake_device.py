"""A stand-in accelerator for CPU-only tests: the device-cleanliness guard of the trainer and the engine.

Inside `FakeDevice()`, a tensor "on the device" holds real CPU data but reports the device `meta` (a device type
every torch build has, with no kernels of its own that could run instead). Every op where such a tensor meets a
host tensor (a plain CPU tensor with at least one dimension; 0-d CPU scalars are allowed, as CUDA allows them)
raises `HostDeviceMix`, the error CUDA raises as "Expected all tensors to be on the same device". Factory calls
that name the device (`torch.zeros(n, device=d)`, `x.to(d)`) make device tensors; those that name none make host
tensors, as on a GPU. So code that runs here without HostDeviceMix has no host tensor meeting a device tensor on
the paths it ran, whatever the real accelerator is.

Reads that need the device's data on the host are counted in `syncs`: `.item()`/`float()`/`bool()`, `.tolist()`,
`.cpu()`/`.to("cpu")`, `.numpy()`, and ops whose output size depends on the data (`nonzero`, boolean-mask
indexing, `masked_select`), each of which makes CUDA wait for the GPU.

Autocast has no `meta` device type, so the guard covers the float32 paths (bf16 autocast is a context around the
same ops). Checkpoint writing reads raw storage and is out of scope: move the model back with `to_host` first.
"""

from __future__ import annotations

import traceback
from collections import Counter

import torch
from torch.overrides import TorchFunctionMode
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_flatten, tree_map

DEVICE = torch.device("meta")
aten = torch.ops.aten

# ops whose output size depends on the data: on CUDA they wait for the device
_DATA_DEPENDENT = {aten.nonzero.default, aten.masked_select.default, aten.unique_consecutive.default,
                   aten._unique2.default, aten.nonzero_static.default}
# transfers between host and device: a host tensor may meet a device tensor here
_TRANSFERS = {aten._to_copy.default, aten.copy_.default}


class HostDeviceMix(RuntimeError):
    """A host tensor met a device tensor in one op (on a GPU: 'Expected all tensors to be on the same device')."""


class OnDevice(torch.Tensor):
    """A tensor on the fake device: CPU data in `.elem`, reporting device `meta`."""

    elem: torch.Tensor

    @staticmethod
    def __new__(cls, elem: torch.Tensor):
        return torch.Tensor._make_wrapper_subclass(
            cls, elem.size(), strides=elem.stride(), storage_offset=elem.storage_offset(), dtype=elem.dtype,
            device=DEVICE, requires_grad=elem.requires_grad, layout=elem.layout)

    def __init__(self, elem: torch.Tensor):
        self.elem = elem

    __torch_function__ = torch._C._disabled_torch_function_impl

    def __repr__(self) -> str:
        return f"OnDevice({self.elem!r})"

    @classmethod
    def __torch_dispatch__(cls, func, types, args=(), kwargs=None):
        raise RuntimeError("a fake-device tensor was used outside its FakeDevice() block")


def _where() -> str:
    """The innermost agentrl frame of the current stack (file:line), for messages."""
    for frame in reversed(traceback.extract_stack()[:-2]):
        if "/agentrl/" in frame.filename or "/bench/" in frame.filename:
            return f"{frame.filename.split('/agentrl/')[-1]}:{frame.lineno} {frame.name}"
    return "outside agentrl"


def _is_device(d) -> bool:
    return d is not None and torch.device(d).type == DEVICE.type


class _Dispatch(TorchDispatchMode):
    def __init__(self, owner: FakeDevice):
        super().__init__()
        self.owner = owner

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        kwargs = dict(kwargs or {})
        originals: dict[int, OnDevice] = {}
        on_device, host = False, []

        def unwrap(x):
            nonlocal on_device
            if isinstance(x, OnDevice):
                on_device = True
                originals[id(x.elem)] = x
                return x.elem
            if isinstance(x, torch.Tensor) and x.dim() > 0:
                host.append(x)
            return x

        args, kwargs = tree_map(unwrap, args), tree_map(unwrap, kwargs)
        targets = []

        def retarget(x):  # a device named in the call (a keyword, or positional as in aten.to.device)
            if isinstance(x, torch.device):
                targets.append(x)
                return torch.device("cpu")
            return x

        args, kwargs = tree_map(retarget, args), tree_map(retarget, kwargs)
        to_device = any(_is_device(t) for t in targets)
        to_host = bool(targets) and not to_device
        transfer = func in _TRANSFERS or func.overloadpacket is aten.to
        if on_device and host and not transfer:
            shapes = ", ".join(str(tuple(h.shape)) for h in host)
            raise HostDeviceMix(f"{func}: host tensor(s) {shapes} meet device tensors at {_where()}")
        if on_device and (func in _DATA_DEPENDENT or (func is aten.index.Tensor and any(
                isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in args[1]))):
            self.owner.record(f"{func}")
        if transfer and func is not aten.copy_.default and on_device and to_host:
            self.owner.record(f"{func} to host")
            return func(*args, **kwargs)  # a host tensor
        if func is aten.copy_.default and isinstance(args[1], torch.Tensor) and id(args[1]) in originals \
                and id(args[0]) not in originals:
            self.owner.record("copy_ to host")
            return func(*args, **kwargs)
        out = func(*args, **kwargs)
        if on_device and any(isinstance(x, (bool, int, float)) for x in tree_flatten(out)[0]):
            self.owner.record(f"{func}")  # item(), float(), bool(), equal(), ...
        if not (on_device or to_device):
            return out
        return tree_map(lambda x: (originals.get(id(x)) if id(x) in originals else OnDevice(x))
                        if isinstance(x, torch.Tensor) else x, out)


class _Function(TorchFunctionMode):
    """Python-level reads that bypass the dispatcher for tensor subclasses (tolist, numpy)."""

    def __init__(self, owner: FakeDevice):
        super().__init__()
        self.owner = owner

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in (torch.tensor, torch.as_tensor, torch.asarray) and _is_device(kwargs.get("device")):
            return OnDevice(func(*args, **{**kwargs, "device": "cpu"}))  # it would bypass the dispatch mode
        if func in (torch.Tensor.tolist, torch.Tensor.numpy, torch.Tensor.__array__) and args \
                and isinstance(args[0], OnDevice):
            self.owner.record(func.__name__)
            return func(args[0].elem, *args[1:], **kwargs)
        return func(*args, **kwargs)


class FakeDevice:
    """`with FakeDevice() as dev:` — dev.device is the fake accelerator; dev.to_device(model) moves a module there;
    dev.syncs lists the host syncs made (with where), dev.reset() clears them."""

    device = DEVICE

    def __init__(self):
        self.syncs: list[str] = []
        self._modes = (_Dispatch(self), _Function(self))

    def record(self, what: str) -> None:
        """Count one host sync."""
        self.syncs.append(f"{what} at {_where()}")

    def reset(self) -> None:
        """Forget the syncs counted so far."""
        self.syncs.clear()

    def count(self) -> Counter:
        """Syncs by where they happened."""
        return Counter(self.syncs)

    def __enter__(self) -> FakeDevice:
        for mode in self._modes:
            mode.__enter__()
        return self

    def __exit__(self, *exc) -> None:
        for mode in reversed(self._modes):
            mode.__exit__(*exc)

    @staticmethod
    def to_device(module: torch.nn.Module) -> torch.nn.Module:
        """Put every parameter and buffer of `module` on the fake device, in place (tied parameters stay tied)."""
        moved: dict[int, torch.nn.Parameter] = {}
        for m in module.modules():
            for name, p in list(m._parameters.items()):
                if p is not None:
                    if id(p) not in moved:
                        moved[id(p)] = torch.nn.Parameter(OnDevice(p.detach().clone()), requires_grad=p.requires_grad)
                    m._parameters[name] = moved[id(p)]
            for name, b in list(m._buffers.items()):
                if b is not None:
                    m._buffers[name] = OnDevice(b.detach().clone())
        return module

    @staticmethod
    def to_host(module: torch.nn.Module) -> torch.nn.Module:
        """Undo to_device (plain CPU tensors with the current values)."""
        moved: dict[int, torch.nn.Parameter] = {}
        for m in module.modules():
            for name, p in list(m._parameters.items()):
                if isinstance(p, OnDevice):
                    if id(p) not in moved:
                        moved[id(p)] = torch.nn.Parameter(p.elem.clone(), requires_grad=p.requires_grad)
                    m._parameters[name] = moved[id(p)]
            for name, b in list(m._buffers.items()):
                if isinstance(b, OnDevice):
                    m._buffers[name] = b.elem.clone()
        return module
