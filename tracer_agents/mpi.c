/* Interceptor listeners on the MPI library's exported MPI_* functions, in native code: a code with
 * millions of messages makes millions of calls, and a JavaScript callback per call would
 * dominate the run. Every export is hooked (MPI_X is a weak alias of PMPI_X: one hook catches
 * both names; the library's calls to itself go through internal symbols and are not seen).
 *
 * For each call of the traced thread (the outermost one: a hooked function the library calls
 * from inside another is part of it) one row is recorded: the call, the fragment that made it
 * and the instruction counter. Inside the call nothing is analysed or counted (shadow.c's
 * tr_enter_mpi / tr_leave_mpi). The calls tareador models also get their peer (a world rank),
 * tag, communicator and bytes, and their effect on data: a send reads its buffer when it is
 * called, a receive writes its buffer when it completes (a Recv at its return, an Irecv at the
 * Wait or Test that completes it), charged to the fragment making that call; a buffer is the
 * bytes its datatype covers, laid out from MPI_Type_get_envelope/get_contents. Each MPI_Start of
 * a persistent request is a row of its own, as an Isend or Irecv. A test that completes nothing
 * (or a probe that finds nothing) is waiting: it leaves no row, and a loop of them is one wait
 * (shadow.c's tr_mpi_polled).
 *
 * The two ABIs differ (handles are 32-bit integers in MPICH, pointers in Open MPI; statuses and
 * the special values differ): see Abi below. A CModule's statics are read-only at run time, so
 * the state and its tables live in memory the agent allocates and that shadow.c grows.
 */
#include <gum/guminterceptor.h>

#define MAX_ARGS 12
#define NO_TASK 0xffffffffu
#define NOT_COMPLETED (~(guint64) 0)

extern guint64 tr_enter_mpi (guint32 * task, guint32 poll);
extern void tr_leave_mpi (void);
extern void tr_mpi_polled (void);
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
extern gint PMPI_Type_get_envelope (guint64 type, gint * ints, gint * addresses, gint * types, gint * combiner);
extern gint PMPI_Type_get_contents (guint64 type, gint ints, gint addresses, gint types, gpointer int_array,
    gpointer address_array, gpointer type_array);
extern gint PMPI_Type_free (guint64 * type);

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
/* A request under way: the handle MPI gave it and where the program keeps it (at). Requests that
 * complete at once share one handle (both MPIs), so a Wait/Test's handle is matched by where it
 * lies first, and by value only when the program copied it elsewhere. */
typedef struct { guint64 handle, at, call, buf, type; gint64 count; guint32 number, receive, comm, pad; } Request;
/* A persistent request (MPI_Send_init, MPI_Recv_init, ...): what each MPI_Start of it sends or
 * receives. kind: 0..3 MPI_Send/Bsend/Ssend/Rsend_init, 4 MPI_Recv_init. */
typedef struct { guint64 handle, buf, type; gint64 count; gint32 peer, tag; guint32 comm, kind; } Persistent;
/* Bytes of one element of a datatype, from its start: (offset, length) runs, in typemap order. */
typedef struct { gint64 offset, length; } Block;
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
  /* ... or a collective's (write_type 0: none). */
  guint64 write_buf, write_type;
  gint64 write_count;
  Table calls, completions, comms, ranks, requests, messages, statuses, handles;
  guint64 requests_made;
  guint64 complex;         /* buffers of datatypes too complex to lay out: taken as their true extent */
  guint64 unpatterned;     /* non-contiguous message buffers, left out of the patterns */
  Table persistents, blocks, scratch;
  guint64 blocks_floor, scratch_top;
  guint64 start_names;     /* the agent's index of "MPI_Start:MPI_Send_init", the first started-row name */
  guint32 poll, pad2;
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
  SEND, ISEND, RECV, IRECV, SENDRECV, SENDRECV_REPLACE, MPROBE, IMPROBE, MRECV, IMRECV, IPROBE,
  SEND_INIT, RECV_INIT, START, STARTALL,
  WAIT, TEST, WAITALL, TESTALL, WAITANY, TESTANY, WAITSOME, TESTSOME, REQUEST_FREE,
  BARRIER, BCAST, REDUCE, ALLREDUCE, GATHER, GATHERV, SCATTER, SCATTERV, ALLGATHER, ALLGATHERV,
  ALLTOALL, ALLTOALLV, REDUCE_SCATTER, REDUCE_SCATTER_BLOCK
};

