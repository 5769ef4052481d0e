"""Turning the agent's result message into a TaskTrace.

The agent ships its tables as raw C structs (shadow.c's TaskRow, ObjectRow, EdgeRow, AccessRow,
CallRow) concatenated in one buffer, followed, when the program uses MPI, by mpi.c's (CallRow,
Completion, Comm, world ranks); numpy reads them without a per-row Python loop.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter, defaultdict

import numpy as np

from tareador.taskgraph.model import (
    DEPENDENCY_KINDS,
    Access,
    Communicator,
    DataObject,
    Dependency,
    Fragment,
    MpiCall,
    TaskCall,
)

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
OBJECT_KINDS = ("heap", "global", "stack")
NO_PARENT = 0xFFFFFFFF
NOT_COMPLETED = 0xFFFFFFFFFFFFFFFF


def _unpack(meta: dict, data: bytes) -> list[np.ndarray]:
    counts = meta["counts"]
    layout: list[tuple[np.dtype, int]] = [
        (TASK_ROW, counts["tasks"]), (OBJECT_ROW, counts["objects"]), (EDGE_ROW, counts["edges"]),
        (ACCESS_ROW, counts["accesses"]), (CALL_ROW, counts["calls"])]
    if meta.get("mpi"):
        mpi = meta["mpi"]["counts"]
        layout += [(MPI_CALL_ROW, mpi["calls"]), (COMPLETION_ROW, mpi["completions"]), (COMM_ROW, mpi["comms"]),
                   (np.dtype("<i4"), mpi["ranks"])]
    if meta.get("patterns"):
        layout += [(PATTERN_ROW, meta["patterns"]["rows"]), (np.dtype("<u8"), meta["patterns"]["times"])]
    expected = sum(dtype.itemsize * n for dtype, n in layout)
    if len(data or b"") != expected:
        raise ValueError(f"agent sent {len(data or b'')} bytes of tables, expected {expected}")
    tables, offset = [], 0
    for dtype, n in layout:
        tables.append(np.frombuffer(data, dtype, n, offset))
        offset += dtype.itemsize * n
    return tables


def split_tables(meta: dict, data: bytes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    tasks, objects, edges = _unpack(meta, data)[:3]
    return (tasks, *_listed(objects, edges))


def _listed(objects: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Latent objects, blocks a system library allocated that the program's code never touched,
    are the library's own (stdio buffers, FILE structs): they carry no edges and are not listed.
    The others are numbered without gaps."""
    listed = objects["latent"] == 0
    if listed.all():
        return objects, edges
    edges = edges.copy()
    edges["object"] = (np.cumsum(listed) - 1)[edges["object"]]
    return objects[listed], edges


def refine_source_lines(sites: list[dict]) -> None:
    """Replace Frida's approximate file:line with addr2line's, one call per module; a site Frida
    could not name (the agent leaves names to addr2line after a crash in the allocator) gets
    addr2line's function."""
    if shutil.which("addr2line") is None:
        return
    by_module = defaultdict(list)
    for site in sites:
        if site.get("path") and os.path.exists(site["path"]):
            by_module[site["path"]].append(site)
    for path, group in by_module.items():
        result = subprocess.run(["addr2line", "-f", "-C", "-e", path] + [hex(s["offset"]) for s in group],
                                capture_output=True, text=True)
        lines = result.stdout.splitlines()
        if result.returncode != 0 or len(lines) != 2 * len(group):
            continue
        for site, function, text in zip(group, lines[::2], lines[1::2], strict=True):
            file, _, line = text.partition(":")
            line = line.split(" ")[0]
            if file != "??" and line.isdigit() and line != "0":
                site["file"], site["line"] = os.path.basename(file), int(line)
            if not site.get("function") and function != "??":
                site["function"] = function


def _site_text(site: dict | None) -> tuple[str, str]:
    """(short name for labels, full description) of a code address."""
    if not site:
        return "?", "?"
    where = f"{site['file']}:{site['line']}" if site.get("file") and site.get("line") else ""
    func = site.get("function") or "?"
    return (where or func), (f"{func} ({where})" if where else func)


def object_names(meta: dict, objects: np.ndarray) -> list[DataObject]:
    """Unique, readable names: globals by symbol, heap blocks by allocation site plus the
    instance number from that site, stack frames by function."""
    seen: Counter[str] = Counter()
    result = []
    for i, o in enumerate(objects):
        kind = OBJECT_KINDS[o["kind"]] if o["kind"] < len(OBJECT_KINDS) else "heap"
        site = meta["sites"].get(hex(int(o["site"])))
        if kind == "global":
            base, full = meta["globals"].get(str(i), f"global@{int(o['address']):#x}"), "symbol"
        elif kind == "stack":
            func = (site or {}).get("function") or ""
            base, full = (f"stack:{func}" if func else "stack"), (func or "thread stack")
        else:
            short, full = _site_text(site)
            base = f"heap:{short}"
        name = base if kind != "heap" and not seen[base] else f"{base}#{seen[base]}"
        seen[base] += 1
        result.append(DataObject(i, name, kind, int(o["address"]), int(o["size"]), full))
    return result


