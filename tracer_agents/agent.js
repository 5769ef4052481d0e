/* tareador agent: glue between the traced program and the Python driver.
 *
 * The per-access work is native (transform.c emits inline code, shadow.c analyses in batches,
 * allocations.c watches the allocator). This script only wires those together and starts and
 * stops following the main thread at tareador_ON/OFF. The result tables go to files in the
 * directory the driver names (tables.c: shadow.c appends rows as they become final); at exit,
 * crash or interrupt the agent writes what is left, sends Python the run's description (names,
 * code sites, counters) and waits for its acknowledgement, so nothing is lost when the process
 * dies right after.
 */
'use strict';

const KIND_STACK = 2;
const MARK = { ON: 1, OFF: 2, START: 3, END: 4, DISABLE: 5, ENABLE: 6 };
const MARKER_NAMES = ['', 'tareador_ON', 'tareador_OFF', 'tareador_start_task', 'tareador_end_task',
  'tareador_disable_object', 'tareador_enable_object'];
const STACK_SPAN = 8 * 1024 * 1024;
const PR_SET_PDEATHSIG = 1, SIGKILL = 9;
const ADDR_NO_RANDOMIZE = 0x0040000;
/* The ring of the program's calls into libraries (CALLS_OFFSET as in allocations.c): a cursor,
 * then 16 entries of {return address, stack slot}, aligned to their size so that the stubs wrap
 * the cursor with an 8-bit add. */
const CALLS_OFFSET = 256;
/* Globals that the C runtime or libc put into the executable: never user data. */
const RUNTIME_GLOBALS = new Set(['stdin', 'stdout', 'stderr', 'environ', '__environ', 'completed.0',
  'optarg', 'optind', 'opterr', 'optopt', 'program_invocation_name', 'program_invocation_short_name']);

/* What mpi.c calls in the MPI library itself (through PMPI_, which its hooks do not see). */
const MPI_QUERIES = ['Type_size', 'Type_get_extent', 'Type_get_true_extent', 'Get_count', 'Comm_size', 'Comm_rank',
  'Comm_group', 'Group_translate_ranks', 'Group_free', 'Type_get_envelope', 'Type_get_contents', 'Type_free'];
/* The names of the rows an MPI_Start or MPI_Startall of a persistent request makes, by the
 * request's kind (mpi.c's Persistent.kind): what the started operation is to the run. */
const STARTED_ROWS = ['MPI_Start', 'MPI_Startall'].flatMap(start =>
  ['MPI_Send_init', 'MPI_Bsend_init', 'MPI_Ssend_init', 'MPI_Rsend_init', 'MPI_Recv_init'].map(init => `${start}:${init}`));
/* Files and row sizes of mpi.c's tables: calls, completions, communicators, world ranks. */
const MPI_TABLES = [['mpi-calls.bin', 56], ['mpi-completions.bin', 16], ['mpi-comms.bin', 32], ['mpi-ranks.bin', 4]];
/* ... and of patterns.c's: message buffers, element times. */
const PATTERN_TABLES = [['pattern-rows.bin', 64], ['pattern-times.bin', 8]];

let native = null;
let endings = null;
let shipping = false;   /* finish() has begun, on some thread */
let shipped = false;    /* ... and Python has the tables */
let mainReturned = false;
let abortWaits = false;  /* trace --mpi under tareador mpirun: MPI_Abort waits to be killed (watchAbort) */
let threadsCreated = 0;
let childrenStarted = 0;
const globalNames = {};
const warnings = [];

function fn(module, name, ret, args) {
  return new NativeFunction(module.getExportByName(name), ret, args, { exceptions: 'propagate' });
}

function mainThreadStack() {
  const line = File.readAllText('/proc/self/maps').split('\n').find(l => l.endsWith('[stack]'));
  const high = ptr('0x' + line.split(' ')[0].split('-')[1]);
  return { low: high.sub(STACK_SPAN), high };
}

function findMarker(name) {
  const main = Process.mainModule;
  return main.findExportByName(name) || main.findSymbolByName(name) || Module.findGlobalExportByName(name);
}

/* The writable globals of the program's own code: the executable's, and those of its own
 * shared libraries (outside the system directories) whose functions are tasks: the driver
 * names them. Not every such library's: an interpreter's (libpython) would make its own state
 * objects. */
function registerGlobals(shadow, modules) {
  for (const s of modules.flatMap(m => m.enumerateSymbols())) {
    if (s.type !== 'object' || !s.size || !s.section || s.section.protection.indexOf('w') < 0) continue;
    if (s.name.startsWith('_') || s.name.startsWith('tareador_') || RUNTIME_GLOBALS.has(s.name)) continue;
    if (s.name.indexOf('@') >= 0) continue;
    const id = shadow.addObject(s.address, s.size, 1, s.address, 0);
    globalNames[id] = s.name;
  }
}

