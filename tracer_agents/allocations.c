/* Interceptor listeners for the allocator, in native code: MPI_Init alone makes thousands of
 * allocations, and a JavaScript callback per call would dominate the run.
 *
 * A block the program asks for is an object, named by the calling line. A block a system library
 * (libc, libstdc++, ...) allocates may be its own state (a stdio buffer) or the program's data
 * (strdup's copy, getline's line, operator new's object): which one is only known when the
 * program's own code first touches it, so it starts as a latent object (shadow.c), named by the
 * program's call that led to the allocation. Only the main thread is traced, so other threads'
 * calls are ignored.
 *
 * mmap/munmap are not Interceptor listeners: Frida itself maps memory with them on every thread,
 * and a listener there deadlocks with the exit handshake. The program's own calls go through
 * its GOT, which agent.js points at tareador_mmap/tareador_munmap below.
 */
#include <gum/guminterceptor.h>

enum { KIND_HEAP = 0 };

extern void tr_enter_allocator (void);
extern void tr_leave_allocator (void);
extern gint64 tr_add_object (guint64 address, guint64 size, guint kind, guint64 site, guint keep_history);
extern gint64 tr_add_latent (guint64 address, guint64 size, guint64 site);
extern void tr_claim (guint64 address, guint64 site);
extern void tr_remove_object_at (guint64 address);
extern void tr_unmap (guint64 address, guint64 length);
extern void tr_move_object (guint64 old_address, guint64 new_address, guint64 new_size, guint64 site, guint by_system);
extern void tr_mark_written (guint64 address, guint64 size);
/* [start, end) pairs of the program's own code, ended by a 0 pair; the traced thread id; and
 * the [low, high) bounds of its stack. */
extern guint64 tareador_user_ranges[];
extern guint64 tareador_thread[];
extern guint64 tareador_stack[];
/* The program's latest calls into libraries, noted by the stubs agent.js puts in its GOT: a
 * cursor to the next entry to write, then (CALLS_OFFSET on, aligned to its size) a ring of
 * {return address, stack slot holding it}. */
extern guint64 tareador_calls[];
/* libc's mmap and munmap, where the program's GOT pointed before agent.js redirected it. */
extern gpointer tareador_libc_mapping[];

#define CALLS_OFFSET 256
#define CALLS_SIZE 256

typedef struct { guint64 first, second, sp; gboolean traced; } CallData;

static gboolean in_program (guint64 address)
{
  for (guint64 * r = tareador_user_ranges; r[0] != 0 || r[1] != 0; r += 2)
    if (address >= r[0] && address < r[1])
      return TRUE;
  return FALSE;
}

static guint64 return_address (GumInvocationContext * ic)
{
  return GUM_ADDRESS (gum_invocation_context_get_return_address (ic));
}

static gboolean from_program (GumInvocationContext * ic)
{
  return in_program (return_address (ic));
}

/* The program's call that led to a library's allocation at stack pointer sp: the latest noted
 * call still under way, its return address still in its slot above sp (a call that returned has
 * its slot below sp, or overwritten: a callback into the program, an earlier deeper call);
 * 0 when none is (a constructor before main). Scanning the stack for return addresses instead
 * finds stale ones in libc's uninitialised buffers. */
static guint64 program_call (guint64 sp)
{
  guint64 ring = GUM_ADDRESS (tareador_calls) + CALLS_OFFSET;
  for (guint64 back = 16; back <= CALLS_SIZE; back += 16)
  {
    const guint64 * call = (const guint64 *) (ring + ((tareador_calls[0] - back) & (CALLS_SIZE - 1)));
    guint64 slot = call[1];
    if (slot >= sp && slot >= tareador_stack[0] && slot < tareador_stack[1] && *(const guint64 *) slot == call[0] &&
        in_program (call[0]))
      return call[0];
  }
  return 0;
}

/* Where the block is named: the return address when the program called the allocator itself
 * (by_program, from from_program: looked up once by the caller). */
static guint64 site_of (GumInvocationContext * ic, CallData * d, gboolean by_program)
{
  return by_program ? return_address (ic) : program_call (d->sp);
}

/* Common entry: remember two arguments and the stack pointer, and whether this call is one the
 * analysis sees. */
