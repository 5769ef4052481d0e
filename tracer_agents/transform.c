/* Stalker transform: runs once per basic block (not per execution), compiled by Frida's TinyCC.
 *
 * For every block of code worth analysing it emits, inline,
 *   - a prologue that adds the block's instruction count and, when the access buffer is nearly
 *     full, calls tr_flush (a callout, taken only once per ~million accesses);
 *   - before each instruction touching memory, a few instructions appending {address, size|write}
 *     records to the buffer (rep movs/stos: size = rcx x element size).
 * Flags are preserved with lahf/seto ... add/sahf instead of pushf/popf, which is far slower.
 * Blocks that begin a marker function get a callout to tr_marker instead; blocks that begin a
 * function named by --task-function, a callout opening a task (before their own code, which is
 * the task's), and the return stub's block one closing it (see tr_function_enter in shadow.c).
 */
#include <gum/gumstalker.h>

#define ACCESS_WRITE 0x40000000u
#define ACCESS_PROGRAM 0x80000000u
#define RED_ZONE 128
#define CHECK_EVERY 2048

typedef struct { gpointer cursor; gpointer limit; guint64 instructions; guint64 string_start[2]; } TracerStateHead;
#define STRING_START 24   /* offset of string_start */

extern TracerStateHead tr_state;
extern void tr_flush_callout (GumCpuContext * cpu, gpointer data);
extern void tr_marker (guint kind, guint64 argument, guint64 sp, guint64 return_address, guint64 rbp);
extern void tr_translated (guint64 translated, guint64 original);
extern void tr_function_enter (const char * name, guint64 sp, guint64 rbp);
extern void tr_function_return (guint64 sp);
extern guint64 tr_return_stub;
extern guint64 tr_xsave_bytes;
/* Filled by the agent: [start, end) pairs of code to analyse, and of the program's own code (not
 * a system library's: its accesses are flagged ACCESS_PROGRAM), each ended by a 0 pair; and the
 * addresses of the marker functions indexed by marker kind (0 where absent). */
extern guint64 tareador_code_ranges[];
extern guint64 tareador_user_ranges[];
extern guint64 tareador_markers[];
extern guint64 tareador_blocks[];
extern guint64 tr_task_sites[];
extern void tr_task_call (guint64 site, const guint64 * args);
/* Non-zero under trace --mpi: blocks that access memory first append a time record (patterns.c). */
extern guint64 tareador_patterns[];
/* The task functions: their count, then {entry address, name} pairs sorted by address. */
extern guint64 tareador_functions[];

static int register_number (x86_reg r)
{
  switch (r)
  {
    case X86_REG_RAX: return 0; case X86_REG_RCX: return 1; case X86_REG_RDX: return 2;
    case X86_REG_RBX: return 3; case X86_REG_RSP: return 4; case X86_REG_RBP: return 5;
    case X86_REG_RSI: return 6; case X86_REG_RDI: return 7; case X86_REG_R8: return 8;
    case X86_REG_R9: return 9; case X86_REG_R10: return 10; case X86_REG_R11: return 11;
    case X86_REG_R12: return 12; case X86_REG_R13: return 13; case X86_REG_R14: return 14;
    case X86_REG_R15: return 15;
    default: return -1;
  }
}

static int scale_bits (int scale)
{
  return scale == 8 ? 3 : scale == 4 ? 2 : scale == 2 ? 1 : 0;
}

/* lea dst, [base + index*scale + disp32]; base or index may be absent (-1). */
static void put_lea (GumX86Writer * w, int dst, int base, int index, int scale, gint32 disp)
{
  guint8 code[8];
  int idx = index < 0 ? 4 : (index & 7);
  code[0] = 0x48 | (dst >= 8 ? 0x04 : 0) | (index >= 8 ? 0x02 : 0) | (base >= 8 ? 0x01 : 0);
  code[1] = 0x8d;
  code[2] = (guint8) ((base < 0 ? 0x04 : 0x84) | ((dst & 7) << 3));
  code[3] = (guint8) ((scale_bits (scale) << 6) | (idx << 3) | (base < 0 ? 5 : (base & 7)));
  *(gint32 *) (code + 4) = disp;
  gum_x86_writer_put_bytes (w, code, 8);
}

/* Only plain user memory is analysed: not fs/gs (thread-local), vector-indexed (gather/scatter)
 * or 32-bit addressed operands. */
static gboolean is_analysable (const x86_op_mem * m)
{
  if (m->segment != X86_REG_INVALID)
    return FALSE;
  if (m->base == X86_REG_RIP)
    return m->index == X86_REG_INVALID;
  if (m->base != X86_REG_INVALID && register_number (m->base) < 0)
    return FALSE;
  if (m->index != X86_REG_INVALID && register_number (m->index) < 0)
    return FALSE;
  return m->disp + RED_ZONE + 16 == (gint32) (m->disp + RED_ZONE + 16);
}

/* One access of an instruction: the bytes at mem, as the instruction computes it before it runs
 * (xlat: [rbx + al]). */
typedef struct { x86_op_mem mem; guint32 size; guint32 write; gboolean xlat; } Access;

#define MAX_ACCESSES 8

/* Computes the access's address into register dst (0 rax, 3 rbx), with rax and rbx pushed
 * below the red zone and holding their own values. */
static void put_address (GumX86Writer * w, const cs_insn * insn, const Access * a, int dst)
{
  static const guint8 zero_extend_al[] = { 0x0f, 0xb6, 0xc0 };   /* movzx eax, al */
  const x86_op_mem * m = &a->mem;
  if (a->xlat)
  {
    gum_x86_writer_put_bytes (w, zero_extend_al, sizeof (zero_extend_al));
    put_lea (w, dst, 3 /* rbx */, 0 /* rax */, 1, 0);
    return;
  }
  if (m->base == X86_REG_RIP)
  {
    gum_x86_writer_put_mov_reg_address (w, dst == 0 ? GUM_X86_RAX : GUM_X86_RBX, insn->address + insn->size + m->disp);
    return;
  }
  int base = m->base == X86_REG_INVALID ? -1 : register_number (m->base);
  int index = m->index == X86_REG_INVALID ? -1 : register_number (m->index);
  put_lea (w, dst, base, index, m->scale, (gint32) (m->disp + (base == 4 ? RED_ZONE + 16 : 0)));
}

