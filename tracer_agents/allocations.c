/* Interceptor listeners for the allocator, in native code: MPI_Init alone makes thousands of
 * allocations, and a JavaScript callback per call would dominate the run.
 *
 * Only blocks the program asks for become objects: a call whose return address lies outside the
 * program's own code (libc allocating a stdio buffer for itself, say) is libc's business. Only
 * the main thread is traced, so other threads' calls are ignored.
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
extern void tr_remove_object_at (guint64 address);
extern void tr_unmap (guint64 address, guint64 length);
extern void tr_move_object (guint64 old_address, guint64 new_address, guint64 new_size, guint64 site);
extern void tr_mark_written (guint64 address, guint64 size);
/* [start, end) pairs of the program's own code, ended by a 0 pair; and the traced thread id. */
extern guint64 tareador_user_ranges[];
extern guint64 tareador_thread[];
/* libc's mmap and munmap, where the program's GOT pointed before agent.js redirected it. */
extern gpointer tareador_libc_mapping[];

typedef struct { guint64 first, second; gboolean traced; } CallData;

static gboolean from_program (GumInvocationContext * ic)
{
  guint64 site = GUM_ADDRESS (gum_invocation_context_get_return_address (ic));
  for (guint64 * r = tareador_user_ranges; r[0] != 0 || r[1] != 0; r += 2)
    if (site >= r[0] && site < r[1])
      return TRUE;
  return FALSE;
}

static guint64 site_of (GumInvocationContext * ic)
{
  return GUM_ADDRESS (gum_invocation_context_get_return_address (ic));
}

/* Common entry: remember two arguments, and whether this call is one the analysis sees. */
static CallData * enter (GumInvocationContext * ic, guint64 first, guint64 second)
{
  CallData * d = GUM_IC_GET_INVOCATION_DATA (ic, CallData);
  d->first = first;
  d->second = second;
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

static void add_heap (GumInvocationContext * ic, guint64 address, guint64 size)
{
  if (address != 0 && from_program (ic))
    tr_add_object (address, size, KIND_HEAP, site_of (ic), 0);
}

#define ARG(i) GUM_ADDRESS (gum_invocation_context_get_nth_argument (ic, i))
#define RETURNED GUM_ADDRESS (gum_invocation_context_get_return_value (ic))

void malloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), 0); }
void malloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (d->traced) add_heap (ic, RETURNED, d->first);
}

void calloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), ARG (1)); }
void calloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (!d->traced || RETURNED == 0 || !from_program (ic)) return;
  tr_add_object (RETURNED, d->first * d->second, KIND_HEAP, site_of (ic), 0);
  tr_mark_written (RETURNED, d->first * d->second);
}

void realloc_enter (GumInvocationContext * ic) { enter (ic, ARG (0), ARG (1)); }
void realloc_leave (GumInvocationContext * ic)
{
  CallData * d = leave (ic);
  if (!d->traced || RETURNED == 0 || !from_program (ic)) return;
  tr_move_object (d->first, RETURNED, d->second, site_of (ic));
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
    add_heap (ic, *(guint64 *) d->first, d->second);
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
