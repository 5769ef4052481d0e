/* Interceptor listeners on the MPI library's exported MPI_* functions, in native code: a code with
 * millions of messages makes millions of calls, and a JavaScript callback per call would
 * dominate the run. Every export is hooked (MPI_X is a weak alias of PMPI_X: one hook catches
 * both names; the library's calls to itself go through internal symbols and are not seen).
 *
 * For each call of the traced thread (the outermost one: a hooked function the library calls
 * from inside another is part of it) one row is recorded: the call, the fragment that made it
 * and the instruction counter. Inside the call nothing is analysed or counted (shadow.c's
 * tr_enter_mpi / tr_leave_mpi). The calls tareador models also get their peer (a world rank),
 * tag, communicator and bytes, and their effect on data: a send reads its whole buffer when it is
 * called, a receive writes its whole buffer when it completes (a Recv at its return, an Irecv at
 * the Wait or Test that completes it), charged to the fragment making that call.
 *
 * The two ABIs differ (handles are 32-bit integers in MPICH, pointers in Open MPI; statuses and
 * the special values differ): see Abi below. A CModule's statics are read-only at run time, so
 * the state and its tables live in memory the agent allocates and that shadow.c grows.
 */
#include <gum/guminterceptor.h>

#define MAX_ARGS 12
#define NO_TASK 0xffffffffu
#define NOT_COMPLETED (~(guint64) 0)

extern guint64 tr_enter_mpi (guint32 * task);
extern void tr_leave_mpi (void);
extern guint32 tr_mpi_access (guint64 address, guint64 size, guint32 is_write);
extern gpointer tr_grow (gpointer table, guint64 * capacity, guint64 row_size);
/* Communication patterns (patterns.c): a no-op unless trace --mpi enabled them. */
extern void tr_pattern_send (guint64 call, guint64 address, guint64 bytes, guint64 element);
extern void tr_pattern_receive (guint64 call, guint64 address, guint64 bytes, guint64 element);
extern guint64 tareador_thread[];

/* Called directly, so not seen by these hooks. Handles are passed as 64-bit values: an MPICH
 * callee reads the low 32 bits of the register. */
extern gint PMPI_Type_size (guint64 type, gint * size);
extern gint PMPI_Type_get_extent (guint64 type, gint64 * lb, gint64 * extent);
extern gint PMPI_Type_get_true_extent (guint64 type, gint64 * lb, gint64 * extent);
extern gint PMPI_Get_count (gconstpointer status, guint64 type, gint * count);
extern gint PMPI_Comm_size (guint64 comm, gint * size);
extern gint PMPI_Comm_rank (guint64 comm, gint * rank);
extern gint PMPI_Comm_group (guint64 comm, guint64 * group);
extern gint PMPI_Group_translate_ranks (guint64 group, gint n, const gint * ranks, guint64 other, gint * out);
extern gint PMPI_Group_free (guint64 * group);

/* One row per call, shipped to Python at the end (decode.py's MPI_CALL_ROW). */
typedef struct {
  guint32 call, task;       /* index of the function in the agent's list; fragment (NO_TASK: none) */
  gint32 peer, tag, comm;   /* world rank, tag, tareador's communicator number; -1 none */
  guint32 object;           /* object holding the buffer: shadow id + 1, 0 none */
  guint64 bytes, posted, completed;
  gint64 request;           /* the tracer's number of the request the call started, -1 none */
} CallRow;

typedef struct { guint64 call, request; } Completion;   /* a Wait/Test row completed a request */
/* A communicator: its world ranks are ranks[first .. first + size), in communicator rank order. */
typedef struct { guint64 handle; guint32 alive, me; guint64 size, first; } Comm;
typedef struct { guint64 handle, call, buf, type; gint64 count; guint32 number, receive, comm, pad; } Request;
typedef struct { guint64 handle; guint32 comm, pad; } Message;   /* from MPI_Mprobe to MPI_Mrecv */

typedef struct { gpointer rows; guint64 count, capacity; } Table;

typedef struct {
  guint32 openmpi, depth, large, shape;
  gint32 rank, size;               /* in MPI_COMM_WORLD, -1 before MPI_Init */
  guint64 world, self, null_comm;
  /* The call under way: its row, time, fragment and arguments (as at entry: registers change). */
  guint64 call, posted, model;
  guint32 task, pad;
  guint64 args[MAX_ARGS];
  /* What it writes when it completes: a receive's buffer (size known from its status) ... */
  guint64 receive_row, receive_buf, receive_type, receive_status;
  gint64 receive_count;
  guint32 receive_comm, receiving;
  /* ... or a collective's. */
  guint64 write_address, write_span;
  Table calls, completions, comms, ranks, requests, messages, statuses, handles;
  guint64 requests_made, noncontiguous;
  guint64 write_element;   /* the element size of a collective's receive buffer */
} MpiState;