/* The inline code keeps rax and rbx below the red zone while it records: saved, they are
 * free, and [rsp + 8], [rsp] hold the program's values. */
static void put_save (GumX86Writer * w)
{
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
}

static void put_restore (GumX86Writer * w)
{
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
}

/* Saved registers (*saved), or not, as wanted. */
static void put_registers (GumX86Writer * w, gboolean * saved, gboolean want)
{
  if (*saved && !want)
    put_restore (w);
  else if (!*saved && want)
    put_save (w);
  *saved = want;
}

static gboolean uses_register (const Access * a, x86_reg r)
{
  return a->xlat || a->mem.base == r || a->mem.index == r;
}

/* Appends the record {address, flags | size}, registers saved; fresh: rax and rbx still hold
 * the program's values (else they are reloaded where the address needs them). The cursor is
 * moved with absolute loads and stores (movabs): no register holds tr_state's address. */
static void put_record (GumX86Writer * w, const cs_insn * insn, const Access * a, guint32 flags, gboolean fresh)
{
  static const guint8 reload_rax[] = { 0x48, 0x8b, 0x44, 0x24, 0x08 };   /* mov rax, [rsp+8] */
  static const guint8 reload_rbx[] = { 0x48, 0x8b, 0x1c, 0x24 };         /* mov rbx, [rsp] */
  static const guint8 store_address[] = { 0x48, 0x89, 0x18 };            /* mov [rax], rbx */
  static const guint8 next[] = { 0x48, 0x8d, 0x40, 0x10 };               /* lea rax, [rax+16] */
  guint8 load_cursor[10] = { 0x48, 0xa1 }, store_cursor[10] = { 0x48, 0xa3 };   /* movabs rax, [c]; movabs [c], rax */
  guint8 store_info[8] = { 0x48, 0xc7, 0x40, 0x08 };                     /* mov qword [rax+8], imm32 */
  *(guint64 *) (load_cursor + 2) = *(guint64 *) (store_cursor + 2) = GUM_ADDRESS (&tr_state);
  *(guint32 *) (store_info + 4) = flags | a->size;   /* sign-extended: shadow.c reads the low half */
  if (!fresh && uses_register (a, X86_REG_RAX))
    gum_x86_writer_put_bytes (w, reload_rax, sizeof (reload_rax));
  if (!fresh && uses_register (a, X86_REG_RBX))
    gum_x86_writer_put_bytes (w, reload_rbx, sizeof (reload_rbx));
  put_address (w, insn, a, 3 /* rbx */);
  gum_x86_writer_put_bytes (w, load_cursor, sizeof (load_cursor));
  gum_x86_writer_put_bytes (w, store_address, sizeof (store_address));
  gum_x86_writer_put_bytes (w, store_info, sizeof (store_info));
  gum_x86_writer_put_bytes (w, next, sizeof (next));
  gum_x86_writer_put_bytes (w, store_cursor, sizeof (store_cursor));
}

/* A time record {instruction counter, all ones}: the counter already includes this block, so the
 * block's accesses are timed to within its length. Only mov and lea: the flags are untouched. */
static void put_time_record (GumX86Writer * w)
{
  static const guint8 mark[] = { 0x48, 0xc7, 0x43, 0x08, 0xff, 0xff, 0xff, 0xff };   /* mov qword [rbx+8], -1 */
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_reg_offset_ptr (w, GUM_X86_RAX, GUM_X86_RBX, 16);
  gum_x86_writer_put_mov_reg_reg_ptr (w, GUM_X86_RBX, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RBX, GUM_X86_RAX);
  gum_x86_writer_put_bytes (w, mark, sizeof (mark));
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RBX, GUM_X86_RBX, 16);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RAX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RAX, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
}

/* The mnemonic without its prefixes ("lock cmpxchg", "rep movsq", "notrack call", "bnd ret"). */
static const char * base_mnemonic (const cs_insn * insn)
{
  const char * m = insn->mnemonic;
  for (const char * c = m; *c != '\0'; c++)
    if (*c == ' ')
      m = c + 1;
  return m;
}

static gboolean is_string (const char * m)
{
  return g_str_has_prefix (m, "movs") || g_str_has_prefix (m, "stos") || g_str_has_prefix (m, "lods") ||
      g_str_has_prefix (m, "cmps") || g_str_has_prefix (m, "scas");
}

/* A string instruction with a rep/repe/repne prefix ("rep ret" is no string instruction). */
static gboolean is_repeated_string (const cs_insn * insn)
{
  const cs_x86 * x = &insn->detail->x86;
  return (x->prefix[0] == X86_PREFIX_REP || x->prefix[0] == X86_PREFIX_REPNE) && is_string (base_mnemonic (insn));
}

static gboolean touches_no_memory (const cs_insn * insn)
{
  const char * m = base_mnemonic (insn);
  return insn->id == X86_INS_LEA || g_str_has_prefix (m, "nop") || g_str_has_prefix (m, "prefetch") ||
      g_str_has_prefix (m, "clflush") || g_str_has_prefix (m, "clwb") || g_str_has_prefix (m, "endbr") ||
      g_str_has_prefix (m, "cldemote");
}

/* Instructions whose first operand, when it is memory, is written, though Capstone reports
 * some of them as reads (AVX-512 stores such as vmovdqu64 [rdi], zmm16, x87 stores, extracts,
 * stmxcsr, compress): moves, stores and extracts. */
static gboolean stores_first_operand (const char * m)
{
  static const char * const stores[] = { "mov", "vmov", "vmaskmov", "vpmaskmov", "stos", "fst", "fist", "fbstp", "fnst",
      "pextr", "vpextr", "extractps", "vextract", "vcvtps2ph", "vpmov", "stmxcsr", "vstmxcsr", "vcompress", "vpcompress",
      "vscatter", "vpscatter", NULL };
  for (const char * const * p = stores; *p != NULL; p++)
    if (g_str_has_prefix (m, *p))
      return TRUE;
  return FALSE;
}