/* The program's functions as sorted {start, end} pairs, for naming stack frames by their owner
 * (shadow.c's tr_set_functions). */
function setFunctions(shadow, modules) {
  const ranges = [];
  for (const m of modules)
    for (const s of m.enumerateSymbols())
      if (s.type === 'function' && s.size && !s.address.isNull()) ranges.push([s.address, s.address.add(s.size)]);
  ranges.sort((a, b) => a[0].compare(b[0]));
  const table = Memory.alloc(16 * Math.max(1, ranges.length));
  ranges.forEach(([start, end], i) => {
    table.add(16 * i).writePointer(start);
    table.add(16 * i + 8).writePointer(end);
  });
  fn(shadow.lib, 'tr_set_functions', 'void', ['pointer', 'uint64'])(table, ranges.length);
  return table;
}

function hookAllocator(cm) {
  const hooks = [['malloc', 'malloc'], ['calloc', 'calloc'], ['realloc', 'realloc'], ['free', 'free'],
    ['memalign', 'memalign'], ['aligned_alloc', 'memalign'], ['posix_memalign', 'posix_memalign']];
  /* C++ operator new and new[], every variant: a block the program asks for, like malloc's. */
  for (const array of ['w', 'a'])
    for (const variant of ['', 'RKSt9nothrow_t', 'St11align_val_t', 'St11align_val_tRKSt9nothrow_t'])
      hooks.push([`_Zn${array}m${variant}`, 'new']);
  /* mmap/munmap are not hooked: Stalker itself maps code slabs on the traced thread, and a
   * listener there re-enters the analysis. Large mallocs served by mmap are still seen as malloc. */
  for (const [symbol, listener] of hooks) {
    const target = Module.findGlobalExportByName(symbol);
    if (target !== null)
      Interceptor.attach(target, { onEnter: cm[listener + '_enter'], onLeave: cm[listener + '_leave'] });
  }
}

/* The functions whose calls are tasks (--task-function): {count, then (entry, name) pairs sorted
 * by entry} for transform.c (modules.js functionEntries); and the return stub their calls come
 * back through (shadow.c). The stub runs under Stalker after the callout set tr_return_to: it
 * puts that address where its return address was and returns there, keeping every register and
 * the flags. */
function taskFunctions(requested, lib) {
  const names = new Map((requested || []).map(f => [f.name, Memory.allocUtf8String(f.name)]));
  const entries = functionEntries(requested).map(e => ({ address: e.address, name: names.get(e.f.name) }));
  entries.sort((a, b) => a.address.compare(b.address));
  const table = Memory.alloc(8 * (1 + 2 * entries.length));
  table.writeU64(entries.length);
  entries.forEach((e, i) => {
    table.add(8 + 16 * i).writePointer(e.address);
    table.add(16 + 16 * i).writePointer(e.name);
  });
  const stub = Memory.alloc(Process.pageSize);
  Memory.patchCode(stub, 64, code => {
    const w = new X86Writer(code, { pc: stub });
    w.putLeaRegRegOffset('rsp', 'rsp', -8);
    w.putPushReg('rax');
    w.putMovRegAddress('rax', lib.getExportByName('tr_return_to'));
    w.putMovRegRegPtr('rax', 'rax');
    w.putMovRegOffsetPtrReg('rsp', 8, 'rax');
    w.putPopReg('rax');
    w.putRet();
    w.flush();
  });
  lib.getExportByName('tr_return_stub').writePointer(stub);
  return { table, names, stub };
}

