"""The agent's table files, decoded with numpy a chunk of rows at a time.

The agent writes its tables as raw C structs, little-endian, one file per table, into a private
directory the driver gives it (tracer_agents/tables.c); shadow.c appends the rows of the growing
tables while the program runs, as soon as they are final, so that nothing in the traced process
or in any message grows with the number of task instances. Layouts (numpy dtypes below, each
field checked against the C struct by tests/test_agent_layouts.py):

- ``tasks.bin`` (TASK_ROW, shadow.c's TaskRow): one row per fragment, in id order (row k is
  fragment k). name: index into the result message's ``names``; parent: the creating fragment,
  NO_PARENT for main's fragments; instance: the instance's first fragment; start, end: the
  instruction counter; instructions: executed by the fragment itself.
- ``edges.bin`` (EDGE_ROW): dependencies, bytes per (src, dst, object, kind); kind 0 RAW, 1 WAR,
  2 WAW; object: row of objects.bin. Rows come in non-decreasing dst order, and a key may appear
  in several adjacent rows (a fragment whose edges outgrew the agent's buffer): their bytes add.
- ``accesses.bin`` (ACCESS_ROW): per (fragment, object, part), the hull [lo, hi) of the absolute
  addresses the fragment read before writing them and of those it wrote (lo = 2^64 - 1: none),
  in non-decreasing fragment order; a key may appear in several rows: their hulls join. part:
  see model.Access; previous: shadow.c's own link between rows in its buffer.
- ``calls.bin`` (CALL_ROW): the call each instance made right after its start marker.
- ``objects.bin`` (OBJECT_ROW): every object, written at the end; latent ones (a system library's
  own blocks the program never touched) are not listed, and the others are numbered without gaps.
- ``mpi-calls.bin``, ``mpi-completions.bin``, ``mpi-comms.bin``, ``mpi-ranks.bin`` (mpi.c's rows),
  ``pattern-rows.bin``, ``pattern-times.bin`` (patterns.c's), written at the end when recorded.

The trace directory's own binary form, which the driver writes from these (tareador.taskgraph
.columns), is documented there.
"""

from __future__ import annotations

import os
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path

import numpy as np

from tareador.taskgraph.model import Communicator, DataObject, MpiCall
from tareador.tracing.elf import source_lines

TASK_ROW = np.dtype([("name", "<u4"), ("parent", "<u4"), ("instance", "<u4"), ("pad", "<u4"), ("start", "<u8"),
                     ("end", "<u8"), ("instructions", "<u8")])
OBJECT_ROW = np.dtype([("address", "<u8"), ("size", "<u8"), ("site", "<u8"), ("kind", "<u4"),
                       ("disabled", "<u4"), ("alive", "<u4"), ("latent", "<u4")])
EDGE_ROW = np.dtype([("src", "<u4"), ("dst", "<u4"), ("object", "<u4"), ("kind", "<u4"), ("bytes", "<u8")])
ACCESS_ROW = np.dtype([("task", "<u4"), ("object", "<u4"), ("part", "<u4"), ("previous", "<u4"), ("read_lo", "<u8"),
                       ("read_hi", "<u8"), ("write_lo", "<u8"), ("write_hi", "<u8")])
CALL_ROW = np.dtype([("task", "<u4"), ("pad", "<u4"), ("site", "<u8"), ("function", "<u8"), ("args", "<u8", 8)])
MPI_CALL_ROW = np.dtype([("call", "<u4"), ("task", "<u4"), ("peer", "<i4"), ("tag", "<i4"), ("comm", "<i4"),
                         ("object", "<u4"), ("bytes", "<u8"), ("posted", "<u8"), ("completed", "<u8"),
                         ("request", "<i8")])
COMPLETION_ROW = np.dtype([("call", "<u8"), ("request", "<u8")])
PATTERN_ROW = np.dtype([("call", "<u8"), ("address", "<u8"), ("bytes", "<u8"), ("element", "<u8"), ("at", "<u8"),
                        ("first", "<u8"), ("end", "<u8"), ("receive", "<u4"), ("pad", "<u4")])
COMM_ROW = np.dtype([("handle", "<u8"), ("alive", "<u4"), ("me", "<u4"), ("size", "<u8"), ("first", "<u8")])
FILES: dict[str, np.dtype] = {
    "tasks.bin": TASK_ROW, "objects.bin": OBJECT_ROW, "edges.bin": EDGE_ROW, "accesses.bin": ACCESS_ROW,
    "calls.bin": CALL_ROW, "mpi-calls.bin": MPI_CALL_ROW, "mpi-completions.bin": COMPLETION_ROW,
    "mpi-comms.bin": COMM_ROW, "mpi-ranks.bin": np.dtype("<i4"), "pattern-rows.bin": PATTERN_ROW,
    "pattern-times.bin": np.dtype("<u8")}
