"""Editing ELF files in place, for the bundle (dnsshim_build/bundle.py).

The bundle copies this machine's libpython and extension modules; they carry
a run path into the build machine's Python installation, which the bundle
must not look in.  :func:`drop_runpath` removes it, as ``chrpath -d`` does,
without a tool the device's builder may not have.
"""

import struct
from pathlib import Path


def drop_runpath(path: Path) -> bool:
    """Removes an ELF file's DT_RUNPATH and DT_RPATH entries in place (as
    ``chrpath -d`` does: the later entries of the dynamic section move up, a
    DT_NULL fills the end), so that nothing in the bundle looks for libraries
    in the build machine's Python: its libpython and extension modules carry
    that installation's lib/ and need nothing from it (libpython is loaded
    by then, their other libraries are the system's).  Returns whether there
    was one."""
    data = bytearray(path.read_bytes())
    if data[:4] != b"\x7fELF":
        raise ValueError(f"{path} is not an ELF file")
    wide, order = data[4] == 2, "<" if data[5] == 1 else ">"
    if wide:
        phoff, = struct.unpack_from(order + "Q", data, 0x20)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x36)
        header, entry_format = order + "IIQQQQ", order + "qQ"
    else:
        phoff, = struct.unpack_from(order + "I", data, 0x1C)
        phentsize, phnum = struct.unpack_from(order + "HH", data, 0x2A)
        header, entry_format = order + "IIIIII", order + "iI"
    size = struct.calcsize(entry_format)
    for i in range(phnum):
        fields = struct.unpack_from(header, data, phoff + i * phentsize)
        if fields[0] != 2:  # PT_DYNAMIC
            continue
        offset, filesz = (fields[2], fields[5]) if wide else (fields[1], fields[4])
        entries = [struct.unpack_from(entry_format, data, o)
                   for o in range(offset, offset + filesz - size + 1, size)]
        kept = [e for e in entries if e[0] not in (15, 29)]  # DT_RPATH, DT_RUNPATH
        if len(kept) == len(entries):
            return False
        kept += [(0, 0)] * (len(entries) - len(kept))
        for n, (tag, value) in enumerate(kept):
            struct.pack_into(entry_format, data, offset + n * size, tag, value)
        path.write_bytes(bytes(data))
        return True
    return False
