/* Signals that end the traced program (SIGTERM, SIGPIPE, SIGHUP, ... and the driver's stop
 * request) without losing what was traced.
 *
 * The handler parks the main thread, the only one that changes the analysis tables, while the
 * agent's timer (JavaScript, on Frida's thread) ships the tables; then it delivers the signal
 * again with its default action, so that the program ends as it would untraced. It parks only
 * where the tables are consistent and Frida holds no lock the shipping needs: interrupted inside
 * the analysis or inside Frida, it returns and the timer sends the signal again a moment later.
 * If the timer does not take a parked thread in time (the thread was inside a JavaScript hook,
 * whose lock the timer needs), the handler also returns and lets the timer try again.
 *
 * Linked into the analysis library (gcc, full libc headers); everything here is async-signal-safe.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

#define ALTERNATE_STACK (4UL << 20)
#define PARK_ATTEMPT_MS 200
#define MAX_BUSY 16

enum { RUNNING, PARKED, TAKEN };

/* Default action "terminate" or "core", not already caught by Frida or the program. */
static const int ending_signals[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2, SIGPIPE, SIGALRM, SIGTERM,
                                      SIGSTKFLT, SIGXCPU, SIGXFSZ, SIGVTALRM, SIGPROF, SIGIO, SIGPWR };

static pid_t traced_pid, traced_tid;
static int stop_signal;
static uint64_t busy[MAX_BUSY][2];   /* code where the thread must not park: the analysis, Frida */
static int busy_count;
static volatile int state = RUNNING;
static volatile int parked_signal, deferred_signal;

static int is_busy(uint64_t pc) {
  for (int i = 0; i < busy_count; i++)
    if (pc >= busy[i][0] && pc < busy[i][1]) return 1;
  return 0;
}

static void die(int sig) {
  struct sigaction dfl = { .sa_handler = SIG_DFL };
  sigaction(sig, &dfl, NULL);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, sig);
  raise(sig);                                   /* pending: blocked inside its own handler */
  sigprocmask(SIG_UNBLOCK, &only, NULL);        /* delivered here, with the default action */
}

static void on_signal(int sig, siginfo_t *info, void *context) {
  (void) info;
  if (getpid() != traced_pid) die(sig);         /* a forked child runs untraced */
  if (gettid() != traced_tid) {                 /* any thread may get a process-wide signal */
    syscall(SYS_tgkill, traced_pid, traced_tid, sig);
    return;
  }
  uint64_t pc = (uint64_t) ((ucontext_t *) context)->uc_mcontext.gregs[REG_RIP];
  if (is_busy(pc)) { deferred_signal = sig; return; }
  parked_signal = sig;
  __atomic_store_n(&state, PARKED, __ATOMIC_SEQ_CST);
  struct timespec millisecond = { 0, 1000000 };
  for (int waited = 0; __atomic_load_n(&state, __ATOMIC_SEQ_CST) != RUNNING; waited++) {
    int expected = PARKED;
    if (waited >= PARK_ATTEMPT_MS &&
        __atomic_compare_exchange_n(&state, &expected, RUNNING, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {
      deferred_signal = sig;
      return;
    }
    nanosleep(&millisecond, NULL);
  }
  die(sig);
}

/* At init, on Frida's thread: pid and tid of the traced thread, the ranges where it must not
 * park. Returns the signal of the driver's stop request (one the program is unlikely to use). */
int tr_endings_install(uint32_t pid, uint32_t tid, const uint64_t *ranges, uint32_t count) {
  traced_pid = (pid_t) pid;
  traced_tid = (pid_t) tid;
  stop_signal = SIGRTMAX;
  for (uint32_t i = 0; i < count && busy_count < MAX_BUSY; i++, busy_count++) {
    busy[busy_count][0] = ranges[2 * i];
    busy[busy_count][1] = ranges[2 * i + 1];
  }
  struct sigaction action = { .sa_sigaction = on_signal, .sa_flags = SA_SIGINFO | SA_RESTART | SA_ONSTACK };
  sigemptyset(&action.sa_mask);
  for (unsigned i = 0; i < sizeof ending_signals / sizeof *ending_signals; i++)
    sigaddset(&action.sa_mask, ending_signals[i]);
  sigaddset(&action.sa_mask, stop_signal);
  for (unsigned i = 0; i <= sizeof ending_signals / sizeof *ending_signals; i++) {
    int sig = i < sizeof ending_signals / sizeof *ending_signals ? ending_signals[i] : stop_signal;
    struct sigaction current;
    if (sigaction(sig, NULL, &current) == 0 && current.sa_handler == SIG_DFL)
      sigaction(sig, &action, NULL);
  }
  return stop_signal;
}

/* On the traced thread (when main starts): a stack for the handlers when the thread's own is
 * exhausted, so that a stack overflow is reported like any crash. */
void tr_endings_alternate_stack(void) {
  void *stack = mmap(NULL, ALTERNATE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stack == MAP_FAILED) return;
  stack_t alternate = { .ss_sp = stack, .ss_size = ALTERNATE_STACK };
  sigaltstack(&alternate, NULL);
}

/* The driver's stop request (Ctrl-C or SIGTERM to tareador). */
void tr_endings_stop(void) {
  syscall(SYS_tgkill, traced_pid, traced_tid, stop_signal);
}

/* From the agent's timer: sends a deferred signal again; returns a parked signal, now taken
 * (the thread waits for tr_endings_release), or 0. */
int tr_endings_take(void) {
  int sig = deferred_signal;
  if (sig) {
    deferred_signal = 0;
    syscall(SYS_tgkill, traced_pid, traced_tid, sig);
  }
  int expected = PARKED;
  if (!__atomic_compare_exchange_n(&state, &expected, TAKEN, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) return 0;
  return parked_signal;
}

/* The tables are shipped: the parked thread ends the program with its signal. */
void tr_endings_release(void) {
  __atomic_store_n(&state, RUNNING, __ATOMIC_SEQ_CST);
}