/* Which way an explicit operand is accessed. x86 writes memory only through an instruction's
 * first operand (xchg through either), so Capstone's read-write for a masked broadcast's source
 * is a read; a store's destination is written whatever Capstone says; cmpxchg always writes its
 * destination (back), though Capstone reports it as read only. */
static guint access_of (const char * m, int i, const cs_x86_op * op)
{
  guint access = op->access ? op->access : CS_AC_READ;
  if (g_str_equal (m, "xchg"))
    return CS_AC_READ | CS_AC_WRITE;
  if (i > 0)
    return CS_AC_READ;
  if (g_str_has_prefix (m, "cmpxchg"))
    return CS_AC_READ | CS_AC_WRITE;
  if (stores_first_operand (m))
    return CS_AC_WRITE;
  return access;
}

/* Save areas whose size Capstone does not give: fxsave's 512 bytes, xsave's (tr_xsave_bytes),
 * fsave's 108; 0 for any other instruction. */
static guint32 save_area_size (const char * m)
{
  if (g_str_has_prefix (m, "fxsave") || g_str_has_prefix (m, "fxrstor"))
    return 512;
  if (g_str_has_prefix (m, "xsave") || g_str_has_prefix (m, "xrstor"))
    return (guint32) tr_xsave_bytes;
  if (g_str_equal (m, "fnsave") || g_str_equal (m, "fsave") || g_str_equal (m, "frstor"))
    return 108;
  return 0;
}

static void add_access (Access * list, guint * n, x86_reg base, gint64 disp, guint32 size, guint32 write)
{
  Access * a = &list[(*n)++];
  a->xlat = FALSE;
  a->mem.segment = X86_REG_INVALID;
  a->mem.base = base;
  a->mem.index = X86_REG_INVALID;
  a->mem.scale = 1;
  a->mem.disp = disp;
  a->size = size;
  a->write = write;
}

/* The memory operands the instruction names. pop's destination address is computed after the
 * stack pointer moved. */
static void explicit_accesses (const cs_insn * insn, const char * m, guint32 slot, Access * list, guint * n)
{
  const cs_x86 * x = &insn->detail->x86;
  for (int i = 0; i < x->op_count && *n < MAX_ACCESSES - 2; i++)
  {
    const cs_x86_op * op = &x->operands[i];
    if (op->type != X86_OP_MEM || op->size == 0 || !is_analysable (&op->mem))
      continue;
    guint access = g_str_equal (m, "frstor") ? CS_AC_READ : access_of (m, i, op), size = save_area_size (m);
    gint64 disp = op->mem.disp + (g_str_equal (m, "pop") && op->mem.base == X86_REG_RSP ? slot : 0);
    for (guint32 write = 0; write <= ACCESS_WRITE; write += ACCESS_WRITE)
      if (access & (write ? CS_AC_WRITE : CS_AC_READ))
      {
        add_access (list, n, op->mem.base, disp, size ? size : op->size, write);
        list[*n - 1].mem.index = op->mem.index;
        list[*n - 1].mem.scale = op->mem.scale;
      }
  }
}

/* The memory the instruction accesses without naming it: the stack slots of push, pop, call,
 * ret, enter and leave, xlat's table byte. slot: push's and pop's operand size (8, or 2 with an
 * operand-size prefix). */
static void implicit_accesses (const cs_insn * insn, const char * m, guint32 slot, Access * list, guint * n)
{
  const cs_x86 * x = &insn->detail->x86;
  if (g_str_equal (m, "push") || g_str_has_prefix (m, "pushf"))
    add_access (list, n, X86_REG_RSP, -(gint64) slot, slot, ACCESS_WRITE);
  else if (g_str_equal (m, "pop") || g_str_has_prefix (m, "popf"))
    add_access (list, n, X86_REG_RSP, 0, slot, 0);
  else if (g_str_equal (m, "call"))
    add_access (list, n, X86_REG_RSP, -8, 8, ACCESS_WRITE);
  else if (g_str_equal (m, "ret"))
    add_access (list, n, X86_REG_RSP, 0, 8, 0);
  else if (g_str_equal (m, "leave"))
    add_access (list, n, X86_REG_RBP, 0, 8, 0);
  else if (g_str_equal (m, "xlatb"))
  {
    add_access (list, n, X86_REG_RBX, 0, 1, 0);
    list[*n - 1].xlat = TRUE;
  }
  else if (g_str_equal (m, "enter") && x->op_count == 2)
  {
    /* Level L: push rbp, then (L > 0) L - 1 frame pointers copied from [rbp - 8], [rbp - 16], ...
     * and the new frame pointer. */
    guint32 level = (guint32) x->operands[1].imm & 31;
    if (level > 1)
      add_access (list, n, X86_REG_RBP, -8 * (gint64) (level - 1), 8 * (level - 1), 0);
    guint32 pushed = level ? 8 * (level + 1) : 8;
    add_access (list, n, X86_REG_RSP, -(gint64) pushed, pushed, ACCESS_WRITE);
  }
}

/* A repeated string instruction's range is known after it ran (repe/repne stop early): rdi and
 * rsi are saved before it, and put_string_record records from where each went. */
static void put_string_start (GumX86Writer * w)
{
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_offset_ptr_reg (w, GUM_X86_RBX, STRING_START, GUM_X86_RDI);
  gum_x86_writer_put_mov_reg_offset_ptr_reg (w, GUM_X86_RBX, STRING_START + 8, GUM_X86_RSI);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
}

/* The elements a repeated string instruction went through with register reg (rdi or rsi):
 * upwards [start, reg), or downwards when the direction flag is set, [reg, start) shifted by
 * one element. */