extern MpiState tareador_mpi;
#define S (&tareador_mpi)

typedef struct {
  guint handle_size, status_size, source_at, tag_at;   /* the status's MPI_SOURCE and MPI_TAG */
  guint64 status_ignore, in_place;                     /* MPI_STATUS(ES)_IGNORE, MPI_IN_PLACE */
  gint32 proc_null, undefined;
} Abi;

static const Abi MPICH = { 4, 20, 8, 12, 1, ~(guint64) 0, -1, -32766 };
static const Abi OPEN_MPI = { 8, 24, 0, 4, 0, 1, -2, -32766 };
#define ABI (S->openmpi ? &OPEN_MPI : &MPICH)
/* MPICH's predefined communicators are constants; Open MPI's are objects the agent finds. */
#define MPICH_COMM_WORLD 0x44000000
#define MPICH_COMM_SELF 0x44000001
#define MPICH_COMM_NULL 0x04000000

enum {
  UNMODELLED, INIT, FINALIZE, COMM_USE, COMM_NEW, COMM_FREE,
  SEND, ISEND, RECV, IRECV, SENDRECV, SENDRECV_REPLACE, MPROBE, IMPROBE, MRECV, IMRECV,
  WAIT, TEST, WAITALL, TESTALL, WAITANY, TESTANY, WAITSOME, TESTSOME, REQUEST_FREE,
  BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV,
  ALLTOALL, ALLTOALLV, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK
};

/* at: the argument holding the new communicator (COMM_NEW). */
typedef struct { const gchar * name; guint8 shape, at; } Model;

static const Model MODELS[] = {
  { "", UNMODELLED, 0 },
  { "MPI_Init", INIT, 0 }, { "MPI_Init_thread", INIT, 0 }, { "MPI_Finalize", FINALIZE, 0 },
  { "MPI_Comm_rank", COMM_USE, 0 }, { "MPI_Comm_size", COMM_USE, 0 },
  { "MPI_Comm_dup", COMM_NEW, 1 }, { "MPI_Comm_split", COMM_NEW, 3 }, { "MPI_Comm_create", COMM_NEW, 2 },
  { "MPI_Comm_split_type", COMM_NEW, 4 }, { "MPI_Comm_free", COMM_FREE, 0 },
  { "MPI_Send", SEND, 0 }, { "MPI_Ssend", SEND, 0 }, { "MPI_Bsend", SEND, 0 }, { "MPI_Rsend", SEND, 0 },
  { "MPI_Isend", ISEND, 0 }, { "MPI_Issend", ISEND, 0 }, { "MPI_Ibsend", ISEND, 0 }, { "MPI_Irsend", ISEND, 0 },
  { "MPI_Recv", RECV, 0 }, { "MPI_Irecv", IRECV, 0 },
  { "MPI_Sendrecv", SENDRECV, 0 }, { "MPI_Sendrecv_replace", SENDRECV_REPLACE, 0 },
  { "MPI_Mprobe", MPROBE, 0 }, { "MPI_Improbe", IMPROBE, 0 }, { "MPI_Mrecv", MRECV, 0 }, { "MPI_Imrecv", IMRECV, 0 },
  { "MPI_Wait", WAIT, 0 }, { "MPI_Test", TEST, 0 }, { "MPI_Waitall", WAITALL, 0 }, { "MPI_Testall", TESTALL, 0 },
  { "MPI_Waitany", WAITANY, 0 }, { "MPI_Testany", TESTANY, 0 }, { "MPI_Waitsome", WAITSOME, 0 },
  { "MPI_Testsome", TESTSOME, 0 }, { "MPI_Request_free", REQUEST_FREE, 0 },
  { "MPI_Barrier", BARRIER, 0 }, { "MPI_Bcast", BCAST, 0 }, { "MPI_Reduce", REDUCE, 0 },
  { "MPI_Allreduce", ALLREDUCE, 0 }, { "MPI_Scan", ALLREDUCE, 0 }, { "MPI_Exscan", ALLREDUCE, 0 },
  { "MPI_Gather", GATHER, 0 }, { "MPI_Gatherv", GATHERV, 0 }, { "MPI_Scatter", SCATTER, 0 },
  { "MPI_Scatterv", SCATTERV, 0 }, { "MPI_Allgather", ALLGATHER, 0 }, { "MPI_Allgatherv", ALLGATHERV, 0 },
  { "MPI_Alltoall", ALLTOALL, 0 }, { "MPI_Alltoallv", ALLTOALLV, 0 },
  { "MPI_Reduce_scatter", REDUCE_SCATTER, 0 }, { "MPI_Reduce_scatter_block", REDUCE_SCATTER_BLOCK, 0 },
};

/* ---- tables ---- */

