"""Python access to the pccx runtime (libpccxrt) through ctypes.

No build step: the module loads libpccxrt.so at import time and wraps its C
API (runtime/capi/pccxrt.h). Logits come back as numpy float32 arrays.

    import pccxrt
    print(pccxrt.devices())                  # {"sim": "the functional ...", ...}
    with pccxrt.Model("model.pccx", device="sim", numerics="reference") as model:
        ids = model.tokenize("Hello")
        logits = model.consume(ids)          # shape (len(ids), vocab_size)
        print(model.detokenize(model.generate(ids, max_new_tokens=16)))

The library is found at $PCCXRT_LIBRARY when set, else as build/lib/
libpccxrt.so of the source tree this file sits in, else as PREFIX/lib/
libpccxrt.so when this file is installed in PREFIX/lib/python3/dist-packages
(make install), else by the dynamic linker's search path (libpccxrt.so).
When it does not load, the import raises OSError naming the paths tried
and PCCXRT_LIBRARY.
"""

import ctypes
import json
import functools
import operator
import os
import threading

import numpy as np

__all__ = ["Model", "PccxrtError", "devices", "library_path"]


class PccxrtError(RuntimeError):
    """A failure reported by libpccxrt (the message comes from the runtime)."""


def _library_candidates():
    """The places library_path() looks, in order: $PCCXRT_LIBRARY alone when
    set, else the source tree's build, the install prefix, the linker."""
    env = os.environ.get("PCCXRT_LIBRARY")
    if env:
        return [env]
    here = os.path.dirname(os.path.abspath(__file__))
    return [os.path.normpath(os.path.join(here, "..", "..", "build", "lib", "libpccxrt.so")),
            os.path.normpath(os.path.join(here, "..", "..", "libpccxrt.so")), "libpccxrt.so"]


def library_path():
    """Where libpccxrt.so is loaded from (see the module's documentation)."""
    candidates = _library_candidates()
    return next((c for c in candidates[:-1] if os.path.exists(c)), candidates[-1])


class _Sampling(ctypes.Structure):
    _fields_ = [("temperature", ctypes.c_double), ("top_k", ctypes.c_int64),
                ("top_p", ctypes.c_double), ("repetition_penalty", ctypes.c_double),
                ("seed", ctypes.c_uint64)]


def _load():
    path = library_path()
    try:
        lib = ctypes.CDLL(path)
    except OSError as e:
        # ctypes' message names only the last path; say where else the module
        # looked and how to point it at the library.
        if os.environ.get("PCCXRT_LIBRARY"):
            tried = "$PCCXRT_LIBRARY=" + path
        elif path != "libpccxrt.so":
            tried = path  # there, but it does not load
        else:
            tried = ", ".join(_library_candidates()[:-1]) + \
                " (absent) and libpccxrt.so on the dynamic linker's path (LD_LIBRARY_PATH, ldconfig)"
        raise OSError("pccxrt: cannot load libpccxrt.so (%s); tried %s. Set PCCXRT_LIBRARY to the library's "
                      "path: build/lib/libpccxrt.so of a build, PREFIX/lib/libpccxrt.so after make install"
                      % (e, tried)) from None
    handle, i32p, f32p = ctypes.c_void_p, ctypes.POINTER(ctypes.c_int32), ctypes.POINTER(ctypes.c_float)
    size_t, sizep = ctypes.c_size_t, ctypes.POINTER(ctypes.c_size_t)
    signatures = {
        "pccxrt_open_device": (handle, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p]),
        "pccxrt_device_count": (size_t, []),
        "pccxrt_device_name": (ctypes.c_char_p, [size_t]),
        "pccxrt_device_description": (ctypes.c_char_p, [size_t]),
        "pccxrt_close": (None, [handle]),
        "pccxrt_last_error": (ctypes.c_char_p, [handle]),
        "pccxrt_vocab_size": (ctypes.c_int64, [handle]),
        "pccxrt_position": (ctypes.c_int64, [handle]),
        "pccxrt_capacity": (ctypes.c_int64, [handle]),
        "pccxrt_reset": (ctypes.c_int, [handle]),
        "pccxrt_consume": (ctypes.c_int, [handle, i32p, size_t, ctypes.c_int, f32p]),
        "pccxrt_sample": (ctypes.c_int, [handle, ctypes.POINTER(_Sampling), f32p, i32p, size_t, i32p]),
        "pccxrt_reserve_slots": (ctypes.c_int, [handle, ctypes.c_int]),
        "pccxrt_slot_count": (ctypes.c_int, [handle]),
        "pccxrt_batch_rows": (ctypes.c_int64, [handle]),
        "pccxrt_slot_position": (ctypes.c_int64, [handle, ctypes.c_int]),
        "pccxrt_reset_slot": (ctypes.c_int, [handle, ctypes.c_int]),
        "pccxrt_consume_slot": (ctypes.c_int, [handle, ctypes.c_int, i32p, size_t, ctypes.c_int, f32p]),
        "pccxrt_consume_last": (ctypes.c_int, [handle, ctypes.c_int, i32p, size_t, ctypes.c_int, f32p]),
        "pccxrt_step": (ctypes.c_int, [handle, ctypes.POINTER(ctypes.c_int), i32p, size_t, f32p]),
        "pccxrt_rewind": (ctypes.c_int, [handle, ctypes.c_int, ctypes.c_int64]),
        "pccxrt_bos_token": (ctypes.c_int32, [handle]),
        "pccxrt_eos_tokens": (ctypes.c_int, [handle, i32p, size_t, sizep]),
        "pccxrt_tokenize": (ctypes.c_int, [handle, ctypes.c_char_p, ctypes.c_int, i32p, size_t, sizep]),
        "pccxrt_detokenize": (ctypes.c_int, [handle, i32p, size_t, ctypes.c_char_p, size_t, sizep]),
        "pccxrt_json_new": (handle, [handle, ctypes.c_char_p, i32p, size_t]),
        "pccxrt_json_mask": (ctypes.c_int, [handle, f32p, size_t]),
        "pccxrt_json_accept": (ctypes.c_int, [handle, ctypes.c_int32]),
        "pccxrt_json_complete": (ctypes.c_int, [handle]),
        "pccxrt_json_free": (None, [handle]),
    }
    for name, (result, args) in signatures.items():
        function = getattr(lib, name)
        function.restype, function.argtypes = result, args
    return lib