static void put_string_record (GumX86Writer * w, x86_reg reg, guint element, guint32 flags)
{
  static const guint8 test_direction[] = { 0xf6, 0x44, 0x24, 0x19, 0x04 };   /* test byte [rsp+25], 4: DF */
  static const guint8 swap[] = { 0x48, 0x92 };                                /* xchg rax, rdx */
  gboolean destination = reg == X86_REG_RDI;
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_pushfx (w);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RDX);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_reg_offset_ptr (w, GUM_X86_RAX, GUM_X86_RBX, STRING_START + (destination ? 0 : 8));
  gum_x86_writer_put_mov_reg_reg (w, GUM_X86_RDX, destination ? GUM_X86_RDI : GUM_X86_RSI);
  gum_x86_writer_put_bytes (w, test_direction, sizeof (test_direction));
  gconstpointer upwards = gum_x86_writer_cur (w);
  gum_x86_writer_put_jcc_short_label (w, X86_INS_JE, upwards, GUM_NO_HINT);
  gum_x86_writer_put_bytes (w, swap, sizeof (swap));
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RAX, GUM_X86_RAX, element);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RDX, GUM_X86_RDX, element);
  gum_x86_writer_put_label (w, upwards);
  gum_x86_writer_put_sub_reg_reg (w, GUM_X86_RDX, GUM_X86_RAX);
  put_lea (w, 2 /* rdx */, 2 /* rdx */, -1, 1, (gint32) flags);
  gum_x86_writer_put_mov_reg_reg_ptr (w, GUM_X86_RBX, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RBX, GUM_X86_RAX);
  gum_x86_writer_put_mov_reg_offset_ptr_reg (w, GUM_X86_RBX, 8, GUM_X86_RDX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RBX, GUM_X86_RBX, 16);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RAX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RAX, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RDX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_popfx (w);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
}

/* After a repeated string instruction: its reads, then its writes. Returns the records added. */
static guint put_string_records (GumX86Writer * w, const cs_insn * insn, guint32 origin)
{
  const cs_x86 * x = &insn->detail->x86;
  const char * m = base_mnemonic (insn);
  guint records = 0;
  for (guint kind = CS_AC_READ; kind <= CS_AC_WRITE; kind <<= 1)
    for (int i = 0; i < x->op_count; i++)
    {
      const cs_x86_op * op = &x->operands[i];
      if (op->type != X86_OP_MEM || !is_analysable (&op->mem) || !(access_of (m, i, op) & kind) ||
          (op->mem.base != X86_REG_RDI && op->mem.base != X86_REG_RSI))
        continue;
      put_string_record (w, op->mem.base, op->size, origin | (kind == CS_AC_WRITE ? ACCESS_WRITE : 0));
      records++;
    }
  return records;
}

/* ---- accesses element by element: gathers, scatters and masked moves ----
 * Which elements such an instruction accesses is known only when it runs: a mask (an AVX-512 k
 * register, or the sign bits of a vector register's elements, or of its bytes for maskmovdqu)
 * selects them, and for a gather or scatter a vector of indices places each one. The inline
 * code reads the mask into rcx and spills the indices below the stack pointer, then appends one
 * record per selected element. */

enum { MASK_NONE, MASK_K, MASK_K_PREFIX, MASK_SIGNS_4, MASK_SIGNS_8, MASK_SIGN_BYTES };

typedef struct
{
  x86_op_mem mem;
  guint32 write;
  guint element, count;     /* element size, number of elements */
  int mask, mask_register;  /* MASK_*, and the k or vector register number */
  int index_register;       /* gathers and scatters: the vector register of the indices, else -1 */
  guint index_size, index_bytes;   /* 4 or 8; the index register's width */
} ElementAccess;

#define ELEMENT_SPILL 64

static int vector_number (x86_reg r, guint * bytes)
{
  if (r >= X86_REG_XMM0 && r <= X86_REG_XMM31) { *bytes = 16; return r - X86_REG_XMM0; }
  if (r >= X86_REG_YMM0 && r <= X86_REG_YMM31) { *bytes = 32; return r - X86_REG_YMM0; }
  if (r >= X86_REG_ZMM0 && r <= X86_REG_ZMM31) { *bytes = 64; return r - X86_REG_ZMM0; }
  return -1;
}

/* The element size a masked move names: vmovdqu8/16/32/64, vmovdqa32/64, vmov[ua]ps/pd, vmovss/sd. */
static guint move_element (const char * m)
{
  if (g_str_has_suffix (m, "64") || g_str_has_suffix (m, "pd") || g_str_has_suffix (m, "sd")) return 8;
  if (g_str_has_suffix (m, "32") || g_str_has_suffix (m, "ps") || g_str_has_suffix (m, "ss")) return 4;
  if (g_str_has_suffix (m, "16")) return 2;
  if (g_str_has_suffix (m, "8")) return 1;
  return 0;
}

/* The element size of a packed integer or floating-point mnemonic: ...b, w, d, q, ps, pd. */
static guint packed_element (const char * m)
{
  if (g_str_has_suffix (m, "pd") || g_str_has_suffix (m, "q")) return 8;
  if (g_str_has_suffix (m, "ps") || g_str_has_suffix (m, "d")) return 4;
  return g_str_has_suffix (m, "w") ? 2 : 1;
}