function loadNative(options) {
  const lib = Module.load(options.shadowLibrary);
  const shadow = {
    lib,
    init: fn(lib, 'tr_init', 'int', ['uint64', 'uint64', 'pointer', 'uint64', 'uint64']),
    addObject: fn(lib, 'tr_add_object', 'int64', ['pointer', 'uint64', 'uint32', 'pointer', 'uint32']),
    marker: fn(lib, 'tr_marker', 'void', ['uint32', 'pointer', 'pointer', 'pointer', 'pointer']),
    finish: fn(lib, 'tr_finish', 'void', []),
    sites: fn(lib, 'tr_sites', 'pointer', ['uint32', 'pointer']),
    tableWrite: fn(lib, 'tr_table_write', 'int64', ['pointer', 'pointer', 'uint64']),
    tablesError: fn(lib, 'tr_tables_error', 'int64', []),
    name: fn(lib, 'tr_name', 'pointer', ['uint32']),
    nameCount: fn(lib, 'tr_name_count', 'uint32', []),
    original: fn(lib, 'tr_original', 'pointer', ['pointer']),
    state: lib.getExportByName('tr_state'),
    statusFn: fn(lib, 'tr_status', 'void', ['pointer']),
    inAllocator: fn(lib, 'tr_in_allocator', 'uint32', []),
    status() {
      const out = Memory.alloc(80);
      this.statusFn(out);
      const v = i => out.add(8 * i).readU64().toNumber();
      return { accesses: v(0), flushes: v(1), tasks: v(2), error: v(3), errorTask: v(4), errorName: v(5),
        errorSite: out.add(48).readPointer(), instructions: v(7), instances: v(8), tinf: v(9) };
    },
  };
  const stack = mainThreadStack();
  shadow.tablesDirectory = Memory.allocUtf8String(options.tablesDirectory);
  const started = shadow.init(options.bufferRecords, options.tableRows, shadow.tablesDirectory,
    uint64(stack.low.toString()), uint64(stack.high.toString()));
  if (started === -2)
    throw new Error(`cannot write the trace's tables in ${options.tablesDirectory}: ${systemError(shadow.tablesError().toNumber())}`);
  if (started !== 0) throw new Error('cannot allocate shadow memory');
  shadow.addObject(stack.low, STACK_SPAN, KIND_STACK, ptr(0), 1);

  const ignored = new Set([lib.name, 'ld-linux-x86-64.so.2', 'linux-vdso.so.1'].concat(options.ignoredModules));
  const analysed = Process.enumerateModules().filter(m => !ignored.has(m.name) && !m.name.startsWith('libtareador'));
  const program = userModules(analysed, options.systemModules);
  const own = new Set(options.ownLibraries);
  registerGlobals(shadow, program.filter(m => m.path === Process.mainModule.path || own.has(m.path)));
  const functionRanges = setFunctions(shadow, program);
  const markers = Memory.alloc(8 * 7);
  /* tareador explore: the candidate functions are the tasks, not the program's own markers. */
  const found = MARKER_NAMES.map((name, k) => (k === 0 || (options.explore && (k === MARK.START || k === MARK.END))
    ? null : findMarker(name)));
  found.forEach((address, k) => { if (address !== null) markers.add(8 * k).writePointer(address); });
  /* The spawned process's main thread has the process id as thread id. */
  const thread = Memory.alloc(8);
  thread.writeU64(Process.id);
  const blocks = Memory.alloc(8);
  /* trace --mpi: communication patterns (patterns.c), timed by the transform's time records. */
  const patterns = Memory.alloc(8);
  if (options.patterns) {
    if (fn(lib, 'tr_patterns_enable', 'int', [])() !== 0) throw new Error('cannot allocate the patterns shadow');
    patterns.writeU64(1);
  }
  const stackBounds = Memory.alloc(16);
  stackBounds.writePointer(stack.low);
  stackBounds.add(8).writePointer(stack.high);
  const calls = Memory.alloc(Process.pageSize);
  calls.writePointer(calls.add(CALLS_OFFSET));
  const mapping = Memory.alloc(16);
  mapping.writePointer(Module.getGlobalExportByName('mmap'));
  mapping.add(8).writePointer(Module.getGlobalExportByName('munmap'));
  const symbols = {
    tr_state: shadow.state,
    tr_flush_callout: lib.getExportByName('tr_flush_callout'),
    tr_marker: lib.getExportByName('tr_marker'),
    tr_translated: lib.getExportByName('tr_translated'),
    tr_task_sites: lib.getExportByName('tr_task_sites'),
    tr_task_call: lib.getExportByName('tr_task_call'),
    tareador_code_ranges: rangesBuffer(codeRanges(analysed)),
    tareador_user_ranges: rangesBuffer(codeRanges(program)),
    tareador_markers: markers,
    tareador_blocks: blocks,
    tareador_patterns: patterns,
    tareador_thread: thread,
    tareador_stack: stackBounds,
    tareador_calls: calls,
    tareador_libc_mapping: mapping,
    gettid: Module.getGlobalExportByName('gettid'),
  };
  for (const name of ['tr_enter_allocator', 'tr_leave_allocator', 'tr_add_object', 'tr_add_latent', 'tr_claim',
    'tr_remove_object_at', 'tr_unmap', 'tr_move_object', 'tr_mark_written'])
    symbols[name] = lib.getExportByName(name);
  for (const name of ['tr_function_enter', 'tr_function_return', 'tr_return_stub', 'tr_xsave_bytes'])
    symbols[name] = lib.getExportByName(name);
  const functions = taskFunctions(options.taskFunctions, lib);
  symbols.tareador_functions = functions.table;
  const transform = new CModule(options.transformSource, symbols);
  const allocations = new CModule(options.allocationsSource, symbols);
  return { shadow, transform, allocations, mpi: null, markers: found, thread, blocks, symbols, program, calls,
    functions, functionRanges,
    patterns: options.patterns ? [fn(lib, 'tr_pattern_rows', 'pointer', ['pointer']),
      fn(lib, 'tr_pattern_times', 'pointer', ['pointer'])] : null,
    patternsDropped: fn(lib, 'tr_patterns_dropped', 'uint64', []) };
}

