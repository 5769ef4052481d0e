"""The functions an ELF file defines and imports, and the shared libraries it needs, read from
the file itself (before the program runs, so that a wrong name is refused at once).

Only what ``--task-function`` and ``explore`` need: function symbols (plain and GNU indirect)
of ``.symtab`` or ``.dynsym`` with their binding, the ``DT_NEEDED`` libraries, and where the
dynamic linker finds them (through ``ldd``, which asks the linker itself: RUNPATH, the
cache and ``LD_LIBRARY_PATH`` all count).
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from dataclasses import dataclass

SHT_SYMTAB, SHT_DYNAMIC, SHT_DYNSYM, PT_LOAD = 2, 6, 11, 1
STT_FUNC, STT_GNU_IFUNC, STB_WEAK, SHN_UNDEF = 2, 10, 2, 0
DT_NEEDED = 1
PAGE = 4096


@dataclass(frozen=True)
class FunctionSymbol:
    name: str
    offset: int  # from the file's base (its first mapped page); 0 when undefined
    weak: bool
    defined: bool


@dataclass(frozen=True)
class ElfFunctions:
    symbols: tuple[FunctionSymbol, ...]  # of .symtab, or of .dynsym when the file is stripped
    dynamic: tuple[FunctionSymbol, ...]  # of .dynsym: what it exports and imports
    stripped: bool  # no .symtab
    needed: tuple[str, ...]  # DT_NEEDED, in order: the libraries it links explicitly


def read_functions(path: str) -> ElfFunctions:
    with open(path, "rb") as f:
        elf = f.read()
    shoff, = struct.unpack_from("<Q", elf, 40)
    phoff, = struct.unpack_from("<Q", elf, 32)
    phentsize, phnum, shentsize, shnum = struct.unpack_from("<HHHH", elf, 54)
    loads = [struct.unpack_from("<IIQQ", elf, phoff + i * phentsize) for i in range(phnum)]
    base = min(vaddr for kind, _, _, vaddr in loads if kind == PT_LOAD) & ~(PAGE - 1)
    sections = [struct.unpack_from("<IIQQQQII", elf, shoff + i * shentsize) for i in range(shnum)]
    kinds = {s[1] for s in sections}

    def string(table: int, at: int) -> str:
        start = sections[table][4] + at
        return elf[start:elf.index(b"\0", start)].decode("utf-8", "replace")

    def functions(kind: int) -> tuple[FunctionSymbol, ...]:
        found = []
        for _, k, _, _, offset, size, link, _ in sections:
            if k != kind:
                continue
            for at in range(offset + 24, offset + size, 24):  # entry 0 is the null symbol
                name, info, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", elf, at)
                defined = shndx != SHN_UNDEF and value != 0
                if info & 0xF in (STT_FUNC, STT_GNU_IFUNC) and name:
                    found.append(FunctionSymbol(string(link, name), value - base if defined else 0,
                                                info >> 4 == STB_WEAK, defined))
        return tuple(found)

    needed = []
    for _, k, _, _, offset, size, link, _ in sections:
        if k == SHT_DYNAMIC:
            for at in range(offset, offset + size, 16):
                tag, value = struct.unpack_from("<qQ", elf, at)
                if tag == DT_NEEDED:
                    needed.append(string(link, value))
    dynamic = functions(SHT_DYNSYM)
    stripped = SHT_SYMTAB not in kinds
    return ElfFunctions(dynamic if stripped else functions(SHT_SYMTAB), dynamic, stripped, tuple(needed))


def shared_libraries(path: str) -> dict[str, str]:
    """{name as needed: path} of every library the dynamic linker loads for the program at path,
    in its search order; empty without ldd."""
    ldd = shutil.which("ldd")
    if ldd is None:
        return {}
    out = subprocess.run([ldd, path], capture_output=True, text=True, errors="replace").stdout
    found = {}
    for line in out.splitlines():
        name, arrow, rest = line.strip().partition(" => ")
        where = rest.rsplit(" (", 1)[0].strip()
        if arrow and where.startswith("/"):
            found[name] = where
    return found