_lib = _load()


def devices():
    """The runtime's registered devices: {name: one-line description}, the
    default device first."""
    return {_lib.pccxrt_device_name(i).decode(): _lib.pccxrt_device_description(i).decode()
            for i in range(_lib.pccxrt_device_count())}


def _device_options(options):
    """Keyword options as the runtime's "KEY=VALUE,..." (uio_name is the
    device's uio-name option)."""
    items = []
    for key, value in options.items():
        key, value = key.replace("_", "-"), str(value)
        if any(c in key + value for c in ",=\0"):
            raise ValueError("device option %s=%r: ',', '=' and NUL cannot be passed" % (key, value))
        items.append("%s=%s" % (key, value))
    return ",".join(items)


_INT32_MAX = 2**31 - 1
_C_INT = (-2**31, 2**31 - 1)
_INT64 = (-2**63, 2**63 - 1)
_UINT64 = (0, 2**64 - 1)


def _int(value, name, bounds):
    """`value` as an int that fits the C type of `bounds`; ctypes would
    silently wrap a larger one (slot 2**32 + 1 would be slot 1)."""
    try:
        v = operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, got %r" % (name, value)) from None
    if v < bounds[0] or v > bounds[1]:
        raise ValueError("%s %d is outside %d..%d" % (name, v, bounds[0], bounds[1]))
    return v


def _ids(tokens):
    """A flat int32 array of token ids; ids that do not fit 0..2**31-1 are
    refused (a cast would silently wrap 2**32 + 7 to 7)."""
    if isinstance(tokens, np.ndarray) and np.issubdtype(tokens.dtype, np.integer):
        if tokens.ndim != 1:
            raise ValueError("token ids must be a flat sequence")
        if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) > _INT32_MAX):
            raise ValueError("token ids must be within 0..2**31-1")
        array = np.ascontiguousarray(tokens, dtype=np.int32)
    else:
        values = []
        for t in tokens:
            if isinstance(t, (list, tuple, np.ndarray)):
                raise ValueError("token ids must be a flat sequence")
            try:
                v = operator.index(t)
            except TypeError:
                raise TypeError("token ids must be integers, got %r" % (t,)) from None
            if v < 0 or v > _INT32_MAX:
                raise ValueError("token id %d is outside 0..2**31-1" % v)
            values.append(v)
        array = np.array(values, dtype=np.int32)
    return array, array.ctypes.data_as(ctypes.POINTER(ctypes.c_int32))