/* The MPI library is the one exporting MPI_Init (libmpi, libmpich). */
function isMpiLibrary(m) {
  return m.path !== Process.mainModule.path && m.findExportByName('MPI_Init') !== null;
}

/* Open MPI is told apart by its export ompi_mpi_comm_world, not by the library's name (the
 * MPICH wheel's is libmpi.so.12 too). Its predefined communicators may have been copied into the
 * program (R_X86_64_COPY): the program uses that copy when it has one. */
function loadMpi(source, library) {
  const lib = native.shadow.lib;
  /* Whole pages: zeroed. */
  const state = Memory.alloc(Process.pageSize);
  const symbols = { tareador_mpi: state, tareador_thread: native.thread };
  for (const name of ['tr_enter_mpi', 'tr_leave_mpi', 'tr_mpi_polled', 'tr_mpi_access', 'tr_grow', 'tr_pattern_send',
    'tr_pattern_receive'])
    symbols[name] = lib.getExportByName(name);
  for (const name of MPI_QUERIES)
    symbols['PMPI_' + name] = library.findExportByName('PMPI_' + name) || library.getExportByName('MPI_' + name);
  const cm = new CModule(source, symbols);
  const openmpi = library.findExportByName('ompi_mpi_comm_world') !== null;
  const address = name => uint64(openmpi ?
    (Process.mainModule.findExportByName(name) || library.getExportByName(name)).toString() : '0');
  new NativeFunction(cm.mpi_setup, 'void', ['uint32', 'uint64', 'uint64', 'uint64'])(openmpi ? 1 : 0,
    address('ompi_mpi_comm_world'), address('ompi_mpi_comm_self'), address('ompi_mpi_comm_null'));
  return { cm, state, library, kind: openmpi ? 'openmpi' : 'mpich', names: [], modelled: [],
    table: new NativeFunction(cm.mpi_table, 'pointer', ['uint32', 'pointer']),
    status: new NativeFunction(cm.mpi_status, 'void', ['pointer']),
    inside: new NativeFunction(cm.mpi_inside, 'uint32', []) };
}

/* Every MPI_ function the library exports gets mpi.c's listeners (the calls tareador does not
 * model are still recorded, by name, with their time). Open MPI crashes when Stalker follows
 * MPI_Init: the thread is left at its entry and followed again from its return. */
function hookMpi(mpi) {
  const hookData = new NativeFunction(mpi.cm.mpi_hook_data, 'uint64', ['uint32', 'pointer']);
  const hooked = new Set();
  for (const e of mpi.library.enumerateExports()) {
    if (e.type !== 'function' || !e.name.startsWith('MPI_') || hooked.has(e.address.toString())) continue;
    hooked.add(e.address.toString());
    const data = hookData(mpi.names.length, Memory.allocUtf8String(e.name));
    try {
      Interceptor.attach(e.address, { onEnter: mpi.cm.mpi_enter, onLeave: mpi.cm.mpi_leave }, ptr(data.toString()));
      mpi.names.push(e.name);
      mpi.modelled.push((data.toNumber() & 0xff) !== 0);
    } catch (error) {
      /* Too short to hook (a constant's getter): its calls go unrecorded. */
    }
  }
  new NativeFunction(mpi.cm.mpi_start_names, 'void', ['uint64'])(mpi.names.length);
  for (const name of STARTED_ROWS) {
    mpi.names.push(name);
    mpi.modelled.push(true);
  }
  watchAbort(mpi);
  for (const name of ['MPI_Init', 'MPI_Init_thread']) {
    const init = mpi.library.findExportByName(name);
    if (init === null) continue;
    Interceptor.attach(init, {
      onEnter() {
        this.paused = following;
        if (this.paused) Stalker.unfollow(this.threadId);
      },
      onLeave() { if (this.paused) follow(this.threadId); },
    });
  }
}

/* MPI_Abort ends every rank of the job: the trace of this one is shipped first, named by the
 * program's line. Under tareador mpirun (abortWaits) the program then waits to be killed instead
 * of aborting the job, so that the other ranks' tracers are stopped as for a crash and write
 * theirs; otherwise the real MPI_Abort goes on. */
function watchAbort(mpi) {
  const abort = mpi.library.findExportByName('MPI_Abort');
  if (abort === null) return;
  const pause = new NativeFunction(Module.getGlobalExportByName('pause'), 'int', []);
  Interceptor.attach(abort, {
    onEnter(args) {
      finish({ kind: 'abort', status: args[1].toInt32(), where: describe(this.returnAddress.sub(1)) });
      if (abortWaits)
        for (;;) pause();
    },
  });
}

/* ON/OFF do not nest: ON while on is ignored (and counted for a warning), the first OFF ends the
 * analysed region. Following twice would leave the thread followed after OFF. */
let following = false;
let redundantOn = 0;

