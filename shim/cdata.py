"""Where the C data the glue hands C comes from: ``ffi.new`` (cffi's backend,
the C library's malloc), or an allocator the embedded runtime gives an ffi
(shim.embedded: the host's, through the runtime's account and memory limit).
"""

_NEW = {}  # id(ffi) -> (ffi, new)


def new_for(ffi):
    """What makes ``ffi``'s C data: ``new(ctype, init=None)``, as ffi.new."""
    entry = _NEW.get(id(ffi))
    return entry[1] if entry is not None and entry[0] is ffi else ffi.new


def use_allocator(ffi, allocate) -> None:
    """Every struct and array made with ``ffi`` for C from ``allocate`` (an
    ``ffi.new_allocator(...)``).  A struct is made as an array of one, which
    C reads through the same pointer: for ``T *`` cffi's backend allocates,
    besides the struct, an object of its own with the C library's malloc,
    whatever the allocator."""
    arrays = {}

    def new(ctype, init=None):
        array = arrays.get(ctype)
        if array is None:
            kind = ffi.typeof(ctype) if isinstance(ctype, str) else ctype
            if kind.kind == "pointer" and kind.item.kind in ("struct", "union"):
                array = arrays[ctype] = ffi.typeof(ffi.getctype(kind.item, "[1]"))
            else:
                return allocate(ctype, init)
        return allocate(array, None if init is None else (init,))

    _NEW[id(ffi)] = (ffi, new)