/* at: the argument holding the new communicator (COMM_NEW); a persistent request's kind (SEND_INIT,
 * RECV_INIT), in the order of the started rows' names (agent.js). */
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
  { "MPI_Iprobe", IPROBE, 0 },
  { "MPI_Send_init", SEND_INIT, 0 }, { "MPI_Bsend_init", SEND_INIT, 1 }, { "MPI_Ssend_init", SEND_INIT, 2 },
  { "MPI_Rsend_init", SEND_INIT, 3 }, { "MPI_Recv_init", RECV_INIT, 4 },
  { "MPI_Start", START, 0 }, { "MPI_Startall", STARTALL, 0 },
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

/* count elements of type from buf: the bytes they hold, and where they lie. A type whose
 * elements leave gaps (a column of a matrix, a struct with padding, a subarray) reads or
 * writes exactly the bytes its typemap covers (lay_out); span is then the true extent. */
typedef struct { guint64 buf, type, address, span, bytes, element; gint64 count, extent; guint32 gaps, pad; } Extent;

static Extent extent_of (guint64 buf, gint64 count, guint64 type)
{
  Extent e = { buf, handle (type), buf, 0, 0, 1, count, 0, 0, 0 };
  if (count <= 0)
    return e;
  gint size = 0;
  gint64 lb = 0, extent = 0, true_lb = 0, true_extent = 0;
  PMPI_Type_size (e.type, &size);
  PMPI_Type_get_extent (e.type, &lb, &extent);
  PMPI_Type_get_true_extent (e.type, &true_lb, &true_extent);
  e.element = size > 0 ? (guint64) size : 1;
  e.extent = extent;
  e.bytes = e.span = (guint64) count * (guint64) size;
  e.address = buf + true_lb;
  if (true_extent != size || (count > 1 && extent != size))
  {
    e.gaps = 1;
    e.span = (guint64) ((count - 1) * extent + true_extent);
  }
  return e;
}

/* ---- datatype layouts: MPI_Type_get_envelope / get_contents, recursively ---- */

#define MAX_BLOCKS 65536   /* runs of bytes per element, beyond which a type is taken as its true extent */
#define MAX_TYPE_DEPTH 16
#define MAX_DIMS 32
/* Combiners in Open MPI's numbering; MPICH's are one more. */
enum { C_NAMED, C_DUP, C_CONTIGUOUS, C_VECTOR, C_HVECTOR_INTEGER, C_HVECTOR, C_INDEXED, C_HINDEXED_INTEGER,
  C_HINDEXED, C_INDEXED_BLOCK, C_STRUCT_INTEGER, C_STRUCT, C_SUBARRAY, C_DARRAY, C_F90_REAL, C_F90_COMPLEX,
  C_F90_INTEGER, C_RESIZED, C_HINDEXED_BLOCK };

static gboolean add_block (gint64 offset, gint64 length)
{
  if (length <= 0)
    return TRUE;
  if (S->blocks.count > S->blocks_floor)
  {
    Block * last = &((Block *) S->blocks.rows)[S->blocks.count - 1];
    if (last->offset + last->length == offset)
    {
      last->length += length;
      return TRUE;
    }
  }
  if (S->blocks.count >= MAX_BLOCKS)
    return FALSE;
  Block * b = append (&S->blocks, sizeof (Block));
  if (b == NULL)
    return FALSE;
  b->offset = offset;
  b->length = length;
  return TRUE;
}

/* The blocks[first, first + n) of a child type, again at displacement d. */
static gboolean place (guint64 first, guint64 n, gint64 d)
{
  for (guint64 k = 0; k < n; k++)
  {
    Block b = ((Block *) S->blocks.rows)[first + k];
    if (!add_block (b.offset + d, b.length))
      return FALSE;
  }
  return TRUE;
}

/* Subarray: every element of the subsizes box at starts, in a sizes array of order C or Fortran. */
static gboolean place_subarray (gint n, const gint32 * ints, guint64 first, guint64 count, gint64 extent)
{
  const gint32 * sizes = ints + 1, * subsizes = ints + 1 + n, * starts = ints + 1 + 2 * n;
  gboolean c_order = ints[1 + 3 * n] == (S->openmpi ? 0 : 56);
  gint64 stride[MAX_DIMS], index[MAX_DIMS];
  if (n < 1 || n > MAX_DIMS)
    return FALSE;
  for (gint d = 0; d < n; d++)
  {
    gint k = c_order ? n - 1 - d : d;
    stride[k] = d == 0 ? 1 : stride[c_order ? k + 1 : k - 1] * sizes[c_order ? k + 1 : k - 1];
    index[k] = 0;
    if (subsizes[k] <= 0)
      return TRUE;
  }
  for (;;)
  {
    gint64 at = 0;
    for (gint d = 0; d < n; d++)
      at += (starts[d] + index[d]) * stride[d];
    if (!place (first, count, at * extent))
      return FALSE;
    gint d = 0;
    for (; d < n; d++)
    {
      gint k = c_order ? n - 1 - d : d;
      if (++index[k] < subsizes[k])
        break;
      index[k] = 0;
    }
    if (d == n)
      return TRUE;
  }
}

