/* tareador time: hooks, not Stalker (after modules.js). The program runs natively; its markers note their events
 * themselves (annotations/tareador.c, on with TAREADOR_TIMING), and this agent adds, through
 * Interceptor listeners in native code (timing.c), the calls of the --task-function functions,
 * the entry of main when the program has no tareador_ON (the whole of main is then analysed, as
 * in a trace), and the time spent inside MPI calls. The record is written by the library when
 * the program exits; this script only installs the hooks.
 */
'use strict';

const hooked = [];  /* state, names and code kept alive for the listeners */
const CALIBRATION_ROUNDS = 2000;

function findSymbol(module, name) {
  return module.findExportByName(name) || module.findSymbolByName(name);
}

function recorder(library) {
  /* Markers linked statically carry their own recorder: use that one, so that every event lands
   * in one record. */
  const own = findSymbol(Process.mainModule, 'tareador_timing_record');
  if (own !== null) return own;
  const global = Module.findGlobalExportByName('tareador_timing_record');
  return global !== null ? global : Module.load(library).getExportByName('tareador_timing_record');
}

function hookMpi(cm) {
  const library = Process.enumerateModules().find(m => m.path !== Process.mainModule.path &&
    m.findExportByName('MPI_Init') !== null);
  if (library === undefined) return 0;
  const seen = new Set();
  for (const e of library.enumerateExports()) {
    if (e.type !== 'function' || !e.name.startsWith('MPI_') || seen.has(e.address.toString())) continue;
    seen.add(e.address.toString());
    try {
      Interceptor.attach(e.address, { onEnter: cm.mpi_enter, onLeave: cm.mpi_leave });
    } catch (error) {
      /* Too short to hook (a constant's getter): no time is spent there. */
    }
  }
  return seen.size;
}

/* A do-nothing function long enough to hook, called from native code while the record is on
 * (and before main, outside every analysed region): its events measure the hooks' own cost. */
/* A task function's listener data (timing.c's Hook): its name, and whether it is a system
 * library's. */
function hookData(name, system) {
  const data = Memory.alloc(16);
  const text = Memory.allocUtf8String(name);
  data.writePointer(text);
  data.add(8).writeU64(system ? 1 : 0);
  hooked.push(data, text);
  return data;
}

function calibrate(cm, state, recording) {
  if (recording === null || recording.readS32() !== 1) return;
  const dummy = Memory.alloc(Process.pageSize);
  Memory.patchCode(dummy, 64, code => {
    const w = new X86Writer(code, { pc: dummy });
    for (let i = 0; i < 16; i++) w.putNop();
    w.putRet();
    w.flush();
  });
  hooked.push(dummy);
  const listener = Interceptor.attach(dummy, { onEnter: cm.function_enter, onLeave: cm.function_leave },
    hookData('tareador calibration', false));
  const thread = state.readU64();
  state.writeU64(Process.getCurrentThreadId());  /* the hooks count this thread's calls meanwhile */
  new NativeFunction(cm.calibrate, 'void', ['pointer', 'uint'])(dummy, CALIBRATION_ROUNDS);
  state.writeU64(thread);
  listener.detach();
}

rpc.exports = {
  init(options) {
    const main = Process.mainModule;
    /* Before the library is loaded here, which would make its markers look like the program's. */
    const hasOn = findSymbol(main, 'tareador_ON') !== null || Module.findGlobalExportByName('tareador_ON') !== null;
    const state = Memory.alloc(Process.pageSize);
    state.writeU64(Process.id);  /* the spawned process's main thread has the process id as thread id */
    hooked.push(state);
    const record = recorder(options.library);
    const modules = Process.enumerateModules().filter(m => !m.name.startsWith('libtareador'));
    const program = userModules(modules, []);
    const ranges = rangesBuffer(codeRanges(program));
    hooked.push(ranges);
    const cm = new CModule(options.source, { tareador_timing_record: record, timing_state: state,
      user_ranges: ranges });
    hooked.push(cm);
    calibrate(cm, state, findSymbol(Process.findModuleByAddress(record), 'tareador_timing'));
    const failed = [];
    const own = new Set(program.map(m => m.path));
    for (const { address, f } of functionEntries(options.functions)) {
      const module = Process.findModuleByAddress(address);
      try {
        Interceptor.attach(address, { onEnter: cm.function_enter, onLeave: cm.function_leave },
          hookData(f.name, module === null || !own.has(module.path)));
      } catch (error) {
        failed.push(f.name);
      }
    }
    if (!hasOn) {
      const entry = findSymbol(main, 'main');
      if (entry === null) throw new Error('the program has neither tareador_ON nor a main symbol');
      Interceptor.attach(entry, { onEnter: cm.main_enter });
    }
    /* The exit status, for Python (a spawned program's is not otherwise known to it), which
     * acknowledges it: the message must leave before the process does. */
    for (const name of ['exit', '_exit'])
      Interceptor.attach(Module.getGlobalExportByName(name), {
        onEnter(args) {
          send({ type: 'exit', status: args[0].toInt32() });
          recv('ack', () => {}).wait();
        },
      });
    return { failed, mpi: options.mpi ? hookMpi(cm) : 0 };
  },
};