def task_rows(meta: dict, tasks: np.ndarray) -> list[Fragment]:
    names = meta["names"]
    return [Fragment(i, names[t["name"]] if t["name"] < len(names) else "?", int(t["instance"]),
                         -1 if t["parent"] == NO_PARENT else int(t["parent"]),
                         int(t["start"]), int(t["end"]), int(t["instructions"]))
            for i, t in enumerate(tasks)]


def dependency_rows(edges: np.ndarray, objects: list[DataObject]) -> list[Dependency]:
    order = np.lexsort((edges["kind"], edges["object"], edges["src"], edges["dst"]))
    return [Dependency(int(e["src"]), int(e["dst"]), DEPENDENCY_KINDS[e["kind"]], objects[e["object"]].name,
                       int(e["bytes"])) for e in edges[order]]


def _relative(lo: int, hi: int, start: int) -> tuple[int, int]:
    """[lo, hi) from the object's start; shadow.c's empty range (lo = UINT64_MAX) is -1, -1."""
    return (-1, -1) if lo > hi else (lo - start, hi - start)


def access_rows(meta: dict, data: bytes, objects: list[DataObject]) -> tuple[list[Access], list[TaskCall]]:
    """accesses.csv and calls.csv: ranges relative to each object's start; rows of latent objects
    (a library's own blocks, not listed) are dropped like their edges."""
    tables = _unpack(meta, data)
    raw_objects, accesses, calls = tables[1], tables[3], tables[4]
    listed = raw_objects["latent"] == 0
    number = np.cumsum(listed) - 1
    base = raw_objects["address"][accesses["object"]] if len(raw_objects) else np.zeros(0, "<u8")
    rows = []
    for (task, obj, part, _previous, read_lo, read_hi, write_lo, write_hi), start in zip(accesses.tolist(),
                                                                                        base.tolist()):
        if listed[obj]:
            rows.append(Access(task, objects[number[obj]].name, part, *_relative(read_lo, read_hi, start),
                               *_relative(write_lo, write_hi, start)))
    sites = meta.get("call_sites", {})
    named = []
    for task, _, site, function, args in calls.tolist():
        where, body = sites.get(hex(site), {}), sites.get(hex(function), {})
        named.append(TaskCall(task, body.get("function") or hex(function), where.get("path", ""),
                              int(body.get("offset", 0)), int(where.get("offset", 0)), ";".join(map(hex, args))))
    return rows, named


def mpi_tables(meta: dict, data: bytes, objects: list[DataObject], rank: int) -> tuple[list[MpiCall],
                                                                                     list[Communicator]]:
    """The rank's MPI calls (mpi.csv) and communicators (comms.csv). Buffers are named by the
    objects.csv name of their object; a library's own block (latent, not listed) has none."""
    tables = _unpack(meta, data)
    raw_objects, calls, completions, comms, ranks = tables[1], *tables[5:9]
    listed = raw_objects["latent"] == 0
    number = np.cumsum(listed) - 1
    names = meta["mpi"]["names"]
    completed_by = defaultdict(list)
    for call, request in completions.tolist():
        completed_by[call].append(str(request))
    rows = []
    for seq, (call, task, peer, tag, comm, obj, size, posted, completed, request) in enumerate(calls.tolist()):
        name = objects[number[obj - 1]].name if obj and listed[obj - 1] else ""
        rows.append(MpiCall(rank, seq, names[call], peer, tag, comm, size, name, posted,
                            -1 if completed == NOT_COMPLETED else completed,
                            str(request) if request >= 0 else ";".join(completed_by[seq]),
                            -1 if task == NO_PARENT else task))
    members = ranks.tolist()
    return rows, [Communicator(n, size, ";".join(map(str, members[first:first + size])))
                  for n, (size, first) in enumerate(zip(comms["size"].tolist(), comms["first"].tolist()))]


def pattern_tables(meta: dict, data: bytes) -> tuple[np.ndarray, np.ndarray] | None:
    """patterns.c's message buffers and their elements' times (None when not recorded)."""
    if not meta.get("patterns"):
        return None
    rows, times = _unpack(meta, data)[-2:]
    return rows, times