static gpointer append (Table * t, guint64 row_size)
{
  if (t->count == t->capacity)
  {
    gpointer grown = tr_grow (t->rows, &t->capacity, row_size);
    if (grown == NULL)
      return NULL;
    t->rows = grown;
  }
  guint8 * row = (guint8 *) t->rows + row_size * t->count++;
  for (guint64 i = 0; i < row_size; i++)
    row[i] = 0;
  return row;
}

/* At least n rows, for scratch tables (their contents need not survive). */
static gpointer reserve (Table * t, guint64 n, guint64 row_size)
{
  while (t->capacity < n)
  {
    gpointer grown = tr_grow (t->rows, &t->capacity, row_size);
    if (grown == NULL)
      return NULL;
    t->rows = grown;
  }
  return t->rows;
}

#define ROW(seq) (&((CallRow *) S->calls.rows)[seq])
#define COMM(n) (&((Comm *) S->comms.rows)[n])
#define WORLD_RANKS(c) (&((gint32 *) S->ranks.rows)[(c)->first])

static CallRow * new_row (guint32 call)
{
  CallRow * row = append (&S->calls, sizeof (CallRow));
  if (row == NULL)
    return NULL;
  row->call = call;
  row->task = S->task;
  row->peer = row->tag = row->comm = -1;
  row->posted = row->completed = S->posted;
  row->request = -1;
  return row;
}

/* ---- arguments in both ABIs ---- */

#define A(i) (S->args[i])
#define INT(i) ((gint32) A (i))
/* MPI-4's _c variants take MPI_Count counts and MPI_Count / MPI_Aint arrays. */
#define COUNT(i) (S->large ? (gint64) A (i) : (gint64) INT (i))

static guint64 handle (guint64 value)
{
  return S->openmpi ? value : (guint32) value;
}

static guint64 handle_at (guint64 address)
{
  return S->openmpi ? *(guint64 *) address : *(guint32 *) address;
}

static gint64 count_at (guint64 array, gint64 k)
{
  return S->large ? ((gint64 *) array)[k] : ((gint32 *) array)[k];
}

static gint64 sum_of (guint64 array, gint64 n)
{
  gint64 total = 0;
  for (gint64 k = 0; k < n; k++)
    total += count_at (array, k);
  return total;
}

/* Elements spanned by n blocks of counts[k] at displacements displs[k]. */
static gint64 reach_of (guint64 counts, guint64 displs, gint64 n)
{
  gint64 reach = 0;
  for (gint64 k = 0; k < n; k++)
    if (count_at (counts, k) > 0 && count_at (displs, k) + count_at (counts, k) > reach)
      reach = count_at (displs, k) + count_at (counts, k);
  return reach;
}

/* ---- communicators ---- */

static guint32 register_comm (guint64 comm)
{
  gint size = 0, me = 0;
  guint64 group = 0, world_group = 0;
  PMPI_Comm_size (comm, &size);
  PMPI_Comm_rank (comm, &me);
  Comm * c = append (&S->comms, sizeof (Comm));
  gint32 * local = reserve (&S->handles, (guint64) size, sizeof (guint64));
  if (c == NULL || local == NULL || reserve (&S->ranks, S->ranks.count + size, sizeof (gint32)) == NULL)
    return 0;
  c->handle = comm;
  c->alive = 1;
  c->me = (guint32) me;
  c->size = (guint64) size;
  c->first = S->ranks.count;
  S->ranks.count += size;
  for (gint k = 0; k < size; k++)
    local[k] = k;
  PMPI_Comm_group (comm, &group);
  PMPI_Comm_group (S->world, &world_group);
  PMPI_Group_translate_ranks (group, size, local, world_group, WORLD_RANKS (c));
  PMPI_Group_free (&group);
  PMPI_Group_free (&world_group);
  return (guint32) (S->comms.count - 1);
}

/* tareador's number of a communicator: 0 world, 1 self, then in the order the rank first used
 * (or created) each. */
static guint32 comm_number (guint64 comm)
{
  for (guint64 n = S->comms.count; n-- > 0;)
    if (COMM (n)->alive && COMM (n)->handle == comm)
      return (guint32) n;
  return register_comm (comm);
}

/* A rank of communicator number c as a world rank; -1 for MPI_PROC_NULL, MPI_ANY_SOURCE, ... */
static gint32 world_rank (guint32 c, gint32 rank)
{
  if (c >= S->comms.count || rank < 0 || (guint64) rank >= COMM (c)->size)
    return -1;
  return WORLD_RANKS (COMM (c))[rank];
}

/* ---- buffers ---- */

/* Where count elements of type lie from buf, and how many bytes they hold. A derived type with
 * gaps spans its true extent (and is counted for a warning): the bytes between are read or
 * written as far as the analysis knows. */
typedef struct { guint64 address, span, bytes, element; } Extent;