static CallData * enter (GumInvocationContext * ic, guint64 first, guint64 second)
{
  CallData * d = GUM_IC_GET_INVOCATION_DATA (ic, CallData);
  d->first = first;
  d->second = second;
  d->sp = ic->cpu_context->rsp;
  d->traced = gum_invocation_context_get_thread_id (ic) == (gsize) tareador_thread[0];
  if (d->traced)
    tr_enter_allocator ();
  return d;
}

static CallData * leave (GumInvocationContext * ic)
{
  CallData * d = GUM_IC_GET_INVOCATION_DATA (ic, CallData);
  if (d->traced)
    tr_leave_allocator ();
  return d;
}

static void add_heap (GumInvocationContext * ic, CallData * d, guint64 address, guint64 size)
{
  if (address == 0)
    return;
  gboolean by_program = from_program (ic);
  guint64 site = site_of (ic, d, by_program);
  if (by_program)
    tr_add_object (address, size, KIND_HEAP, site, 0);
  else
    tr_add_latent (address, size, site);
}

#define ARG(i) GUM_ADDRESS (gum_invocation_context_get_nth_argument (ic, i))
#define RETURNED GUM_ADDRESS (gum_invocation_context_get_return_value (ic))

void malloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), 0); }
void malloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (d->traced) add_heap (ic, d, RETURNED, d->first);
}

void calloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), ARG (1)); }
void calloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (!d->traced || RETURNED == 0) return;
  add_heap (ic, d, RETURNED, d->first * d->second);
  tr_mark_written (RETURNED, d->first * d->second);
}

void realloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), ARG (1)); }
void realloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (!d->traced || RETURNED == 0) return;
  gboolean by_program = from_program (ic);
  tr_move_object (d->first, RETURNED, d->second, site_of (ic, d, by_program), !by_program);
}

/* memalign(alignment, size) and aligned_alloc(alignment, size) */
void memalign_enter (GumInvocationContext * ic) { enter (ic, ARG (1), 0); }
void memalign_leave (GumInvocationContext * ic) { malloc_leave (ic); }

/* posix_memalign(void **out, alignment, size) */
void posix_memalign_enter (GumInvocationContext * ic) { enter (ic, ARG (0), ARG (2)); }
void posix_memalign_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (d->traced && RETURNED == 0)
    add_heap (ic, d, *(guint64 *) d->first, d->second);
}

/* operator new and new[] (every variant): a block the program asks for, as from malloc; malloc
 * made it latent, called from libstdc++, and could not name it (this listener hides the
 * program's return address from the calls ring). */
void new_enter (GumInvocationContext * ic) { enter (ic, 0, 0); }
void new_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (d->traced && RETURNED != 0 && from_program (ic))
    tr_claim (RETURNED, return_address (ic));
}

extern gint gettid (void);

typedef gpointer (* MmapFunction) (gpointer, gsize, gint, gint, gint, gint64);
typedef gint (* MunmapFunction) (gpointer, gsize);

static gboolean on_traced_thread (void)
{
  return (guint64) gettid () == tareador_thread[0];
}

/* A mapping the program asks for is an object like a heap block, named by the calling line. */
gpointer tareador_mmap (gpointer address, gsize length, gint prot, gint flags, gint fd, gint64 offset)
{
  gboolean traced = on_traced_thread ();
  if (traced)
    tr_enter_allocator ();
  gpointer mapped = ((MmapFunction) tareador_libc_mapping[0]) (address, length, prot, flags, fd, offset);
  if (traced)
  {
    tr_leave_allocator ();
    if (mapped != (gpointer) -1)
      tr_add_object (GUM_ADDRESS (mapped), length, KIND_HEAP, GUM_ADDRESS (__builtin_return_address (0)), 0);
  }
  return mapped;
}

/* munmap of a whole mapping ends it, as free() ends a block; the accesses buffered so far still
 * see the object. */
gint tareador_munmap (gpointer address, gsize length)
{
  if (on_traced_thread ())
  {
    tr_enter_allocator ();
    tr_unmap (GUM_ADDRESS (address), length);
    tr_leave_allocator ();
  }
  return ((MunmapFunction) tareador_libc_mapping[1]) (address, length);
}

void free_enter (GumInvocationContext * ic)
{
  CallData * d = enter (ic, ARG (0), 0);
  if (d->traced && d->first != 0)
    tr_remove_object_at (d->first);
}
void free_leave (GumInvocationContext * ic) { leave (ic); }