/* Where the copies of the children go, per combiner (ints, addresses as get_contents gives
 * them; kids[3k..3k+2]: child k's first block, block count and extent). */
static gboolean place_children (gint combiner, const gint32 * I, const gint64 * A_, const guint64 * kids)
{
  gint64 n = I[0], e = (gint64) kids[2];
  switch (combiner)
  {
    case C_DUP:
    case C_RESIZED:
      return place (kids[0], kids[1], 0);
    case C_CONTIGUOUS:
      for (gint64 k = 0; k < n; k++)
        if (!place (kids[0], kids[1], k * e)) return FALSE;
      return TRUE;
    case C_VECTOR:
    case C_HVECTOR:
      for (gint64 i = 0; i < n; i++)
        for (gint64 j = 0; j < I[1]; j++)
          if (!place (kids[0], kids[1], (combiner == C_VECTOR ? i * I[2] * e : i * A_[0]) + j * e)) return FALSE;
      return TRUE;
    case C_INDEXED:
    case C_HINDEXED:
    case C_INDEXED_BLOCK:
    case C_HINDEXED_BLOCK:
    {
      gboolean block = combiner == C_INDEXED_BLOCK || combiner == C_HINDEXED_BLOCK;
      gboolean bytes = combiner == C_HINDEXED || combiner == C_HINDEXED_BLOCK;
      for (gint64 i = 0; i < n; i++)
      {
        gint64 length = block ? I[1] : I[1 + i];
        gint64 at = bytes ? A_[i] : (block ? I[2 + i] : I[1 + n + i]) * e;
        for (gint64 j = 0; j < length; j++)
          if (!place (kids[0], kids[1], at + j * e)) return FALSE;
      }
      return TRUE;
    }
    case C_STRUCT:
      for (gint64 i = 0; i < n; i++)
        for (gint64 j = 0; j < I[1 + i]; j++)
          if (!place (kids[3 * i], kids[3 * i + 1], A_[i] + j * (gint64) kids[3 * i + 2])) return FALSE;
      return TRUE;
    case C_SUBARRAY:
      return place_subarray (I[0], I, kids[0], kids[1], e);
  }
  return FALSE;
}

static gint combiner_of (guint64 type, gint * ni, gint * na, gint * nd)
{
  gint combiner = -1;
  if (PMPI_Type_get_envelope (type, ni, na, nd, &combiner) != 0)
    return -1;
  return S->openmpi ? combiner : combiner - 1;
}

/* Appends to S->blocks the blocks of one element of type; FALSE when it cannot be laid out (too
 * many blocks, too deep, or a combiner not handled: MPI_Type_create_darray, the Fortran
 * *_INTEGER variants). The children get_contents returns are laid out once, copied where the
 * combiner places them, and freed. */