static Extent extent_of (guint64 buf, gint64 count, guint64 type)
{
  Extent e = { buf, 0, 0, 1 };
  if (count <= 0)
    return e;
  gint size = 0;
  gint64 lb = 0, extent = 0;
  PMPI_Type_size (type, &size);
  PMPI_Type_get_extent (type, &lb, &extent);
  e.element = size > 0 ? (guint64) size : 1;
  e.bytes = e.span = (guint64) count * (guint64) size;
  if (lb != 0 || extent != size)
  {
    gint64 true_lb = 0, true_extent = 0;
    PMPI_Type_get_true_extent (type, &true_lb, &true_extent);
    e.address = buf + true_lb;
    e.span = (guint64) ((count - 1) * extent + true_extent);
    S->noncontiguous++;
  }
  return e;
}

static guint32 touch (Extent e, gboolean write)
{
  return tr_mpi_access (e.address, e.span, write);
}

static gboolean in_place (guint64 buf)
{
  return buf == ABI->in_place;
}

/* ---- point to point ---- */

static void send_part (CallRow * row, guint64 buf, gint64 count, guint64 type, gint32 dest, gint32 tag, guint64 comm)
{
  row->comm = (gint32) comm_number (comm);
  if (dest == ABI->proc_null)
    return;
  row->peer = world_rank (row->comm, dest);
  row->tag = tag;
  Extent e = extent_of (buf, count, type);
  row->bytes = e.bytes;
  row->object = touch (e, FALSE);
  tr_pattern_send (row - (CallRow *) S->calls.rows, e.address, e.span, e.element);
}

/* A status of the tracer's own where the program passes MPI_STATUS(ES)_IGNORE: the source and
 * tag of what arrived are needed. */
static guint64 own_statuses (GumInvocationContext * ic, guint i, guint64 n)
{
  if (A (i) != ABI->status_ignore)
    return A (i);
  gpointer statuses = reserve (&S->statuses, n ? n : 1, ABI->status_size);
  if (statuses != NULL)
  {
    gum_invocation_context_replace_nth_argument (ic, i, statuses);
    A (i) = GUM_ADDRESS (statuses);
  }
  return A (i);
}

static void expect (guint64 row, guint64 buf, gint64 count, guint64 type, guint32 comm, guint64 status)
{
  S->receiving = 1;
  S->receive_row = row;
  S->receive_buf = buf;
  S->receive_count = count;
  S->receive_type = type;
  S->receive_comm = comm;
  S->receive_status = status;
}

/* Peer and tag as posted (wildcards are resolved at completion); nothing arrives from MPI_PROC_NULL. */
static void receive_part (CallRow * row, guint64 buf, gint32 source, gint32 tag, guint64 comm)
{
  row->comm = (gint32) comm_number (comm);
  if (source == ABI->proc_null)
    return;
  row->peer = world_rank (row->comm, source);
  row->tag = tag;
  row->object = tr_mpi_access (buf, 0, FALSE);
}

/* A receive completed with status: what arrived, from whom, is written into its buffer. */
static void received (CallRow * row, guint32 comm, guint64 buf, gint64 count, guint64 type, guint64 status)
{
  if (status == 0 || status == ABI->status_ignore)
    return;
  gint32 source = *(gint32 *) (status + ABI->source_at);
  if (source == ABI->proc_null)
  {
    row->peer = row->tag = -1;
    row->object = 0;
    return;
  }
  gint arrived = 0;
  PMPI_Get_count (GSIZE_TO_POINTER (status), type, &arrived);
  row->peer = world_rank (comm, source);
  row->tag = *(gint32 *) (status + ABI->tag_at);
  Extent e = extent_of (buf, arrived == ABI->undefined ? count : arrived, type);
  row->bytes = e.bytes;
  row->object = touch (e, TRUE);
  tr_pattern_receive (row - (CallRow *) S->calls.rows, e.address, e.span, e.element);
}

static Request * request_of (guint64 h)
{
  Request * r = S->requests.rows;
  for (guint64 k = 0; k < S->requests.count; k++)
    if (r[k].handle == h)
      return &r[k];
  return NULL;
}

static void forget (Request * r)
{
  *r = ((Request *) S->requests.rows)[--S->requests.count];
}

static void forget_request (guint64 h)
{
  Request * r = request_of (h);
  if (r != NULL)
    forget (r);
}

/* A non-blocking call returned its request in *at: number it (MPI recycles handles). */
static void started (guint64 at, gboolean receive, guint64 buf, gint64 count, guint64 type, guint32 comm)
{
  guint64 h = handle_at (at);
  forget_request (h);
  Request * r = append (&S->requests, sizeof (Request));
  if (r == NULL)
    return;
  r->handle = h;
  r->call = S->call;
  r->number = (guint32) S->requests_made;
  r->receive = receive;
  r->buf = buf;
  r->count = count;
  r->type = type;
  r->comm = comm;
  ROW (S->call)->request = (gint64) S->requests_made++;
}