function follow(threadId) {
  Stalker.follow(threadId, { transform: native.transform.transform });
}

function startFollowing(context, threadId) {
  if (following) { redundantOn++; return; }
  following = true;
  native.shadow.marker(MARK.ON, ptr(0), context.rsp, context.rsp.readPointer(), context.rbp);
  follow(threadId);
}

function stopFollowing(context, threadId) {
  if (!following) return;
  following = false;
  native.shadow.marker(MARK.OFF, ptr(0), context.rsp, context.rsp.readPointer(), context.rbp);
  Stalker.unfollow(threadId);
}

/* Set when the program crashed inside the allocator: Frida's symbol lookup allocates with the
 * program's malloc, whose lock the crash may hold, so names are left to the driver's addr2line. */
let heapLocked = false;

/* Frida's line lookup is approximate; the module path and offset let the driver ask addr2line. */
function describe(address) {
  const m = Process.findModuleByAddress(address);
  if (heapLocked)
    return { function: '', file: '', line: 0, module: m ? m.name : '', path: m ? m.path : '',
      offset: m ? address.sub(m.base).toInt32() : 0 };
  const s = DebugSymbol.fromAddress(address);
  return { function: s.name || '', file: s.fileName ? s.fileName.split('/').pop() : '', line: s.lineNumber || 0,
    module: s.moduleName || '', path: m ? m.path : '', offset: m ? address.sub(m.base).toInt32() : 0 };
}

/* The program's GOT slots by address, and the imports they hold. */
let importSlots = null;

/* A call through the PLT (cblas_dgemm@plt) targets a stub without a symbol (Frida names it by
 * its offset, 0x1090): its name is the import whose GOT slot the stub jumps through (endbr64,
 * then a jmp, maybe bnd, via [rip+d]). */
function describeCallee(address) {
  const d = describe(address);
  if (d.function !== '' && !d.function.startsWith('0x')) return d;
  try {
    let insn = Instruction.parse(address);
    if (insn.mnemonic === 'endbr64') insn = Instruction.parse(insn.next);
    const op = insn.operands[0];
    if (!insn.mnemonic.endsWith('jmp') || op === undefined || op.type !== 'mem' || op.value.base !== 'rip') return d;
    if (importSlots === null) {
      importSlots = new Map();
      for (const m of native.program)
        for (const imp of m.enumerateImports()) if (imp.slot) importSlots.set(imp.slot.toString(), imp.name);
    }
    d.function = importSlots.get(insn.next.add(op.value.disp).toString()) || '';
  } catch (e) {
    /* Not readable code: left unnamed. */
  }
  return d;
}

/* Under Stalker a fault happens in Frida's copy of the code, outside every module: name the
 * instruction it copies. */
function originalAddress(address) {
  if (Process.findModuleByAddress(address) !== null) return address;
  const original = native.shadow.original(address);
  return original.isNull() ? address : original;
}

/* The system's description of an errno value. */
function systemError(errno) {
  const strerror = new NativeFunction(Module.getGlobalExportByName('strerror'), 'pointer', ['int']);
  return strerror(errno).readUtf8String();
}

/* The CPU time the process has used so far (its threads', Frida's included): user and system. */
function cpuSeconds() {
  const getrusage = new NativeFunction(Module.getGlobalExportByName('getrusage'), 'int', ['int', 'pointer']);
  const usage = Memory.alloc(144);
  getrusage(0, usage);   /* RUSAGE_SELF; struct rusage starts with ru_utime and ru_stime, timevals */
  const t = i => usage.add(8 * i).readS64().toNumber();
  return t(0) + t(2) + (t(1) + t(3)) / 1e6;
}

/* The process's peak resident memory, in bytes (its own: getrusage's would include the driver
 * the process was forked from). */
function peakResidentBytes() {
  const line = File.readAllText('/proc/self/status').split('\n').find(l => l.startsWith('VmHWM:'));
  return line === undefined ? 0 : parseInt(line.split(/\s+/)[1], 10) * 1024;
}

/* The addresses of one of shadow.c's site lists (tr_sites). */
function siteList(which) {
  const count = Memory.alloc(8);
  const base = native.shadow.sites(which, count);
  const sites = [];
  for (let i = 0, n = count.readU64().toNumber(); i < n; i++) sites.push(base.add(8 * i).readPointer());
  return sites;
}

/* An end-of-run table of mpi.c or patterns.c into its file: its row count. */
function writeTable(getter, [file, rowSize]) {
  const count = Memory.alloc(8);
  const base = getter(count);
  const n = count.readU64().toNumber();
  native.shadow.tableWrite(Memory.allocUtf8String(file), base, n && !base.isNull() ? n * rowSize : 0);
  return n;
}

/* Write what is left of the tables and describe the run to Python; block until Python has it.
 * A forked child has a copy of the tables but no driver: it ends untraced. */