static gboolean lay_out (guint64 type, guint depth)
{
  gint ni = 0, na = 0, nd = 0;
  gint combiner = combiner_of (type, &ni, &na, &nd);
  if (combiner < 0 || depth > MAX_TYPE_DEPTH)
    return FALSE;
  if (combiner == C_NAMED || combiner == C_F90_REAL || combiner == C_F90_COMPLEX || combiner == C_F90_INTEGER)
  {
    gint size = 0;
    PMPI_Type_size (type, &size);
    return add_block (0, size);
  }
  guint64 base = S->scratch_top, iw = ((guint64) ni + 1) / 2, own = S->blocks.count, floor = S->blocks_floor;
  guint64 words = iw + (guint64) na + 4 * (guint64) nd;
  if (reserve (&S->scratch, base + words, sizeof (guint64)) == NULL)
    return FALSE;
  S->scratch_top = base + words;
#define WORDS (((guint64 *) S->scratch.rows) + base)
#define KID(k) (handle_at (GUM_ADDRESS (WORDS + iw + na) + (guint64) (k) * ABI->handle_size))
  PMPI_Type_get_contents (type, ni, na, nd, WORDS, WORDS + iw, WORDS + iw + na);
  gboolean ok = TRUE;
  for (gint k = 0; k < nd && ok; k++)
  {
    guint64 first = S->blocks.count;
    gint64 lb = 0, extent = 0;
    S->blocks_floor = first;
    ok = lay_out (KID (k), depth + 1);
    PMPI_Type_get_extent (KID (k), &lb, &extent);
    guint64 * kid = WORDS + iw + na + nd + 3 * k;
    kid[0] = first;
    kid[1] = S->blocks.count - first;
    kid[2] = (guint64) extent;
  }
  guint64 copies = S->blocks_floor = S->blocks.count;
  if (ok)
    ok = nd > 0 && place_children (combiner, (const gint32 *) WORDS, (const gint64 *) (WORDS + iw),
        WORDS + iw + na + nd);
  /* The copies replace the children's own blocks. */
  Block * b = S->blocks.rows;
  for (guint64 k = copies; ok && k < S->blocks.count; k++)
    b[own + k - copies] = b[k];
  S->blocks.count = ok ? own + S->blocks.count - copies : own;
  for (gint k = 0; k < nd; k++)
  {
    gint i, a, d;
    guint64 kid = KID (k);
    if (combiner_of (kid, &i, &a, &d) != C_NAMED)
      PMPI_Type_free (&kid);
  }
#undef KID
#undef WORDS
  S->blocks_floor = floor;
  S->scratch_top = base;
  return ok;
}

/* Reads (or writes) exactly the bytes of e; returns the object holding its first byte. */
static guint32 touch (Extent e, gboolean write)
{
  if (!e.gaps)
    return tr_mpi_access (e.address, e.span, write);
  S->blocks.count = S->blocks_floor = S->scratch_top = 0;
  if (!lay_out (e.type, 0))
  {
    S->blocks.count = 0;
    S->complex++;
    return tr_mpi_access (e.address, e.span, write);
  }
  guint32 object = 0;
  for (gint64 k = 0; k < e.count; k++)
    for (guint64 i = 0; i < S->blocks.count; i++)
    {
      Block b = ((Block *) S->blocks.rows)[i];
      guint32 o = tr_mpi_access (e.buf + k * e.extent + b.offset, b.length, write);
      if (object == 0)
        object = o;
    }
  return object;
}

/* The patterns (patterns.c) follow contiguous buffers of elements; others are counted. */
static void pattern (guint64 call, Extent e, gboolean receive)
{
  if (e.gaps)
    S->unpatterned++;
  else if (receive)
    tr_pattern_receive (call, e.address, e.span, e.element);
  else
    tr_pattern_send (call, e.address, e.span, e.element);
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
  pattern (row - (CallRow *) S->calls.rows, e, FALSE);
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
  pattern (row - (CallRow *) S->calls.rows, e, TRUE);
}

/* The request whose handle is h, kept at address at: the one started there, else (the program
 * copied the handle) the oldest with that handle. */
static Request * request_of (guint64 at, guint64 h)
{
  Request * r = S->requests.rows, * found = NULL;
  for (guint64 k = 0; k < S->requests.count; k++)
    if (r[k].handle == h)
    {
      if (r[k].at == at)
        return &r[k];
      if (found == NULL || r[k].number < found->number)
        found = &r[k];
    }
  return found;
}

static void forget (Request * r)
{
  *r = ((Request *) S->requests.rows)[--S->requests.count];
}

static Persistent * persistent_of (guint64 h)
{
  Persistent * p = S->persistents.rows;
  for (guint64 k = 0; k < S->persistents.count; k++)
    if (p[k].handle == h)
      return &p[k];
  return NULL;
}

/* MPI_Request_free of the handle at at: the request (its operation goes on unseen) and, for a
 * persistent one, the request itself. */
static void free_request (guint64 at)
{
  guint64 h = handle_at (at);
  Request * r = request_of (at, h);
  if (r != NULL)
    forget (r);
  Persistent * p = persistent_of (h);
  if (p != NULL)
    *p = ((Persistent *) S->persistents.rows)[--S->persistents.count];
}

/* Row call started a non-blocking operation whose handle is at at: number it with the tracer's
 * own sequence (MPI recycles handles, and gives identical ones to requests that completed at once). */