/* The request whose handle was h at the call's entry completed, with status. */
static void completed (guint64 h, guint64 status)
{
  Request * r = request_of (h);
  if (r == NULL)
    return;
  CallRow * row = ROW (r->call);
  row->completed = S->posted;
  if (r->receive)
    received (row, r->comm, r->buf, r->count, r->type, status);
  Completion * c = append (&S->completions, sizeof (Completion));
  if (c != NULL)
  {
    c->call = S->call;
    c->request = r->number;
  }
  forget (r);
}

/* Wait/Test family: the handles at entry (the call sets completed ones to MPI_REQUEST_NULL). */
static void keep_handles (guint64 array, gint64 n)
{
  guint64 * kept = reserve (&S->handles, n > 0 ? n : 1, sizeof (guint64));
  if (kept == NULL)
    return;
  for (gint64 k = 0; k < n; k++)
    kept[k] = handle_at (array + k * ABI->handle_size);
}

#define KEPT(k) (((guint64 *) S->handles.rows)[k])
#define STATUS(i, k) (A (i) + (guint64) (k) * ABI->status_size)

/* ---- collectives ---- */

static Comm * collective (CallRow * row, guint64 comm)
{
  row->comm = (gint32) comm_number (handle (comm));
  return (guint64) row->comm < S->comms.count ? COMM (row->comm) : NULL;
}

static void sends (CallRow * row, Extent e)
{
  row->bytes = e.bytes;
  row->object = touch (e, FALSE);
  tr_pattern_send (S->call, e.address, e.span, e.element);
}

/* Written when the call returns; a rank that only receives names the buffer it receives into. */
static void writes (CallRow * row, Extent e)
{
  S->write_address = e.address;
  S->write_span = e.span;
  S->write_element = e.element;
  if (row->object == 0)
    row->object = tr_mpi_access (e.address, 0, FALSE);
}

/* The part of an in-place buffer that is this rank's contribution: block me of count elements. */
static Extent own_block (guint64 buf, gint64 count, guint64 type, guint32 me)
{
  Extent whole = extent_of (buf, count * (me + 1), type), mine = extent_of (buf, count, type);
  mine.address += whole.span - mine.span;
  return mine;
}

/* The same for a v-collective: counts[me] elements at displacement displs[me]. */
static Extent displaced_block (guint64 buf, guint64 counts, guint64 displs, guint64 type, guint32 me)
{
  Extent mine = extent_of (buf, count_at (counts, me), type);
  mine.address += extent_of (buf, count_at (displs, me) + 1, type).span - extent_of (buf, 1, type).span;
  return mine;
}