/* Whether the instruction accesses memory element by element, and how (into e). */
static gboolean element_access (const cs_insn * insn, const char * m, ElementAccess * e)
{
  const cs_x86 * x = &insn->detail->x86;
  const cs_x86_op * mem = NULL;
  int k = -1, vectors[4], vector_count = 0;
  guint vector_bytes[4];
  for (int i = 0; i < x->op_count; i++)
  {
    const cs_x86_op * op = &x->operands[i];
    if (op->type == X86_OP_MEM)
      mem = op;
    else if (op->type == X86_OP_REG && op->reg >= X86_REG_K1 && op->reg <= X86_REG_K7)
      k = op->reg - X86_REG_K0;
    else if (op->type == X86_OP_REG && vector_count < 4 && (vectors[vector_count] = vector_number (op->reg, &vector_bytes[vector_count])) >= 0)
      vector_count++;
  }
  e->index_register = -1;
  e->mask = k >= 0 ? MASK_K : MASK_NONE;
  e->mask_register = k;
  if (g_str_equal (m, "maskmovdqu") || g_str_equal (m, "vmaskmovdqu"))
  {
    if (vector_count != 2) return FALSE;
    e->mem.segment = X86_REG_INVALID; e->mem.base = X86_REG_RDI; e->mem.index = X86_REG_INVALID; e->mem.scale = 1;
    e->mem.disp = 0;
    e->write = ACCESS_WRITE; e->element = 1; e->count = 16;
    e->mask = MASK_SIGN_BYTES; e->mask_register = vectors[1];
    return TRUE;
  }
  if (mem == NULL || mem->mem.segment != X86_REG_INVALID ||
      (mem->mem.base != X86_REG_INVALID && mem->mem.base != X86_REG_RIP && register_number (mem->mem.base) < 0))
    return FALSE;
  e->mem = mem->mem;
  gboolean gather = g_str_has_prefix (m, "vgather") || g_str_has_prefix (m, "vpgather");
  gboolean scatter = g_str_has_prefix (m, "vscatter") || g_str_has_prefix (m, "vpscatter");
  if (gather || scatter)
  {
    /* v[p]gather/v[p]scatter + d|q (index size) + ps|pd|d|q (element size). */
    const char * kind = m + (m[1] == 'p' ? 8 : 7) + (scatter ? 1 : 0);
    guint index_bytes;
    int index = vector_number (mem->mem.index, &index_bytes);
    if (index < 0 || kind[0] == '\0' || kind[1] == '\0') return FALSE;
    e->index_register = index; e->index_bytes = index_bytes;
    e->index_size = kind[0] == 'q' ? 8 : 4;
    e->element = kind[1] == 'q' || g_str_equal (kind + 1, "pd") ? 8 : 4;
    e->count = MIN (index_bytes / e->index_size, mem->size / e->element);
    e->write = scatter ? ACCESS_WRITE : 0;
    e->mem.index = X86_REG_INVALID;
    if (k < 0)   /* AVX2: the mask is the last vector operand, one sign bit per element */
    {
      if (vector_count != 2) return FALSE;
      e->mask = e->element == 8 ? MASK_SIGNS_8 : MASK_SIGNS_4; e->mask_register = vectors[1];
    }
    return TRUE;
  }
  if (!is_analysable (&mem->mem))
    return FALSE;
  if (g_str_has_prefix (m, "vmaskmov") || g_str_has_prefix (m, "vpmaskmov"))
  {
    if (vector_count != 2) return FALSE;
    e->element = packed_element (m);
    e->count = mem->size / e->element;
    e->write = mem == &x->operands[0] ? ACCESS_WRITE : 0;
    e->mask = e->element == 8 ? MASK_SIGNS_8 : MASK_SIGNS_4;
    e->mask_register = mem == &x->operands[0] ? vectors[0] : vectors[1];
    return TRUE;
  }
  gboolean compress = g_str_has_prefix (m, "vcompress") || g_str_has_prefix (m, "vpcompress");
  if (k >= 0 && (compress || g_str_has_prefix (m, "vexpand") || g_str_has_prefix (m, "vpexpand")))
  {
    /* The first popcount(mask) elements, contiguous: stored by compress, loaded by expand. */
    e->element = packed_element (m);
    e->count = mem->size / e->element;
    e->write = compress ? ACCESS_WRITE : 0;
    e->mask = MASK_K_PREFIX;
    return e->count > 0 && e->count <= 64;
  }
  if (k < 0 || !g_str_has_prefix (m, "vmov") || (e->element = move_element (m)) == 0)
    return FALSE;
  e->count = mem->size / e->element;
  e->write = mem == &x->operands[0] ? ACCESS_WRITE : 0;
  return e->count > 0 && e->count <= 64;
}

/* rcx = the mask's bits, one per element (fewer than 64 elements: the others cleared). */
static void put_mask (GumX86Writer * w, const ElementAccess * e)
{
  int r = e->mask_register;
  if (e->mask == MASK_K)
  {
    /* kmovw ecx, k (AVX-512F) up to 16 elements, else kmovq rcx, k (AVX-512BW). */
    const guint8 kmovw[] = { 0xc5, 0xf8, 0x93, (guint8) (0xc8 | r) };
    const guint8 kmovq[] = { 0xc4, 0xe1, 0xfb, 0x93, (guint8) (0xc8 | r) };
    if (e->count <= 16) gum_x86_writer_put_bytes (w, kmovw, sizeof (kmovw));
    else gum_x86_writer_put_bytes (w, kmovq, sizeof (kmovq));
  }
  else if (e->mask == MASK_K_PREFIX)
  {
    /* kmovq rcx, k; popcnt rcx, rcx; mov rax, -1; bzhi rcx, rax, rcx: the lowest popcount bits. */
    const guint8 prefix[] = { 0xc4, 0xe1, 0xfb, 0x93, (guint8) (0xc8 | r), 0xf3, 0x48, 0x0f, 0xb8, 0xc9,
                              0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff, 0xc4, 0xe2, 0xf0, 0xf5, 0xc8 };
    gum_x86_writer_put_bytes (w, prefix, sizeof (prefix));
  }
  else if (e->mask == MASK_SIGN_BYTES)
  {
    const guint8 pmovmskb[] = { 0x66, (guint8) (r >= 8 ? 0x41 : 0x40), 0x0f, 0xd7, (guint8) (0xc8 | (r & 7)) };
    gum_x86_writer_put_bytes (w, pmovmskb, sizeof (pmovmskb));
  }
  else
  {
    /* vmovmskps/vmovmskpd ecx, xmm/ymm: the mask vector is as wide as the elements' vector. */
    guint8 wide = e->count * e->element == 32 ? 0x04 : 0, pd = e->mask == MASK_SIGNS_8 ? 0x01 : 0;
    const guint8 movmsk[] = { 0xc4, (guint8) (0xc1 | (r < 8 ? 0x20 : 0) | 0xc0), (guint8) (0x78 | wide | pd), 0x50,
                              (guint8) (0xc8 | (r & 7)) };
    gum_x86_writer_put_bytes (w, movmsk, sizeof (movmsk));
  }
  if (e->count < 32)
  {
    guint32 bits = (1u << e->count) - 1;
    const guint8 keep[] = { 0x81, 0xe1 };   /* and ecx, bits */
    gum_x86_writer_put_bytes (w, keep, sizeof (keep));
    gum_x86_writer_put_bytes (w, (const guint8 *) &bits, sizeof (bits));
  }
}

