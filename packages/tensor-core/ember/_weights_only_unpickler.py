"""The unpickler behind ``ember.load(weights_only=True)``.

Python's ``pickle.Unpickler`` can only be restricted at ``find_class``: whatever a global
resolves to, its REDUCE, NEWOBJ, BUILD, APPEND and SETITEM opcodes then run on it. BUILD on an
allowed class sets attributes on the class itself (a file could replace ``Tensor.zero_`` for the
whole process), APPEND and SETITEM call methods of whatever object is on the stack. So this is
an interpreter of its own, as torch's ``_weights_only_unpickler`` is: it knows each opcode it
accepts (protocols 2 to 5, the ones ``torch.save`` and ``ember.save`` write) and what each may
touch:

- GLOBAL and STACK_GLOBAL look the name up in the allowlist (a dictionary: never an attribute
  lookup, never an import);
- REDUCE calls only the callables the allowlist marks as callable, NEWOBJ constructs only the
  classes it marks as constructible (and the user's safe globals, as in torch);
- BUILD sets state only on an OrderedDict or Counter (new attributes in its ``__dict__``, as
  a state_dict's ``_metadata``; torch also lets them shadow methods such as ``keys``) and on
  instances of the user's safe classes, never on a class;
- APPEND(S) only on lists, SETITEM(S) only on dicts, ADDITEMS only on sets;
- a persistent id must be a ``('storage', ...)`` tuple; the loader checks the rest.

Every other opcode (INST, OBJ, EXT*, out-of-band buffers, the text opcodes of protocol 0) is
refused with ``pickle.UnpicklingError``.
"""

from __future__ import annotations

import _compat_pickle
import collections
import pickle
import struct
from collections.abc import Callable
from pickle import UnpicklingError
from typing import Any

_I32, _U16, _U32, _U64 = (struct.Struct(f) for f in ("<i", "<H", "<I", "<Q"))
_F64 = struct.Struct(">d")

# Modules never resolved, even when a user allowlists one of their names (as in torch).
_BLOCKED_MODULES = frozenset({"sys", "os", "posix", "nt"})

# The types APPEND/SETITEM/ADDITEMS may modify: containers the pickle itself created.
_SETITEM_TYPES = (dict, collections.OrderedDict, collections.Counter)
# Instances BUILD may update through their __dict__ (a state_dict's `_metadata`).
_BUILDABLE_TYPES = (collections.OrderedDict, collections.Counter)


def describe(obj) -> str:
    """An object from a file, for an error message: short, and never an error itself (the repr
    of an int of 5000 digits raises ValueError; that of a tensor is long)."""
    if isinstance(obj, type) or callable(obj) and hasattr(obj, "__qualname__"):
        return repr(obj)  # an allowlisted global: a class or a function
    if type(obj) is int:
        return str(obj) if obj.bit_length() <= 64 else f"an int of {obj.bit_length()} bits"
    return f"an object of type {type(obj).__name__}"


class Policy:
    """What a load may resolve and do. ``globals_`` maps (module, name) to the object;
    ``callables`` are the objects REDUCE may call, ``constructible`` the classes NEWOBJ may
    create, ``user`` maps "module.name" to the user's safe globals (callable, constructible,
    and their instances buildable)."""

    def __init__(self, globals_: dict, callables, constructible, user: dict):
        self.globals = globals_
        self.user = user
        user_objects = list(user.values())
        self._keep = (callables, constructible, user_objects)  # the ids below stay valid
        self.callable_ids = {id(f) for f in (*callables, *user_objects)}
        self.constructible_ids = {id(c) for c in (*constructible, *user_objects)}
        self.user_type_ids = {id(c) for c in user_objects if isinstance(c, type)}

    def resolve(self, module: str, name: str):
        if (module, name) in _compat_pickle.NAME_MAPPING:  # Python 2 names (protocol 2 files)
            module, name = _compat_pickle.NAME_MAPPING[(module, name)]
        elif module in _compat_pickle.IMPORT_MAPPING:
            module = _compat_pickle.IMPORT_MAPPING[module]
        full = f"{module}.{name}"
        if module in _BLOCKED_MODULES:
            raise UnpicklingError(
                f"Trying to load unsupported GLOBAL {full} whose module {module} is blocked.")
        key = (module, name)
        if key in self.globals:
            return self.globals[key]
        if full in self.user:
            return self.user[full]
        raise UnpicklingError(
            f"Unsupported global: GLOBAL {full} was not an allowed global by default. Please use "
            f"`ember.serialization.add_safe_globals([{name}])` or the "
            f"`ember.serialization.safe_globals([{name}])` context manager to allowlist this "
            "global if you trust this class/function.")