static void started (guint64 call, guint64 at, gboolean receive, guint64 buf, gint64 count, guint64 type, guint32 comm)
{
  Request * r = append (&S->requests, sizeof (Request));
  if (r == NULL)
    return;
  r->handle = handle_at (at);
  r->at = at;
  r->call = call;
  r->number = (guint32) S->requests_made;
  r->receive = receive;
  r->buf = buf;
  r->count = count;
  r->type = type;
  r->comm = comm;
  ROW (call)->completed = NOT_COMPLETED;
  ROW (call)->request = (gint64) S->requests_made++;
}

/* The request whose handle was h at address at on the call's entry completed, with status. */
static void completed (guint64 at, guint64 h, guint64 status)
{
  Request * r = request_of (at, h);
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
#define SLOT(array, k) ((array) + (guint64) (k) * ABI->handle_size)
#define STATUS(i, k) (A (i) + (guint64) (k) * ABI->status_size)

/* ---- persistent requests: each MPI_Start(all) of one is a row, as an Isend or Irecv would be ---- */

static void persistent (guint32 kind, guint64 buf, gint64 count, guint64 type, gint32 peer, gint32 tag, guint32 comm)
{
  Persistent * p = append (&S->persistents, sizeof (Persistent));
  if (p == NULL)
    return;
  p->handle = handle_at (A (6));
  p->buf = buf;
  p->count = count;
  p->type = type;
  p->peer = peer;
  p->tag = tag;
  p->comm = comm;
  p->kind = kind;
}

/* Row call starts the persistent request kept at at; the row is named by the request's kind
 * ("MPI_Startall:MPI_Recv_init"). An unknown handle (inactive, MPI_REQUEST_NULL) starts nothing. */
static void start (guint64 call, guint64 at)
{
  Persistent * p = persistent_of (handle_at (at));
  if (p == NULL)
    return;
  CallRow * row = ROW (call);
  row->call = (guint32) (S->start_names + (S->shape == STARTALL ? 5 : 0) + p->kind);
  row->comm = (gint32) p->comm;
  if (p->peer != ABI->proc_null)
  {
    row->peer = world_rank (p->comm, p->peer);
    row->tag = p->tag;
  }
  if (p->kind == 4)
  {
    if (p->peer != ABI->proc_null)
      row->object = tr_mpi_access (p->buf, 0, FALSE);
    started (call, at, TRUE, p->buf, p->count, p->type, p->comm);
    return;
  }
  if (p->peer != ABI->proc_null)
  {
    Extent e = extent_of (p->buf, p->count, p->type);
    row->bytes = e.bytes;
    row->object = touch (e, FALSE);
    pattern (call, e, FALSE);
  }
  started (call, at, FALSE, 0, 0, 0, p->comm);
}

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
  pattern (S->call, e, FALSE);
}

/* Written when the call returns; a rank that only receives names the buffer it receives into. */
static void writes (CallRow * row, Extent e)
{
  S->write_buf = e.buf;
  S->write_count = e.count;
  S->write_type = e.type;
  if (row->object == 0)
    row->object = tr_mpi_access (e.address, 0, FALSE);
}

static gint64 extent_of_type (guint64 type)
{
  gint64 lb = 0, extent = 0;
  PMPI_Type_get_extent (handle (type), &lb, &extent);
  return extent;
}

/* The part of an in-place buffer that is this rank's contribution: block me of count elements. */
static Extent own_block (guint64 buf, gint64 count, guint64 type, guint32 me)
{
  return extent_of (buf + (guint64) (count * me * extent_of_type (type)), count, type);
}