/* The index vector to [rsp]: vmovdqu (VEX) for xmm0-15/ymm0-15, vmovdqu64 (EVEX) otherwise. */
static void put_index_spill (GumX86Writer * w, const ElementAccess * e)
{
  int r = e->index_register;
  if (e->index_bytes < 64 && r < 16)
  {
    const guint8 vmovdqu[] = { 0xc4, (guint8) (0x61 | (r < 8 ? 0x80 : 0)), (guint8) (e->index_bytes == 32 ? 0x7e : 0x7a),
                               0x7f, (guint8) (0x04 | (r & 7) << 3), 0x24 };
    gum_x86_writer_put_bytes (w, vmovdqu, sizeof (vmovdqu));
  }
  else
  {
    const guint8 vmovdqu64[] = { 0x62, (guint8) ((r & 8 ? 0 : 0x80) | 0x61 | (r & 16 ? 0 : 0x10)), 0xfe, 0x48,
                                 0x7f, (guint8) (0x04 | (r & 7) << 3), 0x24 };
    gum_x86_writer_put_bytes (w, vmovdqu64, sizeof (vmovdqu64));
  }
}

/* One record per selected element: rdx is the base address, rcx the mask. */
static void put_element_records (GumX86Writer * w, const cs_insn * insn, const ElementAccess * e, guint32 flags)
{
  static const guint8 test_mask[] = { 0x48, 0x85, 0xc9 };                 /* test rcx, rcx */
  static const guint8 lowest[] = { 0x48, 0x0f, 0xbc, 0xc1,                /* bsf rax, rcx */
                                   0x48, 0x8d, 0x59, 0xff,                /* lea rbx, [rcx-1] */
                                   0x48, 0x21, 0xd9 };                    /* and rcx, rbx */
  static const guint8 index_dword[] = { 0x48, 0x63, 0x04, 0x84 };         /* movsxd rax, dword [rsp+rax*4] */
  static const guint8 index_qword[] = { 0x48, 0x8b, 0x04, 0xc4 };         /* mov rax, [rsp+rax*8] */
  Access base = { e->mem, 0, 0, FALSE };
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_pushfx (w);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RCX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RDX);
  base.mem.disp += base.mem.base == X86_REG_RSP ? 5 * 8 - 16 : 0;   /* put_address allows for 2 pushes, not 5 */
  put_address (w, insn, &base, 0 /* rax */);
  gum_x86_writer_put_mov_reg_reg (w, GUM_X86_RDX, GUM_X86_RAX);
  put_mask (w, e);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -ELEMENT_SPILL);
  if (e->index_register >= 0)
    put_index_spill (w, e);
  gconstpointer loop = gum_x86_writer_cur (w), done = (const guint8 *) loop + 1;
  gum_x86_writer_put_label (w, loop);
  gum_x86_writer_put_bytes (w, test_mask, sizeof (test_mask));
  gum_x86_writer_put_jcc_near_label (w, X86_INS_JE, done, GUM_NO_HINT);
  gum_x86_writer_put_bytes (w, lowest, sizeof (lowest));
  if (e->index_register >= 0)
  {
    gum_x86_writer_put_bytes (w, e->index_size == 8 ? index_qword : index_dword, 4);
    put_lea (w, 0 /* rax */, 2 /* rdx */, 0 /* rax */, e->mem.scale, 0);
  }
  else
    put_lea (w, 0 /* rax */, 2 /* rdx */, 0 /* rax */, (int) e->element, 0);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_reg_ptr (w, GUM_X86_RBX, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RBX, GUM_X86_RAX);
  gum_x86_writer_put_mov_reg_u32 (w, GUM_X86_EAX, flags | e->element);
  gum_x86_writer_put_mov_reg_offset_ptr_reg (w, GUM_X86_RBX, 8, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RBX, GUM_X86_RBX, 16);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RAX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RAX, GUM_X86_RBX);
  gum_x86_writer_put_jmp_near_label (w, loop);
  gum_x86_writer_put_label (w, done);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, ELEMENT_SPILL);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RDX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RCX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_popfx (w);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
}

/* Runs of stack slots: a function's prologue pushes several registers, its epilogue pops them
 * and returns (or leaves and returns), one instruction after another. The first of a run
 * records the slots of them all, the others nothing (*covered counts them down): fewer records,
 * the same bytes. Only plain encodings are looked at, in the code that follows the instruction;
 * a block that begins inside a run records its own part again, which changes nothing. */
#define MAX_RUN 16

/* The size of the plain push (of a register or an immediate) or pop (of a register other than
 * rsp) encoded at code, 0 if it is none. */
static guint plain_stack_op (const guint8 * code, gboolean push)
{
  guint rex = code[0] == 0x41;
  if (push && !rex && (code[0] == 0x6a || code[0] == 0x68))
    return code[0] == 0x6a ? 2 : 5;
  guint8 first = push ? 0x50 : 0x58;
  if (code[rex] < first || code[rex] >= first + 8 || (!push && !rex && code[0] == 0x5c))
    return 0;
  return 1 + rex;
}

