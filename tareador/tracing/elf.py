"""Everything tareador reads from ELF files, in one place: the header (what kind of program a
file is), the image base, the functions a file defines and imports, the shared libraries it
needs, the DWARF of a -g build (through binutils' ``readelf``) and source lines (``addr2line``).

Addresses: the agent knows a code address as an offset from its module's start (Frida's
``Module.base``, the file's first mapped page). Symbols, DWARF and addr2line use the addresses
the file was linked at: the offset plus the image base, its lowest loaded address rounded down to
a page (0 for a PIE executable or a library, 0x400000 for a classic -no-pie executable).
``image_base`` is the one place that says so.

Functions are read from the file itself (before the program runs, so that a wrong name is
refused at once): function symbols (plain and GNU indirect) of ``.symtab`` or ``.dynsym`` with
their binding, the ``DT_NEEDED`` libraries, and where the dynamic linker finds them (through
``ldd``, which asks the linker itself: RUNPATH, the cache and ``LD_LIBRARY_PATH`` all count).
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from dataclasses import dataclass
from functools import lru_cache

SHT_SYMTAB, SHT_DYNAMIC, SHT_DYNSYM, PT_LOAD, PT_INTERP = 2, 6, 11, 1, 3
STT_FUNC, STT_GNU_IFUNC, STB_WEAK, SHN_UNDEF = 2, 10, 2, 0
ELFCLASS64, EM_X86_64, ET_REL, ET_EXEC, ET_DYN = 2, 62, 1, 2, 3
DT_NEEDED = 1
PAGE = 4096
HEADER_SIZE = 64


@dataclass(frozen=True)
class ElfHeader:
    """What kind of file it is; program headers only of a 64-bit file."""

    elf_class: int  # ELFCLASS64 for 64-bit
    machine: int  # EM_X86_64, ...
    type: int  # ET_REL, ET_EXEC, ET_DYN, ...
    segments: tuple[tuple[int, int], ...]  # (p_type, p_vaddr) of each program header

    @property
    def image_base(self) -> int:
        loads = [vaddr for kind, vaddr in self.segments if kind == PT_LOAD]
        return min(loads) & ~(PAGE - 1) if loads else 0


def _header(data: bytes, program_headers: bytes) -> ElfHeader:
    """The header of ``data`` (the file's first 64 bytes at least), its program headers read from
    ``program_headers`` (the bytes at e_phoff)."""
    machine, = struct.unpack_from("<H", data, 18)
    kind, = struct.unpack_from("<H", data, 16)
    segments: list[tuple[int, int]] = []
    if data[4] == ELFCLASS64:
        phentsize, = struct.unpack_from("<H", data, 54)
        for at in range(0, len(program_headers) - 23, max(phentsize, 24)):
            p_type, _, _, vaddr = struct.unpack_from("<IIQQ", program_headers, at)
            segments.append((p_type, vaddr))
    return ElfHeader(data[4], machine, kind, tuple(segments))


def read_header(path: str) -> ElfHeader | None:
    """The file's ELF header and program headers; None if it is not an ELF file."""
    with open(path, "rb") as f:
        data = f.read(HEADER_SIZE)
        if data[:4] != b"\x7fELF" or len(data) < HEADER_SIZE:
            return None
        phoff, = struct.unpack_from("<Q", data, 32)
        phentsize, phnum = struct.unpack_from("<HH", data, 54)
        f.seek(phoff if data[4] == ELFCLASS64 else 0)
        return _header(data, f.read(phentsize * phnum) if data[4] == ELFCLASS64 else b"")


@lru_cache(maxsize=64)
def image_base(path: str) -> int:
    """Where the file is linked to start (module docstring): a module offset plus this is the
    address its symbols, DWARF and line tables use. 0 for a file that is not ELF."""
    try:
        header = read_header(path)
    except (OSError, struct.error):
        return 0
    return header.image_base if header else 0


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
    base = _header(elf, elf[phoff:phoff + phentsize * phnum]).image_base
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


# ----------------------------------------------------------------------------------- DWARF

_ENTRY = re.compile(r"^\s*<(\d+)><([0-9a-f]+)>: Abbrev Number: \d+ \((DW_TAG_\w+)\)")
_ATTRIBUTE = re.compile(r"^\s*<[0-9a-f]+>\s+(DW_AT_\w+)\s*:\s*(.*)$")
_VERSION = re.compile(r"^\s*Version:\s*(\d+)")  # a compilation unit's header
_FORM = re.compile(r"^\(\w+\)\s*")  # readelf 2.35+ prints the attribute's form first with --wide: (strp), (data1)


def _value(text: str) -> str:
    """An attribute's value: readelf prints strings from .debug_str as '(indirect string, offset:
    0x..): name'."""
    text = _FORM.sub("", text.strip())
    return text.rsplit("): ", 1)[1].strip() if text.startswith("(") and "): " in text else text.strip()


@lru_cache(maxsize=8)
def debug_entries(path: str) -> dict[int, dict]:
    """Every DWARF entry (DIE) of the file by offset: its tag, attributes (name -> readelf's text
    of the value), children's offsets, and the DWARF version of its compilation unit. Addresses
    in it are link addresses (module docstring). Empty without -g or without readelf."""
    readelf = shutil.which("readelf")
    if readelf is None:
        return {}
    out = subprocess.run([readelf, "--debug-dump=info", path], capture_output=True, text=True,
                         errors="replace").stdout
    entries: dict[int, dict] = {}
    stack: list[int] = []
    current: dict | None = None
    version = 0
    for line in out.splitlines():
        v = _VERSION.match(line)
        if v:
            version = int(v.group(1))
            continue
        m = _ENTRY.match(line)
        if m:
            depth, offset = int(m.group(1)), int(m.group(2), 16)
            current = {"tag": m.group(3), "attrs": {}, "children": [], "version": version}
            entries[offset] = current
            del stack[depth:]
            if stack:
                entries[stack[-1]]["children"].append(offset)
            stack.append(offset)
            continue
        a = _ATTRIBUTE.match(line)
        if a and current is not None:
            current["attrs"][a.group(1)] = _value(a.group(2))
    return entries


# ----------------------------------------------------------------------------------- source lines

@dataclass(frozen=True)
class SourceLine:
    function: str  # '' where addr2line does not know
    file: str  # as the DWARF names it (a full path for most builds); '' where unknown
    line: int  # 0 where unknown


def source_lines(path: str, offsets: list[int]) -> list[SourceLine] | None:
    """addr2line's function and source line of each module offset of the file at path, one call
    for all; None without addr2line or when it fails."""
    if shutil.which("addr2line") is None:
        return None
    base = image_base(path)
    result = subprocess.run(["addr2line", "-f", "-C", "-e", path] + [hex(base + o) for o in offsets],
                            capture_output=True, text=True, errors="replace")
    lines = result.stdout.splitlines()
    if result.returncode != 0 or len(lines) != 2 * len(offsets):
        return None
    found = []
    for function, text in zip(lines[::2], lines[1::2], strict=True):
        file, _, line = text.partition(":")
        line = line.split(" ")[0]
        known = file != "??" and line.isdigit() and line != "0"
        found.append(SourceLine("" if function == "??" else function, file if known else "",
                                int(line) if known else 0))
    return found