class WeightsUnpickler:
    """``WeightsUnpickler(data, policy, persistent_load, encoding).load()``."""

    def __init__(self, data: bytes, policy: Policy, persistent_load: Callable[[Any], Any],
                 encoding: str = "ASCII"):
        self._data = bytes(data)
        self._pos = 0  # the next byte to read
        self.policy = policy
        self.persistent_load = persistent_load
        self.encoding = encoding

    # -- reading the opcode stream (an index into bytes: the loop is the loader's hot path) ---

    def _read(self, n: int) -> bytes:
        pos = self._pos
        if not 0 <= n <= len(self._data) - pos:  # also a length of 2**64 - 1: before slicing
            raise UnpicklingError("pickle data was truncated")
        self._pos = pos + n
        return self._data[pos:pos + n]

    def _readline(self) -> bytes:
        pos = self._pos
        end = self._data.find(b"\n", pos)
        if end < 0:
            raise UnpicklingError("pickle data was truncated")
        self._pos = end + 1
        return self._data[pos:end]

    def _unpack(self, fmt: struct.Struct) -> int:
        pos = self._pos
        if fmt.size > len(self._data) - pos:
            raise UnpicklingError("pickle data was truncated")
        self._pos = pos + fmt.size
        return fmt.unpack_from(self._data, pos)[0]

    def _byte(self) -> int:
        pos = self._pos
        if pos >= len(self._data):
            raise UnpicklingError("pickle data was truncated")
        self._pos = pos + 1
        return self._data[pos]

    # -- the stack ------------------------------------------------------------------------------

    def _pop(self):
        if not self.stack:
            raise UnpicklingError("unpickling stack underflow")
        return self.stack.pop()

    def _top(self):
        if not self.stack:
            raise UnpicklingError("unpickling stack underflow")
        return self.stack[-1]

    def _pop_mark(self) -> list:
        if not self.metastack:
            raise UnpicklingError("could not find MARK")
        items = self.stack
        self.stack = self.metastack.pop()
        return items

    def load(self):
        self.stack: list = []
        self.metastack: list = []
        self.memo: dict = {}
        dispatch, data, stop = self._dispatch, self._data, WeightsUnpickler._stop
        while True:
            pos = self._pos
            if pos >= len(data):
                raise EOFError("Ran out of input")
            self._pos = pos + 1
            handler = dispatch.get(data[pos])
            if handler is None:
                raise UnpicklingError(f"Unsupported operand {data[pos]}")
            if handler is stop:
                return self._pop()
            handler(self)

    # -- opcodes ---------------------------------------------------------------------------------

    def _proto(self):
        proto = self._byte()
        if proto > pickle.HIGHEST_PROTOCOL:
            raise ValueError(f"unsupported pickle protocol: {proto}")

    def _frame(self):
        self._read(8)  # a length hint; the data is in memory already

    def _stop(self):  # handled in load()
        pass

    def _mark(self):
        self.metastack.append(self.stack)
        self.stack = []

    def _pop_op(self):
        self._pop()

    def _pop_mark_op(self):
        self._pop_mark()

    def _dup(self):
        self.stack.append(self._top())

    def _none(self):
        self.stack.append(None)

    def _true(self):
        self.stack.append(True)

    def _false(self):
        self.stack.append(False)

    def _binint(self):
        self.stack.append(self._unpack(_I32))

    def _binint1(self):
        self.stack.append(self._byte())

    def _binint2(self):
        self.stack.append(self._unpack(_U16))

    def _long1(self):
        self.stack.append(pickle.decode_long(self._read(self._byte())))

    def _long4(self):
        n = self._unpack(_I32)
        if n < 0:
            raise UnpicklingError("LONG pickle has negative byte count")
        self.stack.append(pickle.decode_long(self._read(n)))

    def _binfloat(self):
        self.stack.append(self._unpack(_F64))

    def _string(self, data: bytes):
        self.stack.append(data if self.encoding == "bytes" else data.decode(self.encoding))

    def _binstring(self):
        n = self._unpack(_I32)
        if n < 0:
            raise UnpicklingError("BINSTRING pickle has negative byte count")
        self._string(self._read(n))

    def _short_binstring(self):
        self._string(self._read(self._byte()))

    def _unicode(self, n: int):
        self.stack.append(str(self._read(n), "utf-8", "surrogatepass"))

    def _binunicode(self):
        self._unicode(self._unpack(_U32))

    def _short_binunicode(self):
        self._unicode(self._byte())

    def _binunicode8(self):
        self._unicode(self._unpack(_U64))

    def _binbytes(self):
        self.stack.append(self._read(self._unpack(_U32)))

    def _short_binbytes(self):
        self.stack.append(self._read(self._byte()))

    def _binbytes8(self):
        self.stack.append(self._read(self._unpack(_U64)))

    def _bytearray8(self):
        self.stack.append(bytearray(self._read(self._unpack(_U64))))

    def _empty_tuple(self):
        self.stack.append(())

    def _tuple(self):
        items = tuple(self._pop_mark())  # before self.stack is read: MARK swaps it
        self.stack.append(items)

    def _tuple1(self):
        self.stack.append((self._pop(),))

    def _tuple2(self):
        b, a = self._pop(), self._pop()
        self.stack.append((a, b))

    def _tuple3(self):
        c, b, a = self._pop(), self._pop(), self._pop()
        self.stack.append((a, b, c))

    def _empty_list(self):
        self.stack.append([])

    def _list(self):
        items = self._pop_mark()
        self.stack.append(items)

    def _empty_dict(self):
        self.stack.append({})

    def _dict(self):
        items = self._pop_mark()
        if len(items) % 2:
            raise UnpicklingError("odd number of items for DICT")
        self.stack.append(dict(zip(items[::2], items[1::2])))

    def _empty_set(self):
        self.stack.append(set())

    def _frozenset(self):
        items = frozenset(self._pop_mark())
        self.stack.append(items)

    def _append(self):
        item = self._pop()
        target = self._top()
        if type(target) is not list:
            raise UnpicklingError(f"Can only append to lists, but got {type(target)}")
        target.append(item)

    def _appends(self):
        items = self._pop_mark()
        target = self._top()
        if type(target) is not list:
            raise UnpicklingError(f"Can only extend lists, but got {type(target)}")
        target.extend(items)

    def _check_setitem_target(self, opcode: str):
        target = self._top()
        if type(target) not in _SETITEM_TYPES:
            raise UnpicklingError(
                f"Can only {opcode} for dict, collections.OrderedDict, collections.Counter, but "
                f"got {type(target)}")
        return target

    def _setitem(self):
        value, key = self._pop(), self._pop()
        self._check_setitem_target("SETITEM")[key] = value

    def _setitems(self):
        items = self._pop_mark()
        target = self._check_setitem_target("SETITEMS")
        if len(items) % 2:
            raise UnpicklingError("odd number of items for SETITEMS")
        for i in range(0, len(items), 2):
            target[items[i]] = items[i + 1]

    def _additems(self):
        items = self._pop_mark()
        target = self._top()
        if type(target) is not set:
            raise UnpicklingError(f"Can only add items to sets, but got {type(target)}")
        target.update(items)

    def _global(self):
        module = self._readline().decode("utf-8")
        name = self._readline().decode("utf-8")
        self.stack.append(self.policy.resolve(module, name))

    def _stack_global(self):
        name, module = self._pop(), self._pop()
        if type(module) is not str or type(name) is not str:
            raise UnpicklingError("STACK_GLOBAL requires str")
        self.stack.append(self.policy.resolve(module, name))

    def _reduce(self):
        args = self._pop()
        func = self._top()
        if id(func) not in self.policy.callable_ids:
            raise UnpicklingError("Trying to call reduce for unrecognized function "
                                  f"{describe(func)}")
        if type(args) is not tuple:
            raise UnpicklingError(f"REDUCE: the arguments must be a tuple, got {type(args)}")
        self.stack[-1] = func(*args)

    def _new(self, cls, args: tuple, kwargs: dict):
        if not isinstance(cls, type) or id(cls) not in self.policy.constructible_ids:
            raise UnpicklingError(
                "Can only create new object for OrderedDict, Counter or classes allowlisted via "
                f"`add_safe_globals` but got {describe(cls)}")
        if type(args) is not tuple or type(kwargs) is not dict:
            raise UnpicklingError("NEWOBJ: the arguments must be a tuple (and a dict)")
        self.stack.append(cls.__new__(cls, *args, **kwargs))

    def _newobj(self):
        args = self._pop()
        self._new(self._pop(), args, {})

    def _newobj_ex(self):
        kwargs, args = self._pop(), self._pop()
        self._new(self._pop(), args, kwargs)

    def _build(self):
        state = self._pop()
        inst = self._top()
        if isinstance(inst, type):
            pass  # never a class: that would change the class for the whole process
        elif type(inst) in _BUILDABLE_TYPES:
            if type(state) is not dict:
                raise UnpicklingError(
                    f"BUILD: the state of a {type(inst).__name__} must be a dict, got "
                    f"{type(state)}")
            for key in state:  # new attributes only (`_metadata`): no shadowed `keys` method
                if type(key) is not str or hasattr(type(inst), key):
                    raise UnpicklingError(
                        f"BUILD: the state of a {type(inst).__name__} may only add attributes, "
                        f"not set {describe(key) if type(key) is not str else repr(key[:80])}")
            inst.__dict__.update(state)
            return
        elif id(type(inst)) in self.policy.user_type_ids:  # the user trusts this class
            setstate = getattr(inst, "__setstate__", None)
            if setstate is not None:
                setstate(state)
                return
            slotstate = None
            if isinstance(state, tuple) and len(state) == 2:
                state, slotstate = state
            if state:
                inst.__dict__.update(state)
            if slotstate:
                for k, v in slotstate.items():
                    setattr(inst, k, v)
            return
        raise UnpicklingError(
            "Can only build OrderedDict, Counter or types allowlisted via `add_safe_globals`, "
            f"but got {type(inst)}")

    def _binpersid(self):
        pid = self._pop()
        if type(pid) is not tuple:
            raise UnpicklingError(f"persistent_load id must be tuple, but got {type(pid)}")
        kind = pid[0] if pid else None
        if isinstance(kind, bytes):
            kind = kind.decode("ascii", "replace")
        if kind != "storage":
            raise UnpicklingError(
                f"Only persistent_load of storage is allowed, but got {type(kind)}")
        self.stack.append(self.persistent_load(pid))

    def _get(self, idx: int):
        if idx not in self.memo:
            raise UnpicklingError(f"Memo value not found at index {idx}")
        self.stack.append(self.memo[idx])

    def _binget(self):
        self._get(self._byte())

    def _long_binget(self):
        self._get(self._unpack(_U32))

    def _binput(self):
        self.memo[self._byte()] = self._top()

    def _long_binput(self):
        self.memo[self._unpack(_U32)] = self._top()

    def _memoize(self):
        self.memo[len(self.memo)] = self._top()

    _dispatch: dict = {}