/* The instructions after insn that its stack record also covers, and their slots in *bytes. */
static guint stack_run (const cs_insn * insn, const char * m, guint32 * bytes)
{
  const guint8 * next = (const guint8 *) GSIZE_TO_POINTER (insn->address + insn->size);
  const cs_x86 * x = &insn->detail->x86;
  gboolean push = g_str_equal (m, "push"), pop = g_str_equal (m, "pop");
  guint more = 0, size;
  if (!push && !pop && !g_str_equal (m, "leave"))
    return 0;
  if (x->prefix[2] == 0x66 || (x->op_count == 1 && (x->operands[0].type == X86_OP_MEM ||
      (pop && x->operands[0].type == X86_OP_REG && x->operands[0].reg == X86_REG_RSP))))
    return 0;
  while ((push || pop) && more < MAX_RUN && (size = plain_stack_op (next, push)) != 0)
  {
    more++;
    next += size;
  }
  if (!push && next[0] == 0xc3)   /* ret */
    more++;
  *bytes = 8 * (more + 1);
  return more;
}

/* A time record before the block's first access (patterns): 1 if it was put, else 0. */
static guint put_time_once (GumX86Writer * w, gboolean * untimed)
{
  if (!*untimed)
    return 0;
  put_time_record (w);
  *untimed = FALSE;
  return 1;
}

/* Returns the number of records the instruction appends before it runs; origin is 0 or
 * ACCESS_PROGRAM. Reads come first: an instruction reads its operands before it writes, which
 * matters when they overlap (push [rsp]). A repeated string instruction appends its records
 * after it ran (put_string_records). *untimed: the block still needs its time record
 * (patterns). *covered: the stack records of this many instructions were put already
 * (stack_run). *saved: rax and rbx are saved (put_save) as the block's prologue left them;
 * restored on return. */
static guint put_accesses (GumX86Writer * w, const cs_insn * insn, guint32 origin, gboolean * untimed, guint * covered,
                           gboolean * saved)
{
  const char * m = base_mnemonic (insn);
  Access list[MAX_ACCESSES];
  guint n = 0, records = 0;
  if (touches_no_memory (insn))
  {
    put_registers (w, saved, FALSE);
    return 0;
  }
  guint32 slot = insn->detail->x86.prefix[2] == 0x66 ? 2 : 8, run_bytes = 0;
  ElementAccess element;
  if (element_access (insn, m, &element))
  {
    put_registers (w, saved, FALSE);
    records = put_time_once (w, untimed);
    put_element_records (w, insn, &element, origin | element.write);
    return records + element.count;
  }
  if (is_repeated_string (insn))
  {
    put_registers (w, saved, FALSE);
    records = put_time_once (w, untimed);
    put_string_start (w);
    return records;
  }
  explicit_accesses (insn, m, slot, list, &n);
  if (*covered > 0)
    (*covered)--;
  else
  {
    guint before = n;
    *covered = stack_run (insn, m, &run_bytes);
    implicit_accesses (insn, m, slot, list, &n);
    if (*covered > 0 && n == before + 1)   /* one slot: widened to the run's */
    {
      if (list[before].write)
        list[before].mem.disp = -(gint64) run_bytes;
      list[before].size = run_bytes;
    }
  }
  if (n > 0 && *untimed)
  {
    put_registers (w, saved, FALSE);
    records = put_time_once (w, untimed);
  }
  gboolean fresh = !*saved;
  for (guint32 write = 0; write <= ACCESS_WRITE; write += ACCESS_WRITE)
    for (guint i = 0; i < n; i++)
      if (list[i].write == write)
      {
        put_registers (w, saved, TRUE);
        put_record (w, insn, &list[i], origin | write, fresh);
        fresh = FALSE;
        records++;
      }
  put_registers (w, saved, FALSE);
  return records;
}

/* Block prologue, leaving rax and rbx saved (put_save); returns where the instruction count
 * must be patched in. The flags are kept in ax meanwhile (lahf/seto, then add/sahf in
 * put_flags_back), far cheaper than pushf/popf. The buffer's limit is compared by its low 32
 * bits: the buffer never crosses a 4 GiB boundary (shadow.c's tr_init). */
static guint8 * put_prologue (GumStalkerIterator * it, GumX86Writer * w, gboolean count)
{
  static const guint8 save_flags[] = { 0x9f, 0x0f, 0x90, 0xc0 };          /* lahf; seto al */
  static const guint8 restore_flags[] = { 0x04, 0x7f, 0x9e };             /* add al,0x7f; sahf */
  guint8 add_count[8] = { 0x48, 0x81, 0x43, 0x10 };                       /* add qword [rbx+16], imm32 */
  guint8 compare[6] = { 0x81, 0x3b };                                     /* cmp dword [rbx], imm32 */
  guint8 * patch = NULL;
  put_save (w);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_bytes (w, save_flags, sizeof (save_flags));
  if (count)
  {
    patch = (guint8 *) gum_x86_writer_cur (w) + 4;
    gum_x86_writer_put_bytes (w, add_count, sizeof (add_count));
  }
  *(guint32 *) (compare + 2) = (guint32) GPOINTER_TO_SIZE (tr_state.limit);
  gum_x86_writer_put_bytes (w, compare, sizeof (compare));
  gconstpointer skip = gum_x86_writer_cur (w);
  gum_x86_writer_put_jcc_near_label (w, X86_INS_JB, skip, GUM_NO_HINT);
  gum_stalker_iterator_put_callout (it, tr_flush_callout, NULL, NULL);
  gum_x86_writer_put_label (w, skip);
  gum_x86_writer_put_bytes (w, restore_flags, sizeof (restore_flags));
  return patch;
}

static gboolean in_ranges (const guint64 * r, guint64 address)
{
  for (; r[0] != 0 || r[1] != 0; r += 2)
    if (address >= r[0] && address < r[1])
      return TRUE;
  return FALSE;
}

static guint marker_kind (guint64 address)
{
  for (guint k = 1; k <= 6; k++)
    if (tareador_markers[k] == address)
      return k;
  return 0;
}

/* The entry of tareador_functions ({entry address, name}) of the task function starting at
 * address, or NULL. */