function finish(ending) {
  if (shipping || endings.getpid() !== endings.pid) return;
  shipping = true;
  native.shadow.finish();
  const s = native.shadow;
  const names = [];
  for (let i = 0; i < s.nameCount(); i++) {
    const p = s.name(i);
    names.push(p.isNull() ? '?' : p.readUtf8String());
  }
  /* Sites are return addresses: the call itself is the byte before. Latent objects are not
   * listed. Many objects share a site: it is described once. */
  const sites = {};
  for (const site of siteList(0)) sites[site.toString()] = describe(site.sub(1));
  /* The calls tasks make right after their start marker: the called function and the call site,
   * for tareador hints (DWARF parameters, the source line's argument expressions). */
  const callSites = {};
  for (const site of siteList(1)) {
    const callee = site.add(5).add(site.add(1).readS32());
    if (!(site.toString() in callSites)) callSites[site.toString()] = describe(site);
    if (!(callee.toString() in callSites)) callSites[callee.toString()] = describeCallee(callee);
  }
  const status = s.status();
  const error = { code: status.error, task: status.errorTask, name: status.errorName };
  if (status.error && !status.errorSite.isNull()) error.site = describe(status.errorSite.sub(1));
  if (redundantOn)
    warnings.push(`tareador_ON() was called ${redundantOn} time(s) while the analysis was already on: ignored ` +
      '(ON/OFF do not nest; the first tareador_OFF() ends the analysed region)');
  if (threadsCreated)
    warnings.push(`the program created ${threadsCreated} thread(s); only the main thread was traced`);
  if (childrenStarted)
    warnings.push(`the program started ${childrenStarted} child process(es) (fork, system, popen, posix_spawn); ` +
      'they ran untraced');
  const meta = {
    type: 'result', ending, names, sites, globals: globalNames, error, warnings,
    call_sites: callSites,
    accesses: status.accesses, flushes: status.flushes, instructions: status.instructions,
    instances: status.instances, fragments: status.tasks, tinf: status.tinf,
    blocks: native.blocks.readU64().toNumber(),
    markers: native.markers.slice(1).map(a => a !== null),
    mpi: null,
  };
  if (native.mpi !== null) {
    const mpi = native.mpi;
    const [calls, completions, comms, ranks] = MPI_TABLES.map((t, which) => writeTable(c => mpi.table(which, c), t));
    const out = Memory.alloc(48);
    mpi.status(out);
    const v = i => out.add(8 * i).readS64().toNumber();
    meta.mpi = { library: mpi.kind, names: mpi.names, modelled: mpi.modelled, rank: v(0), size: v(1), complex: v(2),
      pending: v(3), unpatterned: v(4), counts: { calls, completions, comms, ranks } };
  }
  meta.patterns = null;
  if (native.patterns !== null) {
    const [rows, times] = native.patterns.map((getter, which) => writeTable(getter, PATTERN_TABLES[which]));
    meta.patterns = { rows, times, dropped: native.patternsDropped().toNumber() };
  }
  meta.cpu_seconds = cpuSeconds();
  meta.peak_rss = peakResidentBytes();
  const failed = s.tablesError().toNumber();
  meta.tables_error = failed ? systemError(failed) : null;
  send(meta);
  recv('ack', () => {}).wait();
  shipped = true;
}

/* Rewrite the program's GOT entries (done when main starts, after the dynamic linker has filled
 * them): mmap/munmap go to the native wrappers (allocations.c), so the program's mappings are
 * objects (not those of constructors, before main); and every call into a library goes through a
 * stub that notes its return address and stack slot in the calls ring, then jumps on, so that a
 * block the library allocates is named by the program's line. Stubs use r10 and r11 only,
 * which no call passes arguments in. */