static void enter_collective (CallRow * row)
{
  Comm * c;
  gboolean root;
  switch (S->shape)
  {
    case BARRIER:
      collective (row, A (0));
      break;
    case BCAST:   /* buf, count, type, root, comm */
      if ((c = collective (row, A (4))) == NULL) break;
      row->peer = world_rank (row->comm, INT (3));
      if (c->me == (guint32) INT (3))
        sends (row, extent_of (A (0), COUNT (1), A (2)));
      else
        writes (row, extent_of (A (0), COUNT (1), A (2)));
      break;
    case REDUCE:  /* sbuf, rbuf, count, type, op, root, comm */
      if ((c = collective (row, A (6))) == NULL) break;
      row->peer = world_rank (row->comm, INT (5));
      root = c->me == (guint32) INT (5);
      sends (row, extent_of (root && in_place (A (0)) ? A (1) : A (0), COUNT (2), A (3)));
      if (root)
        writes (row, extent_of (A (1), COUNT (2), A (3)));
      break;
    case ALLREDUCE:   /* sbuf, rbuf, count, type, op, comm (also Scan, Exscan) */
      collective (row, A (5));
      sends (row, extent_of (in_place (A (0)) ? A (1) : A (0), COUNT (2), A (3)));
      writes (row, extent_of (A (1), COUNT (2), A (3)));
      break;
    case GATHER:  /* sbuf, scount, stype, rbuf, rcount, rtype, root, comm */
      if ((c = collective (row, A (7))) == NULL) break;
      row->peer = world_rank (row->comm, INT (6));
      root = c->me == (guint32) INT (6);
      sends (row, root && in_place (A (0)) ? own_block (A (3), COUNT (4), A (5), c->me) : extent_of (A (0), COUNT (1), A (2)));
      if (root)
        writes (row, extent_of (A (3), COUNT (4) * c->size, A (5)));
      break;
    case GATHERV: /* sbuf, scount, stype, rbuf, rcounts, displs, rtype, root, comm */
      if ((c = collective (row, A (8))) == NULL) break;
      row->peer = world_rank (row->comm, INT (7));
      root = c->me == (guint32) INT (7);
      sends (row, root && in_place (A (0)) ? displaced_block (A (3), A (4), A (5), A (6), c->me)
                                           : extent_of (A (0), COUNT (1), A (2)));
      if (root)
        writes (row, extent_of (A (3), reach_of (A (4), A (5), c->size), A (6)));
      break;
    case SCATTER: /* sbuf, scount, stype, rbuf, rcount, rtype, root, comm */
      if ((c = collective (row, A (7))) == NULL) break;
      row->peer = world_rank (row->comm, INT (6));
      root = c->me == (guint32) INT (6);
      if (root)
        sends (row, extent_of (A (0), COUNT (1) * c->size, A (2)));
      if (!(root && in_place (A (3))))
        writes (row, extent_of (A (3), COUNT (4), A (5)));
      break;
    case SCATTERV:    /* sbuf, scounts, displs, stype, rbuf, rcount, rtype, root, comm */
      if ((c = collective (row, A (8))) == NULL) break;
      row->peer = world_rank (row->comm, INT (7));
      root = c->me == (guint32) INT (7);
      if (root)
      {
        Extent e = extent_of (A (0), reach_of (A (1), A (2), c->size), A (3));
        row->object = touch (e, FALSE);
        row->bytes = extent_of (A (0), sum_of (A (1), c->size), A (3)).bytes;
      }
      if (!(root && in_place (A (4))))
        writes (row, extent_of (A (4), COUNT (5), A (6)));
      break;
    case ALLGATHER:   /* sbuf, scount, stype, rbuf, rcount, rtype, comm */
      if ((c = collective (row, A (6))) == NULL) break;
      sends (row, in_place (A (0)) ? own_block (A (3), COUNT (4), A (5), c->me) : extent_of (A (0), COUNT (1), A (2)));
      writes (row, extent_of (A (3), COUNT (4) * c->size, A (5)));
      break;
    case ALLGATHERV:  /* sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm */
      if ((c = collective (row, A (7))) == NULL) break;
      sends (row, in_place (A (0)) ? displaced_block (A (3), A (4), A (5), A (6), c->me)
                                   : extent_of (A (0), COUNT (1), A (2)));
      writes (row, extent_of (A (3), reach_of (A (4), A (5), c->size), A (6)));
      break;
    case ALLTOALL:    /* sbuf, scount, stype, rbuf, rcount, rtype, comm */
      if ((c = collective (row, A (6))) == NULL) break;
      sends (row, in_place (A (0)) ? extent_of (A (3), COUNT (4) * c->size, A (5))
                                   : extent_of (A (0), COUNT (1) * c->size, A (2)));
      writes (row, extent_of (A (3), COUNT (4) * c->size, A (5)));
      break;
    case ALLTOALLV:   /* sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm */
      if ((c = collective (row, A (8))) == NULL) break;
      if (in_place (A (0)))
        sends (row, extent_of (A (4), reach_of (A (5), A (6), c->size), A (7)));
      else
      {
        row->object = touch (extent_of (A (0), reach_of (A (1), A (2), c->size), A (3)), FALSE);
        row->bytes = extent_of (A (0), sum_of (A (1), c->size), A (3)).bytes;
      }
      writes (row, extent_of (A (4), reach_of (A (5), A (6), c->size), A (7)));
      break;
    case REDUCE_SCATTER:  /* sbuf, rbuf, rcounts, type, op, comm */
      if ((c = collective (row, A (5))) == NULL) break;
      sends (row, extent_of (in_place (A (0)) ? A (1) : A (0), sum_of (A (2), c->size), A (3)));
      writes (row, extent_of (A (1), count_at (A (2), c->me), A (3)));
      break;
    case REDUCE_SCATTER_BLOCK:    /* sbuf, rbuf, rcount, type, op, comm */
      if ((c = collective (row, A (5))) == NULL) break;
      sends (row, extent_of (in_place (A (0)) ? A (1) : A (0), COUNT (2) * c->size, A (3)));
      writes (row, extent_of (A (1), COUNT (2), A (3)));
      break;
  }
}

/* ---- the listeners ---- */