/* The same for a v-collective: counts[me] elements at displacement displs[me]. */
static Extent displaced_block (guint64 buf, guint64 counts, guint64 displs, guint64 type, guint32 me)
{
  return extent_of (buf + (guint64) (count_at (displs, me) * extent_of_type (type)), count_at (counts, me), type);
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
    case IPROBE:  /* source, tag, comm, flag, status */
      row->comm = (gint32) comm_number (handle (A (2)));
      own_statuses (ic, 4, 1);
      break;
    case SEND_INIT:   /* buf, count, type, dest, tag, comm, request */
    case RECV_INIT:   /* buf, count, type, source, tag, comm, request */
      row->comm = (gint32) comm_number (handle (A (5)));
      if (INT (3) == ABI->proc_null)
        break;
      row->peer = world_rank (row->comm, INT (3));
      row->tag = INT (4);
      row->bytes = extent_of (A (0), COUNT (1), A (2)).bytes;
      row->object = tr_mpi_access (A (0), 0, FALSE);
      break;
    case START:   /* request */
      start (S->call, A (0));
      break;
    case STARTALL:    /* count, requests */
      for (gint32 k = 0; k < INT (0); k++)
      {
        if (k > 0 && new_row (row->call) == NULL)
          break;
        start (S->calls.count - 1, SLOT (A (1), k));
      }
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
      free_request (A (0));
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
      started (S->call, A (6), FALSE, 0, 0, 0, row->comm);
      break;
    case IRECV:
      started (S->call, A (6), TRUE, A (0), COUNT (1), handle (A (2)), row->comm);
      break;
    case SEND_INIT:
    case RECV_INIT:
      persistent (MODELS[S->model].at, A (0), COUNT (1), handle (A (2)), INT (3), INT (4), (guint32) row->comm);
      break;
    case IMRECV:
      started (S->call, A (4), TRUE, A (0), COUNT (1), handle (A (2)), row->comm);
      break;
    case IPROBE:
      if (*(gint32 *) A (3))
      {
        row->peer = world_rank (row->comm, *(gint32 *) (A (4) + ABI->source_at));
        row->tag = row->peer < 0 ? -1 : *(gint32 *) (A (4) + ABI->tag_at);
      }
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
      completed (A (0), KEPT (0), A (1));
      break;
    case TEST:
      if (*(gint32 *) A (1))
        completed (A (0), KEPT (0), A (2));
      break;
    case WAITALL:
    case TESTALL:
      if (S->shape == TESTALL && !*(gint32 *) A (2))
        break;
      for (gint32 k = 0; k < INT (0); k++)
        completed (SLOT (A (1), k), KEPT (k), STATUS (S->shape == WAITALL ? 2 : 3, k));
      break;
    case WAITANY:
    case TESTANY:
      n = *(gint32 *) A (2);
      if ((S->shape == TESTANY && !*(gint32 *) A (3)) || n < 0 || n >= INT (0))
        break;
      completed (SLOT (A (1), n), KEPT (n), A (S->shape == WAITANY ? 3 : 4));
      break;
    case WAITSOME:
    case TESTSOME:
      n = *(gint32 *) A (2);
      for (gint32 k = 0; k < n && n != ABI->undefined; k++)
        completed (SLOT (A (1), ((gint32 *) A (3))[k]), KEPT (((gint32 *) A (3))[k]), STATUS (4, k));
      break;
  }
  if (S->receiving)
    received (ROW (S->receive_row), S->receive_comm, S->receive_buf, S->receive_count, S->receive_type,
        S->receive_status);
  if (S->write_type != 0)
  {
    Extent e = extent_of (S->write_buf, S->write_count, S->write_type);
    touch (e, TRUE);
    pattern (S->call, e, TRUE);
  }
}

/* Polls: a Test that completed nothing, an Iprobe that found nothing. */
static gboolean is_poll (guint32 shape)
{
  return shape == TEST || shape == TESTALL || shape == TESTANY || shape == TESTSOME || shape == IPROBE
      || shape == IMPROBE;
}

static gboolean found_nothing (void)
{
  switch (S->shape)
  {
    case TEST:
      return !*(gint32 *) A (1);
    case TESTALL:
      return !*(gint32 *) A (2);
    case TESTANY:
    case IPROBE:
    case IMPROBE:
      return !*(gint32 *) A (3);
    case TESTSOME:
      return *(gint32 *) A (2) == 0;
  }
  return FALSE;
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
  S->model = HOOK_MODEL (data);
  S->shape = MODELS[S->model].shape;
  S->posted = tr_enter_mpi (&S->task, is_poll (S->shape));
  S->large = HOOK_LARGE (data);
  S->receiving = 0;
  S->write_type = 0;
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
  /* A poll that found nothing is waiting: it leaves no row, and a loop of them is one wait. */
  if (is_poll (S->shape) && S->call + 1 == S->calls.count && found_nothing ())
  {
    S->calls.count--;
    tr_mpi_polled ();
  }
  tr_leave_mpi ();
}

/* The agent's index of the first name of the rows persistent requests start (agent.js). */
void mpi_start_names (guint64 first)
{
  S->start_names = first;
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

void mpi_status (gint64 out[6])
{
  out[0] = S->rank;
  out[1] = S->size;
  out[2] = (gint64) S->complex;
  out[3] = (gint64) S->requests.count;
  out[4] = (gint64) S->unpatterned;
}