function stubLibraryCalls(cm) {
  const wrappers = { mmap: cm.tareador_mmap, mmap64: cm.tareador_mmap, munmap: cm.tareador_munmap };
  const imports = [];
  for (const m of native.program)
    for (const imp of m.enumerateImports())
      if (imp.type === 'function' && imp.slot && !imp.slot.readPointer().isNull()) imports.push(imp);
  const size = Math.ceil((64 + 16 * imports.length) / Process.pageSize) * Process.pageSize;
  /* Kept in native: memory from Memory.alloc is freed with its last reference. The stubs reach
   * the cursor by absolute address, never RIP-relative: Stalker copies what it follows into its
   * own code, and where that lands more than 2 GiB from the cursor Frida 17 relocates a
   * RIP-relative load wrongly (seen as a crash in the first MPI_Send of a rank whose mappings
   * had moved). rax is kept below the stack pointer meanwhile: at a call's first instruction the
   * red zone is free, and r10 and r11 (the target) are the only other registers a call may
   * clobber, al counting a variadic call's vector registers. */
  const code = native.stubs = Memory.alloc(size);
  const stubs = [];
  Memory.patchCode(code, size, c => {
    const w = new X86Writer(c, { pc: code });
    const cursor = [];
    w.putBytes([0x48, 0x89, 0x44, 0x24, 0xf8]);        /* mov [rsp-8], rax */
    w.putBytes([0x48, 0xa1]);                          /* movabs rax, [cursor] */
    cursor.push(w.offset);
    w.putBytes([0, 0, 0, 0, 0, 0, 0, 0]);
    w.putBytes([0x4c, 0x8b, 0x14, 0x24, 0x4c, 0x89, 0x10]);  /* mov r10, [rsp]; mov [rax], r10: the return address */
    w.putBytes([0x48, 0x89, 0x60, 0x08]);              /* mov [rax+8], rsp: its slot */
    w.putBytes([0x04, 0x10]);                          /* add al, 16: the next entry */
    w.putBytes([0x48, 0xa3]);                          /* movabs [cursor], rax */
    cursor.push(w.offset);
    w.putBytes([0, 0, 0, 0, 0, 0, 0, 0]);
    w.putBytes([0x48, 0x8b, 0x44, 0x24, 0xf8]);        /* mov rax, [rsp-8] */
    w.putJmpReg('r11');
    for (const imp of imports) {
      stubs.push(code.add(w.offset));
      w.putMovRegAddress('r11', wrappers[imp.name] || imp.slot.readPointer());
      w.putJmpAddress(code);
    }
    w.flush();
    for (const at of cursor) c.add(at).writePointer(native.calls);
  });
  imports.forEach((imp, k) => {
    Memory.protect(imp.slot, Process.pointerSize, 'rw-');
    imp.slot.writePointer(stubs[k]);
  });
}

/* The MPI library the program links, or the one it loads later (mpi4py does), is hooked before
 * the program can call it: a loaded one when dlopen returns (hooking it from the dynamic
 * linker's notification, inside dlopen, crashes the process). */
function watchForMpi(source) {
  const attach = () => {
    const library = Process.enumerateModules().find(isMpiLibrary);
    if (library === undefined) return false;
    native.mpi = loadMpi(source, library);
    hookMpi(native.mpi);
    return true;
  };
  const dlopen = Module.findGlobalExportByName('dlopen');
  if (attach() || dlopen === null) return;
  const watch = Interceptor.attach(dlopen, { onLeave() { if (attach()) watch.detach(); } });
}

function install(options) {
  hookAllocator(native.allocations);
  watchForMpi(options.mpiSource);
  const main = Process.mainModule.findExportByName('main') || Process.mainModule.findSymbolByName('main');
  if (main !== null) {
    const redirect = Interceptor.attach(main, {
      onEnter() { stubLibraryCalls(native.allocations); endings.alternateStack(); redirect.detach(); },
    });
    /* exit() after main returned with a task open is a marker error; exit() inside a task is not. */
    Interceptor.attach(main, { onLeave() { mainReturned = true; } });
  }
  const onAddress = native.markers[MARK.ON];
  const offAddress = native.markers[MARK.OFF];
  if (onAddress !== null) {
    Interceptor.attach(onAddress, { onEnter() { startFollowing(this.context, this.threadId); } });
    Interceptor.attach(offAddress, { onEnter() { stopFollowing(this.context, this.threadId); } });
  } else {
    /* No tareador_ON in the program: the whole of main is one task. */
    if (main === null) throw new Error('the program has neither tareador_ON nor a main symbol');
    Interceptor.attach(main, { onEnter() { startFollowing(this.context, this.threadId); } });
  }
  for (const name of ['exit', '_exit'])
    Interceptor.attach(Module.getGlobalExportByName(name), {
      onEnter(args) { finish({ kind: 'exit', status: args[0].toInt32(), main_returned: mainReturned }); },
    });
  const create = Module.findGlobalExportByName('pthread_create');
  if (create !== null)
    Interceptor.attach(create, { onEnter() { if (native.mpi === null || !native.mpi.inside()) threadsCreated++; } });
  /* system() and popen() start their child with posix_spawn. */
  for (const name of ['posix_spawn', 'posix_spawnp']) {
    const start = Module.findGlobalExportByName(name);
    if (start !== null) Interceptor.attach(start, { onEnter() { childrenStarted++; } });
  }
  /* A child forked under Stalker crashes: fork unfollowed, and only the parent follows again. */
  Interceptor.attach(Module.getGlobalExportByName('fork'), {
    onEnter() {
      childrenStarted++;
      this.followed = following;
      if (following) Stalker.unfollow(this.threadId);
    },
    onLeave() {
      if (this.followed && endings.getpid() === endings.pid)
        Stalker.follow(this.threadId, { transform: native.transform.transform });
    },
  });
  Process.setExceptionHandler(details => {
    heapLocked = native.shadow.inAllocator() !== 0;
    const address = originalAddress(details.address);
    const caller = inProgram(address) ? null : programCaller(details.context);
    finish({ kind: 'crash', signal: details.type, address: address.toString(),
      where: describe(caller === null ? address : caller.sub(1)), stack_overflow: nearStackPointer(details),
      library: caller === null ? null : describe(address).module, in_allocator: heapLocked });
    return false;
  });
}