static void enter_modelled (GumInvocationContext * ic, CallRow * row)
{
  CallRow * second;
  switch (S->shape)
  {
    case COMM_USE:
      row->comm = (gint32) comm_number (handle (A (0)));
      break;
    case COMM_FREE:
      row->comm = (gint32) comm_number (handle_at (A (0)));
      COMM (row->comm)->alive = 0;
      break;
    case COMM_NEW:
      row->comm = (gint32) comm_number (handle (A (0)));
      break;
    case SEND:    /* buf, count, type, dest, tag, comm */
    case ISEND:
      send_part (row, A (0), COUNT (1), handle (A (2)), INT (3), INT (4), handle (A (5)));
      if (S->shape == ISEND)
        row->completed = NOT_COMPLETED;
      break;
    case RECV:    /* buf, count, type, source, tag, comm, status */
      receive_part (row, A (0), INT (3), INT (4), handle (A (5)));
      expect (S->call, A (0), COUNT (1), handle (A (2)), row->comm, own_statuses (ic, 6, 1));
      break;
    case IRECV:   /* buf, count, type, source, tag, comm, request */
      receive_part (row, A (0), INT (3), INT (4), handle (A (5)));
      row->completed = NOT_COMPLETED;
      break;
    case SENDRECV:    /* sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, source, rtag, comm, status */
      send_part (row, A (0), COUNT (1), handle (A (2)), INT (3), INT (4), handle (A (10)));
      if ((second = new_row (row->call)) == NULL) break;
      receive_part (second, A (5), INT (8), INT (9), handle (A (10)));
      expect (S->call + 1, A (5), COUNT (6), handle (A (7)), second->comm, own_statuses (ic, 11, 1));
      break;
    case SENDRECV_REPLACE:    /* buf, count, type, dest, stag, source, rtag, comm, status */
      send_part (row, A (0), COUNT (1), handle (A (2)), INT (3), INT (4), handle (A (7)));
      if ((second = new_row (row->call)) == NULL) break;
      receive_part (second, A (0), INT (5), INT (6), handle (A (7)));
      expect (S->call + 1, A (0), COUNT (1), handle (A (2)), second->comm, own_statuses (ic, 8, 1));
      break;
    case MPROBE:  /* source, tag, comm, message, status */
      row->comm = (gint32) comm_number (handle (A (2)));
      own_statuses (ic, 4, 1);
      break;
    case IMPROBE: /* source, tag, comm, flag, message, status */
      row->comm = (gint32) comm_number (handle (A (2)));
      own_statuses (ic, 5, 1);
      break;
    case MRECV:   /* buf, count, type, message, status */
    case IMRECV:  /* buf, count, type, message, request */
    {
      guint64 k, h = handle_at (A (3));
      Message * m = S->messages.rows;
      for (k = 0; k < S->messages.count && m[k].handle != h; k++)
        ;
      row->object = tr_mpi_access (A (0), 0, FALSE);
      if (k < S->messages.count)
      {
        row->comm = (gint32) m[k].comm;
        m[k] = m[--S->messages.count];
      }
      if (S->shape == MRECV)
        expect (S->call, A (0), COUNT (1), handle (A (2)), row->comm, own_statuses (ic, 4, 1));
      else
        row->completed = NOT_COMPLETED;
      break;
    }
    case WAIT:    /* request, status */
      keep_handles (A (0), 1);
      own_statuses (ic, 1, 1);
      break;
    case TEST:    /* request, flag, status */
      keep_handles (A (0), 1);
      own_statuses (ic, 2, 1);
      break;
    case WAITALL: /* count, requests, statuses */
      keep_handles (A (1), INT (0));
      own_statuses (ic, 2, INT (0));
      break;
    case TESTALL: /* count, requests, flag, statuses */
      keep_handles (A (1), INT (0));
      own_statuses (ic, 3, INT (0));
      break;
    case WAITANY: /* count, requests, index, status */
      keep_handles (A (1), INT (0));
      own_statuses (ic, 3, 1);
      break;
    case TESTANY: /* count, requests, index, flag, status */
      keep_handles (A (1), INT (0));
      own_statuses (ic, 4, 1);
      break;
    case WAITSOME:    /* incount, requests, outcount, indices, statuses */
    case TESTSOME:
      keep_handles (A (1), INT (0));
      own_statuses (ic, 4, INT (0));
      break;
    case REQUEST_FREE:
      forget_request (handle_at (A (0)));
      break;
    default:
      enter_collective (row);
  }
}

static void leave_modelled (void)
{
  CallRow * row = ROW (S->call);
  gint32 n;
  switch (S->shape)
  {
    case INIT:
      comm_number (S->world);
      comm_number (S->self);
      PMPI_Comm_rank (S->world, &S->rank);
      PMPI_Comm_size (S->world, &S->size);
      break;
    case COMM_NEW:
    {
      guint64 fresh = handle_at (A (MODELS[S->model].at));
      if (fresh != S->null_comm)
        comm_number (fresh);
      break;
    }
    case ISEND:
      started (A (6), FALSE, 0, 0, 0, row->comm);
      break;
    case IRECV:
      started (A (6), TRUE, A (0), COUNT (1), handle (A (2)), row->comm);
      break;
    case IMRECV:
      started (A (4), TRUE, A (0), COUNT (1), handle (A (2)), row->comm);
      break;
    case MPROBE:
    case IMPROBE:
    {
      guint i = S->shape == MPROBE ? 3 : 4;
      if (S->shape == IMPROBE && !*(gint32 *) A (3))
        break;
      guint64 status = A (i + 1);
      row->peer = world_rank (row->comm, *(gint32 *) (status + ABI->source_at));
      row->tag = row->peer < 0 ? -1 : *(gint32 *) (status + ABI->tag_at);
      Message * m = append (&S->messages, sizeof (Message));
      if (m != NULL)
      {
        m->handle = handle_at (A (i));
        m->comm = row->comm;
      }
      break;
    }
    case WAIT:
      completed (KEPT (0), A (1));
      break;
    case TEST:
      if (*(gint32 *) A (1))
        completed (KEPT (0), A (2));
      break;
    case WAITALL:
    case TESTALL:
      if (S->shape == TESTALL && !*(gint32 *) A (2))
        break;
      for (gint32 k = 0; k < INT (0); k++)
        completed (KEPT (k), STATUS (S->shape == WAITALL ? 2 : 3, k));
      break;
    case WAITANY:
    case TESTANY:
      n = *(gint32 *) A (2);
      if ((S->shape == TESTANY && !*(gint32 *) A (3)) || n < 0 || n >= INT (0))
        break;
      completed (KEPT (n), A (S->shape == WAITANY ? 3 : 4));
      break;
    case WAITSOME:
    case TESTSOME:
      n = *(gint32 *) A (2);
      for (gint32 k = 0; k < n && n != ABI->undefined; k++)
        completed (KEPT (((gint32 *) A (3))[k]), STATUS (4, k));
      break;
  }
  if (S->receiving)
    received (ROW (S->receive_row), S->receive_comm, S->receive_buf, S->receive_count, S->receive_type,
        S->receive_status);
  if (S->write_span)
  {
    tr_mpi_access (S->write_address, S->write_span, TRUE);
    tr_pattern_receive (S->call, S->write_address, S->write_span, S->write_element);
  }
}