static const guint64 * task_function (guint64 address)
{
  guint64 low = 0, high = tareador_functions[0];
  while (low < high)
  {
    guint64 mid = (low + high) / 2, entry = tareador_functions[1 + 2 * mid];
    if (entry == address)
      return &tareador_functions[1 + 2 * mid];
    if (entry < address)
      low = mid + 1;
    else
      high = mid;
  }
  return NULL;
}

/* Where a PLT stub (f@plt: endbr64, then jmp [rip+d], maybe bnd-prefixed) leads: its GOT slot
 * holds the library's entry, or the agent's stub noting the call (movabs r11, entry; jmp). 0 if
 * the code at stub is no such thing. */
static guint64 plt_target (guint64 stub)
{
  const guint8 * p = (const guint8 *) stub;
  if (!in_ranges (tareador_code_ranges, stub))
    return 0;
  if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && p[3] == 0xfa)
    p += 4;
  if (p[0] == 0xf2)
    p++;
  if (p[0] != 0xff || p[1] != 0x25)
    return 0;
  const guint8 * target = *(const guint8 * const *) (p + 6 + *(const gint32 *) (p + 2));
  return target[0] == 0x49 && target[1] == 0xbb ? *(const guint64 *) (target + 2) : (guint64) target;
}

/* A task function's call is also its task's body called with its arguments, for tareador hints
 * (shadow.c's tr_task_call), when a direct call (e8 rel32) to the function, or to its PLT stub,
 * made it: not when a tail call (jmp) or a pointer reached it. At the entry [rsp] is the return
 * address and the stack arguments follow it. A system library's function (outside the
 * program's code) is a task only where the program calls it, not inside the libraries; a tail
 * call from a task function's frame (its return address already the stub) counts. */
static void on_function_enter (GumCpuContext * cpu, gpointer function)
{
  const guint64 * f = function, * stack = (const guint64 *) cpu->rsp;
  const guint64 back = stack[0];  /* tr_function_enter puts the return stub in its place */
  const guint8 * call = (const guint8 *) (back - 5);
  if (!in_ranges (tareador_user_ranges, f[0]) && !in_ranges (tareador_user_ranges, back) && back != tr_return_stub)
    return;
  tr_function_enter ((const char *) f[1], cpu->rsp, cpu->rbp);
  if (in_ranges (tareador_code_ranges, back - 5) && call[0] == 0xe8
      && (back + (guint64) (gint64) *(const gint32 *) (call + 1) == f[0]
          || plt_target (back + (guint64) (gint64) *(const gint32 *) (call + 1)) == f[0]))
  {
    guint64 args[8] = { cpu->rdi, cpu->rsi, cpu->rdx, cpu->rcx, cpu->r8, cpu->r9, stack[1], stack[2] };
    tr_task_call (back - 5, args);
  }
}

static void on_function_return (GumCpuContext * cpu, gpointer data)
{
  tr_function_return (cpu->rsp);
}

static void on_marker (GumCpuContext * cpu, gpointer kind)
{
  tr_marker (GPOINTER_TO_UINT (kind), cpu->rdi, cpu->rsp, *(guint64 *) cpu->rsp, cpu->rbp);
}

/* The first direct call of a block that begins where a tareador_start_task returns: the task's
 * body, called with its arguments (shadow.c's tr_task_call). */
static void on_task_call (GumCpuContext * cpu, gpointer site)
{
  const guint64 * stack = (const guint64 *) cpu->rsp;
  guint64 args[8] = { cpu->rdi, cpu->rsi, cpu->rdx, cpu->rcx, cpu->r8, cpu->r9, stack[0], stack[1] };
  tr_task_call (GPOINTER_TO_SIZE (site), args);
}

static gboolean is_task_site (guint64 address)
{
  for (const guint64 * s = tr_task_sites; *s != 0; s++)
    if (*s == address)
      return TRUE;
  return FALSE;
}

void transform (GumStalkerIterator * it, GumStalkerOutput * output, gpointer user_data)
{
  GumX86Writer * w = output->writer.x86;
  const cs_insn * insn;
  gboolean first = TRUE, analyse = FALSE, task_site = FALSE, untimed = tareador_patterns[0] != 0, saved = FALSE;
  guint32 origin = 0;
  guint8 * count_patch = NULL;
  guint instructions = 0, unchecked = 0, covered = 0;

  while (gum_stalker_iterator_next (it, &insn))
  {
    if (first)
    {
      guint kind = marker_kind (insn->address);
      first = FALSE;
      const guint64 * function = kind == 0 ? task_function (insn->address) : NULL;
      if (kind != 0)
        gum_stalker_iterator_put_callout (it, on_marker, GUINT_TO_POINTER (kind), NULL);
      else if (function != NULL)
        gum_stalker_iterator_put_callout (it, on_function_enter, (gpointer) function, NULL);
      else if (insn->address == tr_return_stub)
        gum_stalker_iterator_put_callout (it, on_function_return, NULL, NULL);
      analyse = kind == 0 && in_ranges (tareador_code_ranges, insn->address);
      task_site = analyse && is_task_site (insn->address);
      origin = in_ranges (tareador_user_ranges, insn->address) ? ACCESS_PROGRAM : 0;
      if (analyse)
      {
        count_patch = put_prologue (it, w, TRUE);
        saved = TRUE;
        tareador_blocks[0]++;
      }
    }
    if (analyse)
    {
      instructions++;
      if (unchecked > CHECK_EVERY)
      {
        put_prologue (it, w, FALSE);
        saved = TRUE;
        unchecked = 0;
      }
      unchecked += put_accesses (w, insn, origin, &untimed, &covered, &saved);
      if (task_site && insn->id == X86_INS_CALL && insn->size == 5 && insn->bytes[0] == 0xe8)
      {
        gum_stalker_iterator_put_callout (it, on_task_call, GSIZE_TO_POINTER (insn->address), NULL);
        task_site = FALSE;
      }
    }
    tr_translated (w->pc, insn->address);
    gum_stalker_iterator_keep (it);
    if (analyse && is_repeated_string (insn))
      unchecked += put_string_records (w, insn, origin);
  }
  if (count_patch != NULL)
    *(guint32 *) count_patch = instructions;
}