def _opcodes() -> dict:
    u = WeightsUnpickler
    table = {
        pickle.PROTO: u._proto, pickle.FRAME: u._frame, pickle.STOP: u._stop,
        pickle.MARK: u._mark, pickle.POP: u._pop_op, pickle.POP_MARK: u._pop_mark_op,
        pickle.DUP: u._dup, pickle.NONE: u._none, pickle.NEWTRUE: u._true,
        pickle.NEWFALSE: u._false, pickle.BININT: u._binint, pickle.BININT1: u._binint1,
        pickle.BININT2: u._binint2, pickle.LONG1: u._long1, pickle.LONG4: u._long4,
        pickle.BINFLOAT: u._binfloat, pickle.BINSTRING: u._binstring,
        pickle.SHORT_BINSTRING: u._short_binstring, pickle.BINUNICODE: u._binunicode,
        pickle.SHORT_BINUNICODE: u._short_binunicode, pickle.BINUNICODE8: u._binunicode8,
        pickle.BINBYTES: u._binbytes, pickle.SHORT_BINBYTES: u._short_binbytes,
        pickle.BINBYTES8: u._binbytes8, pickle.BYTEARRAY8: u._bytearray8,
        pickle.EMPTY_TUPLE: u._empty_tuple, pickle.TUPLE: u._tuple, pickle.TUPLE1: u._tuple1,
        pickle.TUPLE2: u._tuple2, pickle.TUPLE3: u._tuple3, pickle.EMPTY_LIST: u._empty_list,
        pickle.LIST: u._list, pickle.APPEND: u._append, pickle.APPENDS: u._appends,
        pickle.EMPTY_DICT: u._empty_dict, pickle.DICT: u._dict, pickle.SETITEM: u._setitem,
        pickle.SETITEMS: u._setitems, pickle.EMPTY_SET: u._empty_set,
        pickle.FROZENSET: u._frozenset, pickle.ADDITEMS: u._additems,
        pickle.GLOBAL: u._global, pickle.STACK_GLOBAL: u._stack_global,
        pickle.REDUCE: u._reduce, pickle.NEWOBJ: u._newobj, pickle.NEWOBJ_EX: u._newobj_ex,
        pickle.BUILD: u._build, pickle.BINPERSID: u._binpersid, pickle.BINGET: u._binget,
        pickle.LONG_BINGET: u._long_binget, pickle.BINPUT: u._binput,
        pickle.LONG_BINPUT: u._long_binput, pickle.MEMOIZE: u._memoize,
    }
    return {op[0]: fn for op, fn in table.items()}


WeightsUnpickler._dispatch = _opcodes()