static gboolean traced (GumInvocationContext * ic)
{
  return gum_invocation_context_get_thread_id (ic) == (gsize) tareador_thread[0];
}

/* The listener data of a hooked function: its index in the agent's list, whether it is a _c
 * variant, and its model. */
#define HOOK_CALL(data) ((guint32) ((data) >> 16))
#define HOOK_LARGE(data) ((guint32) ((data) >> 8) & 1)
#define HOOK_MODEL(data) ((guint32) (data) & 0xff)

void mpi_enter (GumInvocationContext * ic)
{
  if (!traced (ic) || S->depth++)
    return;
  guint64 data = GUM_ADDRESS (gum_invocation_context_get_listener_function_data (ic));
  S->posted = tr_enter_mpi (&S->task);
  S->model = HOOK_MODEL (data);
  S->shape = MODELS[S->model].shape;
  S->large = HOOK_LARGE (data);
  S->receiving = 0;
  S->write_span = 0;
  S->call = S->calls.count;
  CallRow * row = new_row (HOOK_CALL (data));
  if (row == NULL || S->shape == UNMODELLED)
    return;
  for (guint i = 0; i < MAX_ARGS; i++)
    A (i) = GUM_ADDRESS (gum_invocation_context_get_nth_argument (ic, i));
  if (S->shape != INIT && S->shape != FINALIZE)
    enter_modelled (ic, row);
}

void mpi_leave (GumInvocationContext * ic)
{
  if (!traced (ic) || --S->depth)
    return;
  if (S->call < S->calls.count && S->shape != UNMODELLED)
    leave_modelled ();
  tr_leave_mpi ();
}

/* The listener data for the hooked function number call, named name. */
guint64 mpi_hook_data (guint32 call, const gchar * name)
{
  for (guint m = 1; m < G_N_ELEMENTS (MODELS); m++)
  {
    const gchar * a = MODELS[m].name, * b = name;
    while (*a != 0 && *a == *b)
      a++, b++;
    if (*a != 0)
      continue;
    if (*b == 0)
      return ((guint64) call << 16) | m;
    if (b[0] == '_' && b[1] == 'c' && b[2] == 0)
      return ((guint64) call << 16) | (1 << 8) | m;
  }
  return (guint64) call << 16;
}

/* The ABI, and Open MPI's predefined communicators (the agent finds them by name). */
void mpi_setup (guint32 openmpi, guint64 world, guint64 self, guint64 null_comm)
{
  S->openmpi = openmpi;
  S->world = openmpi ? world : MPICH_COMM_WORLD;
  S->self = openmpi ? self : MPICH_COMM_SELF;
  S->null_comm = openmpi ? null_comm : MPICH_COMM_NULL;
  S->rank = S->size = -1;
}

/* The tables for the agent, at the end: 0 calls, 1 completions, 2 communicators, 3 world ranks. */
gpointer mpi_table (guint32 which, guint64 * count)
{
  Table * t = which == 0 ? &S->calls : which == 1 ? &S->completions : which == 2 ? &S->comms : &S->ranks;
  *count = t->count;
  return t->rows;
}

/* Whether the traced thread is inside an MPI call (threads MPI_Init starts are the library's). */
guint32 mpi_inside (void)
{
  return S->depth;
}

void mpi_status (gint64 out[4])
{
  out[0] = S->rank;
  out[1] = S->size;
  out[2] = (gint64) S->noncontiguous;
  out[3] = (gint64) S->requests.count;
}
