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

typedef struct { gpointer cursor; gpointer limit; guint64 instructions; } TracerStateHead;

extern TracerStateHead tr_state;
extern void tr_flush_callout (GumCpuContext * cpu, gpointer data);
extern void tr_marker (guint kind, guint64 argument, guint64 sp, guint64 return_address, guint64 rbp);
extern void tr_translated (guint64 translated, guint64 original);
extern void tr_function_enter (const char * name, guint64 sp, guint64 rbp);
extern void tr_function_return (guint64 sp);
extern guint64 tr_return_stub;
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

/* Computes the operand's address into rax, with rax and rbx pushed below the red zone. */
static void put_address (GumX86Writer * w, const cs_insn * insn, const x86_op_mem * m)
{
  if (m->base == X86_REG_RIP)
  {
    gum_x86_writer_put_mov_reg_address (w, GUM_X86_RAX, insn->address + insn->size + m->disp);
    return;
  }
  int base = m->base == X86_REG_INVALID ? -1 : register_number (m->base);
  int index = m->index == X86_REG_INVALID ? -1 : register_number (m->index);
  put_lea (w, 0 /* rax */, base, index, m->scale, (gint32) (m->disp + (base == 4 ? RED_ZONE + 16 : 0)));
}

static gboolean is_repeated_string (const cs_insn * insn)
{
  const cs_x86 * x = &insn->detail->x86;
  if (x->prefix[0] != X86_PREFIX_REP && x->prefix[0] != X86_PREFIX_REPNE)
    return FALSE;
  const char * m = insn->mnemonic;
  return g_str_has_prefix (m, "movs") || g_str_has_prefix (m, "stos") || g_str_has_prefix (m, "lods") ||
      g_str_has_prefix (m, "cmps") || g_str_has_prefix (m, "scas") || g_str_has_prefix (m, "rep");
}

/* A repeated string instruction covers rcx elements from its operand's register, upwards, or
 * downwards when the direction flag is set (then the range ends at the register's element). Its
 * start goes to rax, its byte count to rbx; the flags are kept with pushf/popf, cheap beside the
 * string instruction itself. */
static void put_string_range (GumX86Writer * w, guint element)
{
  static const guint8 test_direction[] = { 0xf6, 0x44, 0x24, 0x01, 0x04 };   /* test byte [rsp+1], 4: DF */
  gum_x86_writer_put_pushfx (w);
  put_lea (w, 3 /* rbx */, -1, 1 /* rcx */, element, 0);
  gum_x86_writer_put_bytes (w, test_direction, sizeof (test_direction));
  gconstpointer upwards = gum_x86_writer_cur (w);
  gum_x86_writer_put_jcc_short_label (w, X86_INS_JE, upwards, GUM_NO_HINT);
  gum_x86_writer_put_sub_reg_reg (w, GUM_X86_RAX, GUM_X86_RBX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RAX, GUM_X86_RAX, element);
  gum_x86_writer_put_label (w, upwards);
}

static void put_record (GumX86Writer * w, const cs_insn * insn, const cs_x86_op * op, guint32 flags,
    gboolean repeated)
{
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  put_address (w, insn, &op->mem);
  if (repeated)
  {
    put_string_range (w, op->size);
    gum_x86_writer_put_push_reg (w, GUM_X86_RDX);
    put_lea (w, 2 /* rdx */, 3 /* rbx */, -1, 1, (gint32) flags);
  }
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_reg_ptr (w, GUM_X86_RBX, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RBX, GUM_X86_RAX);
  if (repeated)
    gum_x86_writer_put_mov_reg_reg (w, GUM_X86_RAX, GUM_X86_RDX);
  else
    gum_x86_writer_put_mov_reg_u32 (w, GUM_X86_EAX, flags | op->size);
  gum_x86_writer_put_mov_reg_offset_ptr_reg (w, GUM_X86_RBX, 8, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RBX, GUM_X86_RBX, 16);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RAX, GUM_ADDRESS (&tr_state));
  gum_x86_writer_put_mov_reg_ptr_reg (w, GUM_X86_RAX, GUM_X86_RBX);
  if (repeated)
  {
    gum_x86_writer_put_pop_reg (w, GUM_X86_RDX);
    gum_x86_writer_put_popfx (w);
  }
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
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

static gboolean touches_no_memory (const cs_insn * insn)
{
  const char * m = insn->mnemonic;
  return insn->id == X86_INS_LEA || g_str_has_prefix (m, "nop") || g_str_has_prefix (m, "prefetch") ||
      g_str_has_prefix (m, "clflush") || g_str_has_prefix (m, "clwb") || g_str_has_prefix (m, "endbr") ||
      g_str_has_prefix (m, "fxsave") || g_str_has_prefix (m, "fxrstor") || g_str_has_prefix (m, "xsave") ||
      g_str_has_prefix (m, "xrstor");
}

/* Capstone reports some AVX-512 stores (vmovdqu64 [rdi], zmm16) as reads: for moves the
 * destination is operand 0, so trust the operand position, not the access flags. */