function inProgram(address) {
  return native.program.some(m => address.compare(m.base) >= 0 && address.compare(m.base.add(m.size)) < 0);
}

/* A crash inside a library (abort() raising SIGABRT from pthread_kill, a fault in memcpy): the
 * innermost return address into the program's own code, found by scanning the stack for a word
 * that points just after a call instruction of the program (Frida's backtracers allocate with
 * the program's malloc, which a crash in the allocator may hold). */
function programCaller(context) {
  const SCAN = 65536;
  try {
    for (let at = context.sp; at.compare(context.sp.add(SCAN)) < 0; at = at.add(8)) {
      const value = at.readPointer();
      if (inProgram(value) && afterCall(value)) return value;
    }
  } catch (error) {
    /* the end of the stack's mapping */
  }
  return null;
}

function afterCall(address) {
  try {
    const op = k => address.sub(k).readU8();
    const reg = k => (address.sub(k - 1).readU8() >> 3) & 7;   /* ModRM's reg field: 2 is call */
    return op(5) === 0xe8 || [2, 3, 4, 6, 7].some(k => op(k) === 0xff && reg(k) === 2);
  } catch (error) {
    return false;
  }
}

/* A fault within reach of the stack pointer is the stack running out (it is handled on the
 * alternate stack that tr_endings_alternate_stack gives the main thread). */
function nearStackPointer(details) {
  if (!details.memory) return false;
  /* Compared as 64-bit addresses: a NULL write is 2^47 below the stack, not near it. */
  const address = details.memory.address, sp = details.context.sp;
  return address.compare(sp.sub(65536)) >= 0 && address.compare(sp.add(65536)) < 0;
}

/* endings.c: what the handler of an ending signal needs, and the timer that ships the tables
 * while it parks the main thread. */
function loadEndings(lib) {
  const frida = File.readAllText('/proc/self/maps').split('\n').filter(l => l.indexOf('frida-agent') >= 0)
    .map(l => l.split(' ')[0].split('-').map(a => ptr('0x' + a)));
  const busy = [{ base: lib.base, size: lib.size }];
  if (frida.length) busy.push({ base: frida[0][0], size: frida[frida.length - 1][1].sub(frida[0][0]).toUInt32() });
  const e = {
    install: fn(lib, 'tr_endings_install', 'int', ['uint32', 'uint32', 'pointer', 'uint32']),
    alternateStack: fn(lib, 'tr_endings_alternate_stack', 'void', []),
    stop: fn(lib, 'tr_endings_stop', 'void', []),
    take: fn(lib, 'tr_endings_take', 'int', []),
    release: fn(lib, 'tr_endings_release', 'void', []),
    getpid: new NativeFunction(Module.getGlobalExportByName('getpid'), 'int', []),
  };
  /* The spawned process's main thread has the process id as thread id. */
  e.pid = Process.id;
  e.stopSignal = e.install(e.pid, e.pid, rangesBuffer(busy), busy.length);
  /* The program dies with tareador, even when tareador is killed outright. */
  const prctl = new NativeFunction(Module.getGlobalExportByName('prctl'), 'int', ['int', 'long', 'long', 'long', 'long']);
  prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  setInterval(() => {
    /* Another thread is shipping (exit, crash): a parked main thread gives up and is signalled again. */
    if (shipping && !shipped) return;
    const signal = e.take();
    if (signal === 0) return;
    finish(signal === e.stopSignal ? { kind: 'interrupt' } : { kind: 'signal', signal });
    e.release();
  }, 10);
  return e;
}

/* The driver spawns the program without ASLR so that libc's alignment-dependent paths, and so
 * the instruction counts, repeat from run to run; say so when that failed. */
function checkFixedAddresses() {
  if (!(parseInt(File.readAllText('/proc/self/personality'), 16) & ADDR_NO_RANDOMIZE))
    warnings.push('ASLR could not be disabled (is setarch missing, or personality() forbidden?): instruction counts may differ from run to run');
}

rpc.exports = {
  init(options) {
    abortWaits = options.abortWaits;
    native = loadNative(options);
    endings = loadEndings(native.shadow.lib);
    checkFixedAddresses();
    install(options);
    return { markers: native.markers.slice(1).map(a => a !== null) };
  },
  progress() {
    if (native === null) return null;
    const status = native.shadow.status();
    return { tasks: status.instances, accesses: status.accesses };
  },
  interrupt() {
    endings.stop();
  },
};