def _text(text):
    """UTF-8 bytes for the C API, which ends strings at NUL: text holding
    one would be silently cut there."""
    if not isinstance(text, str):
        raise TypeError("text must be a str")
    if "\0" in text:
        raise ValueError("text contains a NUL character, which the runtime cannot take")
    return text.encode("utf-8")


def _locked(method):
    """Runs a method holding the model's lock: the C calls of one method
    (a size, then a fill) cannot interleave with another thread's, and
    close() cannot free the handle under a running call."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with self._lock:
            return method(self, *args, **kwargs)
    return wrapper


class _Handle:
    """A C handle behind one lock: each method that calls into C holds it
    (@_locked), close() frees the handle once, under the lock, so no call
    runs on a freed one; `with` and garbage collection close it too.
    Subclasses set _lock and _handle first thing in __init__, and name
    what they wrap (_what) and how it is freed (_free)."""

    _what = "handle"

    def _open_handle(self):
        if not self._handle:
            raise PccxrtError("the %s is closed" % self._what)
        return self._handle

    def close(self):
        if getattr(self, "_lock", None) is None:  # __init__ failed early
            return
        with self._lock:
            if self._handle:
                self._free(self._handle)
                self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()


class Model(_Handle):
    """One bundle on one device, with its KV cache (a session). Threads may
    share a model: its calls take turns (one lock per model)."""

    def __init__(self, path, device="sim", **options):
        """Opens the bundle at `path` on the registered device `device`
        (see devices()) with that device's options as keywords, e.g.
        numerics="hardware" (the NPU's datapath bit for bit; the simulator
        runs its fast integer numerics by default), threads=4; the runtime
        refuses an unknown device, option or value, naming it."""
        self._lock = threading.RLock()
        self._handle = None
        if not isinstance(device, str) or "\0" in device:
            raise ValueError("device must be one of %s" % ", ".join(devices()))
        self._handle = _lib.pccxrt_open_device(os.fsencode(path), device.encode(),
                                               _device_options(options).encode())
        if not self._handle:
            raise PccxrtError(_lib.pccxrt_last_error(None).decode())

    _what = "model"

    @staticmethod
    def _free(handle):
        _lib.pccxrt_close(handle)

    def _check(self, status):
        if status != 0:
            raise PccxrtError(_lib.pccxrt_last_error(self._handle).decode())

    @property
    @_locked
    def vocab_size(self):
        return _lib.pccxrt_vocab_size(self._open_handle())

    @property
    @_locked
    def position(self):
        """Positions consumed so far (the KV cache's fill)."""
        return _lib.pccxrt_position(self._open_handle())

    @property
    @_locked
    def capacity(self):
        """Positions the KV cache holds (the bundle's --max-seq-len)."""
        return _lib.pccxrt_capacity(self._open_handle())

    @property
    @_locked
    def bos_token(self):
        """The BOS id, or None."""
        bos = _lib.pccxrt_bos_token(self._open_handle())
        return None if bos < 0 else bos

    @property
    @_locked
    def eos_tokens(self):
        count = ctypes.c_size_t()
        self._check(_lib.pccxrt_eos_tokens(self._open_handle(), None, 0, ctypes.byref(count)))
        ids = (ctypes.c_int32 * count.value)()
        self._check(_lib.pccxrt_eos_tokens(self._handle, ids, count.value, ctypes.byref(count)))
        return list(ids)

    @_locked
    def reset(self):
        """Forgets every cached position."""
        self._check(_lib.pccxrt_reset(self._open_handle()))

    @_locked
    def consume(self, tokens, decode_only=False, logits=True):
        """Feeds token ids at the next positions; returns their logits as a
        (len(tokens), vocab_size) float32 array, with logits="last" only the
        last token's (a (vocab_size,) array: the prompt's earlier prefill
        steps then leave out the LM head), None with logits=False."""
        return self._consume(0, tokens, decode_only, logits)

    def _consume(self, slot, tokens, decode_only, logits):
        if logits not in (True, False, "last"):
            raise ValueError('logits must be True, False or "last"')
        array, pointer = _ids(tokens)
        if array.size == 0:
            raise ValueError("no tokens")
        if logits == "last":
            out = np.empty(self.vocab_size, dtype=np.float32)
        else:
            out = np.empty((array.size, self.vocab_size), dtype=np.float32) if logits else None
        target = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) if out is not None else None
        call = _lib.pccxrt_consume_last if logits == "last" else _lib.pccxrt_consume_slot
        self._check(call(self._open_handle(), _int(slot, "slot", _C_INT), pointer, array.size,
                         int(decode_only), target))
        return out

    # ---- several sequences (slots) ---------------------------------------

    @_locked
    def reserve_slots(self, count):
        """Holds at least `count` sequences (slot 0 is the one consume() and
        position use); new ones are empty."""
        self._check(_lib.pccxrt_reserve_slots(self._open_handle(), _int(count, "count", _C_INT)))

    @property
    @_locked
    def slots(self):
        """Sequences the model holds."""
        return _lib.pccxrt_slot_count(self._open_handle())

    @property
    @_locked
    def batch_rows(self):
        """Rows one batched step holds (the bundle's --decode-batch), 1
        without a batch program."""
        return _lib.pccxrt_batch_rows(self._open_handle())

    @_locked
    def slot_position(self, slot):
        value = _lib.pccxrt_slot_position(self._open_handle(), _int(slot, "slot", _C_INT))
        if value < 0:
            self._check(-1)
        return value

    @_locked
    def reset_slot(self, slot):
        """Forgets every cached position of one slot."""
        self._check(_lib.pccxrt_reset_slot(self._open_handle(), _int(slot, "slot", _C_INT)))

    @_locked
    def consume_slot(self, slot, tokens, decode_only=False, logits=True):
        """consume() for another slot."""
        return self._consume(slot, tokens, decode_only, logits)

    @_locked
    def step(self, rows, logits=True):
        """Decodes several sequences together: `rows` is a list of
        (slot, token) pairs (rows of one slot in order). Returns a
        (len(rows), vocab_size) float32 array, each row the logits its
        sequence gets alone (None with logits=False)."""
        rows = list(rows)
        if not rows:
            raise ValueError("no rows")
        slots = (ctypes.c_int * len(rows))(*[_int(slot, "slot", _C_INT) for slot, _ in rows])
        array, pointer = _ids([token for _, token in rows])
        out = np.empty((len(rows), self.vocab_size), dtype=np.float32) if logits else None
        target = out.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) if logits else None
        self._check(_lib.pccxrt_step(self._open_handle(), slots, pointer, len(rows), target))
        return out

    @_locked
    def rewind(self, slot, position):
        """Forgets the positions of `slot` from `position` on. The next
        steps give what a fresh run of the kept tokens gives: a slot whose
        sliding rings no longer hold the window before `position` is
        prefilled again with the tokens it keeps."""
        self._check(_lib.pccxrt_rewind(self._open_handle(), _int(slot, "slot", _C_INT),
                                       _int(position, "position", _INT64)))

    @_locked
    def sample(self, logits, seen=(), temperature=0.0, top_k=0, top_p=1.0,
               repetition_penalty=1.0, seed=0):
        """Picks a token from one row of logits (greedy at temperature 0) as
        pccx-run does; the generator state lives in the model."""
        row = np.array(logits, dtype=np.float32, copy=True).reshape(-1)
        if row.size != self.vocab_size:
            raise ValueError("logits must hold vocab_size (%d) values" % self.vocab_size)
        seen_array, seen_pointer = _ids(list(seen))
        options = _Sampling(temperature, _int(top_k, "top_k", _INT64), top_p, repetition_penalty,
                            _int(seed, "seed", _UINT64))
        token = ctypes.c_int32()
        self._check(_lib.pccxrt_sample(
            self._handle, ctypes.byref(options), row.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            seen_pointer, seen_array.size, ctypes.byref(token)))
        return token.value

    def json_constraint(self, schema=None, end_tokens=None):
        """A JsonConstraint for one reply: `schema` a JSON Schema (a dict,
        or its JSON text) of the subset docs/serving.md lists, None for any
        JSON object; the reply may end with one of end_tokens (default: the
        EOS ids and <end_of_turn>) once the document is complete."""
        return JsonConstraint(self, schema, end_tokens)

    @_locked
    def generate(self, prompt, max_new_tokens=32, stop_tokens=None, on_token=None,
                 on_text=None, json_schema=None, **sampling):
        """Consumes `prompt` (text or token ids) and samples up to
        max_new_tokens ids, stopping after one of stop_tokens (default: the
        EOS ids); returns the generated ids (a stop id included). Calls
        on_token(id) as each one is chosen, and on_text(text) with the text
        the reply gained (whole UTF-8 characters: a character split over
        tokens comes with its last token). Sampling keywords as in sample().
        json_schema (a dict, JSON text, or True for any object): structured
        output, the reply is a JSON document valid under it, ended by a stop
        token, unless max_new_tokens cuts it first."""
        ids = self.tokenize(prompt) if isinstance(prompt, str) else _ids(prompt)[0].tolist()
        stops = set(self.eos_tokens if stop_tokens is None else stop_tokens)
        constraint = None
        if json_schema is not None and json_schema is not False:
            constraint = JsonConstraint(self, None if json_schema is True else json_schema,
                                        sorted(stops))
        last = self.consume(ids, logits="last")
        seen, generated, shown = list(ids), [], ""
        for n in range(max_new_tokens):
            if constraint:
                constraint.mask(last)
            token = self.sample(last, seen, **sampling)
            if constraint:
                constraint.accept(token)
            generated.append(token)
            seen.append(token)
            if on_token:
                on_token(token)
            done = token in stops or n + 1 == max_new_tokens or self.position >= self.capacity
            if on_text:
                text = self.detokenize(generated)
                # U+FFFD at the end: a character whose bytes are not all out.
                if text.startswith(shown) and (done or not text.endswith("\ufffd")):
                    if len(text) > len(shown):
                        on_text(text[len(shown):])
                    shown = text
            if done:
                break
            last = self.consume([token], logits="last")
        return generated

    @_locked
    def tokenize(self, text, add_bos=True):
        """Text to ids with the bundle's SentencePiece model."""
        data = _text(text)
        count = ctypes.c_size_t()
        self._check(_lib.pccxrt_tokenize(self._open_handle(), data, int(add_bos), None, 0, ctypes.byref(count)))
        ids = (ctypes.c_int32 * count.value)()
        self._check(_lib.pccxrt_tokenize(self._handle, data, int(add_bos), ids, count.value, ctypes.byref(count)))
        return list(ids)

    @_locked
    def detokenize(self, ids):
        array, pointer = _ids(list(ids))
        length = ctypes.c_size_t()
        self._check(_lib.pccxrt_detokenize(self._open_handle(), pointer, array.size, None, 0, ctypes.byref(length)))
        text = ctypes.create_string_buffer(length.value + 1)
        self._check(_lib.pccxrt_detokenize(self._handle, pointer, array.size, text, length.value + 1,
                                           ctypes.byref(length)))
        return text.raw[:length.value].decode("utf-8", errors="replace")