static guint access_of (const cs_insn * insn, int i, const cs_x86_op * op)
{
  const char * m = insn->mnemonic;
  if (g_str_has_prefix (m, "mov") || g_str_has_prefix (m, "vmov"))
    return i == 0 ? CS_AC_WRITE : CS_AC_READ;
  if (g_str_has_prefix (m, "stos"))
    return CS_AC_WRITE;
  return op->access ? op->access : CS_AC_READ;
}

/* Returns the number of records the instruction appends; origin is 0 or ACCESS_PROGRAM. Reads
 * come first: an instruction reads its operands before it writes, which matters when they overlap
 * (memmove's rep movsb). *untimed: the block still needs its time record (patterns). */
static guint put_accesses (GumX86Writer * w, const cs_insn * insn, guint32 origin, gboolean * untimed)
{
  const cs_x86 * x = &insn->detail->x86;
  guint records = 0;
  if (touches_no_memory (insn))
    return 0;
  gboolean repeated = is_repeated_string (insn);
  for (guint kind = CS_AC_READ; kind <= CS_AC_WRITE; kind <<= 1)
    for (int i = 0; i < x->op_count; i++)
    {
      const cs_x86_op * op = &x->operands[i];
      if (op->type != X86_OP_MEM || op->size == 0 || !is_analysable (&op->mem) || !(access_of (insn, i, op) & kind))
        continue;
      if (*untimed)
      {
        put_time_record (w);
        *untimed = FALSE;
        records++;
      }
      put_record (w, insn, op, origin | (kind == CS_AC_WRITE ? ACCESS_WRITE : 0), repeated);
      records++;
    }
  return records;
}

/* Block prologue; returns where the instruction count must be patched in. */
static guint8 * put_prologue (GumStalkerIterator * it, GumX86Writer * w, gboolean count)
{
  static const guint8 save_flags[] = { 0x9f, 0x0f, 0x90, 0xc0 };          /* lahf; seto al */
  static const guint8 compare[] = { 0x51, 0x48, 0x8b, 0x0b, 0x48, 0x3b, 0x4b, 0x08, 0x59 };
                                                    /* push rcx; mov rcx,[rbx]; cmp rcx,[rbx+8]; pop rcx */
  static const guint8 restore_flags[] = { 0x04, 0x7f, 0x9e };             /* add al,0x7f; sahf */
  guint8 * patch = NULL;
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, -RED_ZONE);
  gum_x86_writer_put_push_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_push_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_mov_reg_address (w, GUM_X86_RBX, GUM_ADDRESS (&tr_state));
  if (count)
  {
    static const guint8 add_count[] = { 0x48, 0x8b, 0x43, 0x10, 0x48, 0x8d, 0x80, 0, 0, 0, 0, 0x48, 0x89, 0x43, 0x10 };
                                   /* mov rax,[rbx+16]; lea rax,[rax+N]; mov [rbx+16],rax */
    patch = (guint8 *) gum_x86_writer_cur (w) + 7;
    gum_x86_writer_put_bytes (w, add_count, sizeof (add_count));
  }
  gum_x86_writer_put_bytes (w, save_flags, sizeof (save_flags));
  gum_x86_writer_put_bytes (w, compare, sizeof (compare));
  gconstpointer skip = gum_x86_writer_cur (w);
  gum_x86_writer_put_jcc_near_label (w, X86_INS_JB, skip, GUM_NO_HINT);
  gum_stalker_iterator_put_callout (it, tr_flush_callout, NULL, NULL);
  gum_x86_writer_put_label (w, skip);
  gum_x86_writer_put_bytes (w, restore_flags, sizeof (restore_flags));
  gum_x86_writer_put_pop_reg (w, GUM_X86_RBX);
  gum_x86_writer_put_pop_reg (w, GUM_X86_RAX);
  gum_x86_writer_put_lea_reg_reg_offset (w, GUM_X86_RSP, GUM_X86_RSP, RED_ZONE);
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
  gboolean first = TRUE, analyse = FALSE, task_site = FALSE, untimed = tareador_patterns[0] != 0;
  guint32 origin = 0;
  guint8 * count_patch = NULL;
  guint instructions = 0, unchecked = 0;

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
        tareador_blocks[0]++;
      }
    }
    if (analyse)
    {
      instructions++;
      if (unchecked > CHECK_EVERY)
      {
        put_prologue (it, w, FALSE);
        unchecked = 0;
      }
      unchecked += put_accesses (w, insn, origin, &untimed);
      if (task_site && insn->id == X86_INS_CALL && insn->size == 5 && insn->bytes[0] == 0xe8)
      {
        gum_stalker_iterator_put_callout (it, on_task_call, GSIZE_TO_POINTER (insn->address), NULL);
        task_site = FALSE;
      }
    }
    tr_translated (w->pc, insn->address);
    gum_stalker_iterator_keep (it);
  }
  if (count_patch != NULL)
    *(guint32 *) count_patch = instructions;
}
