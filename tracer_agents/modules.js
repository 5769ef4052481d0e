/* What both agents (agent.js, the tracer; timing.js, tareador time) need to know about the
 * process's modules: which code is the program's, and where the calls of a task function land.
 * Loaded before either script (tracing/toolchain.py). */
'use strict';

/* Libraries installed here (libc, libstdc++, libm, MPI, ...) are not the program: the blocks they
 * allocate are named by the program's call and stay latent until the program's code touches them. */
const SYSTEM_DIRECTORIES = ['/lib/', '/lib64/', '/usr/lib/', '/usr/lib64/'];

/* Address ranges as native [lo, hi) pairs of u64, ended by a 0 pair (transform.c's in_ranges). */
function rangesBuffer(ranges) {
  const buf = Memory.alloc(16 * (ranges.length + 1));
  ranges.forEach((r, i) => {
    buf.add(16 * i).writeU64(uint64(r.base.toString()));
    buf.add(16 * i + 8).writeU64(uint64(r.base.add(r.size).toString()));
  });
  return buf;
}

function codeRanges(modules) {
  const ranges = [];
  for (const m of modules)
    for (const r of m.enumerateRanges('--x'))
      if (r.base.compare(m.base) >= 0 && r.base.compare(m.base.add(m.size)) < 0) ranges.push(r);
  return ranges;
}

/* The program's own modules: the executable and its libraries outside the system directories
 * (and not named in systemModules). */
function userModules(modules, systemModules) {
  const system = new Set(systemModules);
  return modules.filter(m => m.path === Process.mainModule.path ||
    !(system.has(m.name) || m.name.startsWith('libc.so') || SYSTEM_DIRECTORIES.some(d => m.path.startsWith(d))));
}

/* Where the program's calls of a shared library's function land: the address its imports were
 * bound to (an indirect function's chosen variant, an interposed definition), and the export.
 * imports: the executable's, by name. */
function libraryEntries(f, imports) {
  const found = new Set(imports.get(f.name) || []);
  const exported = Module.findGlobalExportByName(f.name);
  if (exported !== null) found.add(exported.toString());
  if (found.size === 0) throw new Error(`${f.name} (of ${f.library}) is not in the program's loaded libraries`);
  return [...found].map(a => ptr(a));
}

/* Every entry of the --task-function functions: {address, f}, at offsets from the executable's
 * base (the driver reads them from its symbol table) or, for a library's function, found in the
 * loaded libraries. */
function functionEntries(requested) {
  const base = Process.mainModule.base;
  const imports = new Map();
  if ((requested || []).some(f => f.library))
    for (const imp of Process.mainModule.enumerateImports())
      if (imp.address) imports.set(imp.name, (imports.get(imp.name) || []).concat([imp.address.toString()]));
  const entries = [];
  for (const f of requested || [])
    for (const address of f.library ? libraryEntries(f, imports) : f.offsets.map(offset => base.add(offset)))
      entries.push({ address, f });
  return entries;
}