class JsonConstraint(_Handle):
    """Structured output for one reply (Model.json_constraint): mask(logits)
    sets the logits of the tokens that cannot come next to -inf, in place;
    accept(token) takes the token chosen; complete says whether a whole
    document has been read. Threads may share a constraint: its calls take
    turns (one lock per constraint), since the C object is one thread's at
    a time."""

    def __init__(self, model, schema=None, end_tokens=None):
        self._lock = threading.RLock()
        self._handle = None
        text = None
        if schema is not None:
            text = (schema if isinstance(schema, str) else json.dumps(schema)).encode("utf-8")
        ends, pointer = _ids([] if end_tokens is None else list(end_tokens))
        self._handle = _lib.pccxrt_json_new(model._open_handle(), text,
                                            pointer if end_tokens is not None else None,
                                            ends.size)
        if not self._handle:
            raise PccxrtError(_lib.pccxrt_last_error(None).decode("utf-8", "replace"))

    _what = "JSON constraint"

    @staticmethod
    def _free(handle):
        _lib.pccxrt_json_free(handle)

    def _check(self, status):
        if status != 0:
            raise PccxrtError(_lib.pccxrt_last_error(None).decode("utf-8", "replace"))

    @_locked
    def mask(self, logits):
        if not isinstance(logits, np.ndarray) or logits.dtype != np.float32 \
                or not logits.flags["C_CONTIGUOUS"]:
            raise TypeError("logits must be a contiguous float32 numpy array")
        self._check(_lib.pccxrt_json_mask(
            self._open_handle(), logits.ctypes.data_as(ctypes.POINTER(ctypes.c_float)),
            logits.size))
        return logits

    @_locked
    def accept(self, token):
        self._check(_lib.pccxrt_json_accept(self._open_handle(),
                                            _int(token, "token", _C_INT)))

    @property
    @_locked
    def complete(self):
        return bool(_lib.pccxrt_json_complete(self._open_handle()))