OBJECT_KINDS = ("heap", "global", "stack")
NO_PARENT = 0xFFFFFFFF
NOT_COMPLETED = 0xFFFFFFFFFFFFFFFF
NONE = 0xFFFFFFFFFFFFFFFF  # a hull's lo when the fragment read (or wrote) nothing of the object
CHUNK_ROWS = 1 << 18  # rows decoded at a time: a few MB, whatever the table's length


def _path(directory: Path, name: str) -> tuple[Path, int]:
    """A table file and its row count; a missing file is an empty table (MPI's tables when the
    program has no MPI)."""
    path = directory / name
    size = path.stat().st_size if path.exists() else 0
    if size % FILES[name].itemsize:
        raise ValueError(f"{path}: {size} bytes is not a whole number of {FILES[name].itemsize}-byte rows")
    return path, size // FILES[name].itemsize


def rows(directory: Path, name: str) -> int:
    return _path(directory, name)[1]


def table(directory: Path, name: str) -> np.ndarray:
    """A whole table, read (for the tables that do not grow with the task instances)."""
    path, n = _path(directory, name)
    return np.fromfile(path, FILES[name], n) if n else np.zeros(0, FILES[name])


def chunks(directory: Path, name: str, key: str | None = None, size: int = CHUNK_ROWS) -> Iterator[np.ndarray]:
    """A table read a chunk of about ``size`` rows at a time. With key (a column the table is in
    non-decreasing order of), each chunk ends where a key value ends, so that a key's rows are
    all in one chunk."""
    path, n = _path(directory, name)
    dtype = FILES[name]
    carried = np.zeros(0, dtype)
    if not n:
        return
    with path.open("rb") as f:
        for a in range(0, n, size):
            chunk = np.concatenate([carried, np.fromfile(f, dtype, min(size, n - a))])
            if key is None or a + size >= n:
                carried = np.zeros(0, dtype)
                yield chunk
                continue
            keys = chunk[key]
            if len(keys) > 1 and (keys[1:] < keys[:-1]).any():
                raise ValueError(f"{path}: the rows are not in {key} order")
            cut = int(np.searchsorted(keys, keys[-1], "left"))
            carried = chunk[cut:]
            if cut:
                yield chunk[:cut]
        if len(carried):
            yield carried


def column(directory: Path, name: str, field: str) -> np.ndarray:
    """One column of a table, read a chunk at a time."""
    parts = [np.ascontiguousarray(chunk[field]) for chunk in chunks(directory, name)]
    return np.concatenate(parts) if parts else np.zeros(0, FILES[name][field])


def listed(objects: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(mask of the objects listed, each object's number among them). Latent objects, blocks a
    system library allocated that the program's code never touched, are the library's own (stdio
    buffers, FILE structs): they carry no edges and are not listed."""
    shown = objects["latent"] == 0
    return shown, np.cumsum(shown, dtype=np.int64) - 1


def merged_edges(directory: Path, number: np.ndarray) -> Iterator[np.ndarray]:
    """The dependencies, a chunk at a time: one row per (src, dst, object, kind) with its bytes
    added up, objects renumbered as listed, sorted by dst, src, object, kind (deps.csv's order)."""
    for chunk in chunks(directory, "edges.bin", "dst"):
        obj = number[chunk["object"]]
        order = np.lexsort((chunk["kind"], obj, chunk["src"], chunk["dst"]))
        src, dst, obj, kind = chunk["src"][order], chunk["dst"][order], obj[order], chunk["kind"][order]
        first = np.ones(len(order), bool)
        first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1]) | (obj[1:] != obj[:-1]) | (kind[1:] != kind[:-1])
        at = np.flatnonzero(first)
        out = np.zeros(len(at), EDGE_ROW)
        out["src"], out["dst"], out["object"], out["kind"] = src[at], dst[at], obj[at], kind[at]
        out["bytes"] = np.add.reduceat(chunk["bytes"][order], at)
        yield out


ACCESS_HULL = np.dtype([("task", "<u4"), ("object", "<u4"), ("part", "<u4"), ("read_lo", "<i8"), ("read_hi", "<i8"),
                        ("write_lo", "<i8"), ("write_hi", "<i8")])


def merged_accesses(directory: Path, objects: np.ndarray) -> Iterator[np.ndarray]:
    """accesses.csv's rows, a chunk at a time (ACCESS_HULL): one per (fragment, listed object,
    part), by fragment, object then part, hulls joined and relative to the object's start (-1, -1
    where none)."""
    shown, number = listed(objects)
    for chunk in chunks(directory, "accesses.bin", "task"):
        chunk = chunk[shown[chunk["object"]]]
        order = np.lexsort((chunk["part"], chunk["object"], chunk["task"]))
        task, obj, part = chunk["task"][order], chunk["object"][order], chunk["part"][order]
        first = np.ones(len(order), bool)
        first[1:] = (task[1:] != task[:-1]) | (obj[1:] != obj[:-1]) | (part[1:] != part[:-1])
        at = np.flatnonzero(first)
        out = np.zeros(len(at), ACCESS_HULL)
        out["task"], out["object"], out["part"] = task[at], number[obj[at]], part[at]
        base = objects["address"][obj[at]]
        for side in ("read", "write"):
            lo = np.minimum.reduceat(chunk[f"{side}_lo"][order], at) if len(at) else np.zeros(0, np.uint64)
            hi = np.maximum.reduceat(chunk[f"{side}_hi"][order], at) if len(at) else np.zeros(0, np.uint64)
            none = lo > hi
            out[f"{side}_lo"] = np.where(none, -1, (lo - base).astype(np.int64))
            out[f"{side}_hi"] = np.where(none, -1, (hi - base).astype(np.int64))
        yield out


def refine_source_lines(sites: list[dict]) -> None:
    """Replace Frida's approximate file:line with addr2line's, one call per module; a site Frida
    could not name (the agent leaves names to addr2line after a crash in the allocator) gets
    addr2line's function."""
    by_module = defaultdict(list)
    for site in sites:
        if site.get("path") and os.path.exists(site["path"]):
            by_module[site["path"]].append(site)
    for path, group in by_module.items():
        found = source_lines(path, [s["offset"] for s in group])
        for site, where in zip(group, found, strict=True) if found is not None else ():
            if where.line:
                site["file"], site["line"] = os.path.basename(where.file), where.line
            if not site.get("function") and where.function:
                site["function"] = where.function


def _site_text(site: dict | None) -> tuple[str, str]:
    """(short name for labels, full description) of a code address."""
    if not site:
        return "?", "?"
    where = f"{site['file']}:{site['line']}" if site.get("file") and site.get("line") else ""
    func = site.get("function") or "?"
    return (where or func), (f"{func} ({where})" if where else func)


def object_names(meta: dict, objects: np.ndarray) -> list[DataObject]:
    """The listed objects, with unique, readable names: globals by symbol, heap blocks by
    allocation site plus the instance number from that site, stack frames by function."""
    seen: Counter[str] = Counter()
    result: list[DataObject] = []
    shown = objects["latent"] == 0
    for raw, o in zip(np.flatnonzero(shown).tolist(), objects[shown].tolist(), strict=True):
        address, size, site_address, kind_code = o[:4]
        kind = OBJECT_KINDS[kind_code] if kind_code < len(OBJECT_KINDS) else "heap"
        site = meta["sites"].get(hex(site_address))
        if kind == "global":
            base, full = meta["globals"].get(str(raw), f"global@{address:#x}"), "symbol"
        elif kind == "stack":
            func = (site or {}).get("function") or ""
            base, full = (f"stack:{func}" if func else "stack"), (func or "thread stack")
        else:
            short, full = _site_text(site)
            base = f"heap:{short}"
        name = base if kind != "heap" and not seen[base] else f"{base}#{seen[base]}"
        seen[base] += 1
        result.append(DataObject(len(result), name, kind, address, size, full))
    return result


def mpi_tables(meta: dict, directory: Path, objects: np.ndarray, names: list[DataObject],
               rank: int) -> tuple[list[MpiCall], list[Communicator]]:
    """The rank's MPI calls (mpi.csv) and communicators (comms.csv). Buffers are named by the
    objects.csv name of their object; a library's own block (latent, not listed) has none."""
    calls, completions, comms, ranks = (table(directory, name) for name in
                                        ("mpi-calls.bin", "mpi-completions.bin", "mpi-comms.bin", "mpi-ranks.bin"))
    shown, number = listed(objects)
    call_names = meta["mpi"]["names"]
    completed_by = defaultdict(list)
    for call, request in completions.tolist():
        completed_by[call].append(str(request))
    rows = []
    for seq, (call, task, peer, tag, comm, obj, size, posted, completed, request) in enumerate(calls.tolist()):
        name = names[number[obj - 1]].name if obj and shown[obj - 1] else ""
        rows.append(MpiCall(rank, seq, call_names[call], peer, tag, comm, size, name, posted,
                            -1 if completed == NOT_COMPLETED else completed,
                            str(request) if request >= 0 else ";".join(completed_by[seq]),
                            -1 if task == NO_PARENT else task))
    members = ranks.tolist()
    return rows, [Communicator(n, size, ";".join(map(str, members[first:first + size])))
                  for n, (size, first) in enumerate(zip(comms["size"].tolist(), comms["first"].tolist()))]


def pattern_tables(meta: dict, directory: Path) -> tuple[np.ndarray, np.ndarray] | None:
    """patterns.c's message buffers and their elements' times (None when not recorded)."""
    if not meta.get("patterns"):
        return None
    return np.asarray(table(directory, "pattern-rows.bin")), np.asarray(table(directory, "pattern-times.bin"))
