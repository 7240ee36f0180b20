//go:build cudaemu && !cuda

// The CPU emulation of the CUDA kernels for the cudaemu test build; see
// emu.h. gpnb_emu_lookup finds a kernel by name, gpnb_emu_check validates a
// launch as cuLaunchKernel would, gpnb_emu_run runs one.
// Separate roundings for a·b + c, as the GPU kernels compiled with
// -fmad=false (x86-64 without -mfma has no fused multiply-add anyway).
#pragma GCC optimize("fp-contract=off")
#include "emu.h"

#include <cstdlib>
#include <functional>
#include <string>
#include <ucontext.h>
#include <vector>

gpnb_dim3 threadIdx, blockIdx, blockDim, gridDim;
static const int smemBytes = 48 << 10;
alignas(16) unsigned char smem[smemBytes];

#include "kernels/gpnb.cu"

// Fibers: one per thread of the block being run. A context is a stack
// and the registers to resume it with; ctxStart prepares one to run entry
// on a stack, ctxSwitch saves the current one in from and resumes to.
namespace {
#if defined(__x86_64__) && defined(__linux__)
// On x86-64 Linux a switch saves the callee-saved registers on the stack it
// leaves and restores them from the one it resumes (gpnb_emu_switch).
// glibc's swapcontext also saves and restores the signal mask, a system
// call at every switch, which made the kernels' barriers several times
// slower to emulate.
extern "C" void gpnb_emu_switch(void **from, void *to);
asm(".text\n"
    ".globl gpnb_emu_switch\n"
    ".type gpnb_emu_switch,@function\n"
    "gpnb_emu_switch:\n"
    "\tpushq %rbp\n\tpushq %rbx\n\tpushq %r12\n\tpushq %r13\n\tpushq %r14\n\tpushq %r15\n"
    "\tmovq %rsp, (%rdi)\n"
    "\tmovq %rsi, %rsp\n"
    "\tpopq %r15\n\tpopq %r14\n\tpopq %r13\n\tpopq %r12\n\tpopq %rbx\n\tpopq %rbp\n"
    "\tret\n"
    ".size gpnb_emu_switch, .-gpnb_emu_switch\n");
struct context {
    void *sp;
};
void ctxStart(context &c, char *stack, size_t size, void (*entry)()) {
    void **sp = (void **)((uintptr_t)(stack + size) & ~(uintptr_t)15);
    *--sp = nullptr;       // entry's return address (it never returns): entry starts as if called
    *--sp = (void *)entry; // where the first switch to c returns to
    for (int i = 0; i < 6; i++)
        *--sp = nullptr; // rbp, rbx, r12..r15
    c.sp = sp;
}
void ctxSwitch(context &from, context &to) { gpnb_emu_switch(&from.sp, to.sp); }
#else
struct context {
    ucontext_t uc;
};
void ctxStart(context &c, char *stack, size_t size, void (*entry)()) {
    getcontext(&c.uc);
    c.uc.uc_stack.ss_sp = stack;
    c.uc.uc_stack.ss_size = size;
    c.uc.uc_link = nullptr;
    makecontext(&c.uc, entry, 0);
}
void ctxSwitch(context &from, context &to) { swapcontext(&from.uc, &to.uc); }
#endif

struct fiber {
    context ctx;
    char *stack;
    int state; // 0 runnable, 1 at a barrier, 2 returned
    unsigned tx, ty;
};
const size_t stackSize = 256 << 10;
std::vector<fiber> fibers;
context sched;
int cur;
std::function<void()> body;

void trampoline() {
    body();
    fibers[cur].state = 2;
    ctxSwitch(fibers[cur].ctx, sched); // never resumed
    abort();
}
} // namespace

void __syncthreads() {
    fibers[cur].state = 1;
    ctxSwitch(fibers[cur].ctx, sched);
}

// runBlock runs the bx×by threads of one block as fibers until all return.
static void runBlock(int bx, int by) {
    int nt = bx * by;
    while ((int)fibers.size() < nt) {
        fiber f{};
        f.stack = new char[stackSize];
        fibers.push_back(f);
    }
    for (int i = 0; i < nt; i++) {
        fiber &f = fibers[i];
        ctxStart(f.ctx, f.stack, stackSize, trampoline);
        f.state = 0;
        f.tx = i % bx;
        f.ty = i / bx;
    }
    int done = 0;
    while (done < nt) {
        for (int i = 0; i < nt; i++) {
            if (fibers[i].state != 0)
                continue;
            cur = i;
            threadIdx = {fibers[i].tx, fibers[i].ty, 0};
            ctxSwitch(sched, fibers[i].ctx);
            if (fibers[i].state == 2)
                done++;
        }
        // Every fiber is at the barrier or has returned: release them.
        for (int i = 0; i < nt; i++)
            if (fibers[i].state == 1)
                fibers[i].state = 0;
    }
}

typedef const uint64_t *A;
template <class T> static T *P(A a, int i) { return (T *)(uintptr_t)a[i]; }
static i64 I(A a, int i) { return (i64)a[i]; }
static double D(A a, int i) {
    double d;
    memcpy(&d, &a[i], 8);
    return d;
}

struct entry {
    std::string name;
    std::function<void(A)> fn;
    bool sync; // uses __syncthreads: run the block's threads as fibers
};

#define E(NAME, SYNC, CALL) entry{NAME, [](A a) { CALL; }, SYNC}
#define PREC(T, S)                                                                                                \
    E("gpnb_scale_" #S, false, gpnb_scale_##S(P<const double>(a, 0), I(a, 1), I(a, 2), P<const double>(a, 3),    \
                                              P<const double>(a, 4), P<T>(a, 5))),                                \
        E("gpnb_build_" #S, true, gpnb_build_##S(P<const T>(a, 0), I(a, 1), I(a, 2), I(a, 3), D(a, 4), P<T>(a, 5), \
                                                  I(a, 6))),                                                      \
        E("gpnb_block_" #S, false, gpnb_block_##S(P<const T>(a, 0), P<const T>(a, 1), I(a, 2), I(a, 3), I(a, 4),  \
                                                  D(a, 5), D(a, 6), P<const i64>(a, 7), I(a, 8), P<double>(a, 9)))
#define MULK_E(T, S, C)                                                                                           \
    E("gpnb_mulk_" #S "_c" #C, true,                                                                              \
      gpnb_mulk_##S##_c##C(P<const T>(a, 0), I(a, 1), P<const i64>(a, 2), I(a, 3), I(a, 4), P<const double>(a, 5), \
                           I(a, 6), P<const i64>(a, 7), I(a, 8), I(a, 9), P<double>(a, 10), I(a, 11)))
#define TRIMUL_E(C)                                                                                               \
    E("gpnb_trimul_c" #C, true,                                                                                   \
      gpnb_trimul_c##C(P<const double>(a, 0), I(a, 1), I(a, 2), I(a, 3), P<const double>(a, 4), I(a, 5),          \
                       P<const i64>(a, 6), I(a, 7), I(a, 8), P<double>(a, 9), I(a, 10)))
#define MULFREE_E(T, S, DD, C)                                                                                    \
    E("gpnb_mulfree_" #S "_d" #DD "_c" #C, true,                                                                  \
      gpnb_mulfree_##S##_d##DD##_c##C(P<const T>(a, 0), I(a, 1), P<const T>(a, 2), P<const i64>(a, 3), I(a, 4),   \
                                      I(a, 5), I(a, 6), D(a, 7), P<const double>(a, 8), I(a, 9),                  \
                                      P<const i64>(a, 10), I(a, 11), I(a, 12), P<double>(a, 13), I(a, 14),        \
                                      I(a, 15)))
#define MULROWS_E(T, S, C)                                                                                        \
    E("gpnb_mulrows_" #S "_c" #C, true,                                                                           \
      gpnb_mulrows_##S##_c##C(P<const T>(a, 0), I(a, 1), P<const i64>(a, 2), I(a, 3), I(a, 4),                    \
                              P<const double>(a, 5), I(a, 6), P<const i64>(a, 7), I(a, 8), I(a, 9),               \
                              P<double>(a, 10), I(a, 11))),                                                       \
        E("gpnb_mulrowsfree_" #S "_c" #C, true,                                                                   \
          gpnb_mulrowsfree_##S##_c##C(P<const T>(a, 0), I(a, 1), I(a, 2), D(a, 3), P<const i64>(a, 4), I(a, 5),   \
                                      I(a, 6), P<const double>(a, 7), I(a, 8), P<const i64>(a, 9), I(a, 10),      \
                                      I(a, 11), P<double>(a, 12), I(a, 13)))
#define REDUCE_E(T, S, DD)                                                                                        \
    E("gpnb_reduce_" #S "_d" #DD, true,                                                                           \
      gpnb_reduce_##S##_d##DD(P<const T>(a, 0), I(a, 1), I(a, 2), I(a, 3), P<const double>(a, 4),                 \
                              P<const double>(a, 5), I(a, 6), P<const double>(a, 7), P<double>(a, 8)))
#define MULK_C(C) MULK_E(double, f64, C), MULK_E(float, f32, C)
#define MULK_4(A, B, C, D) MULK_C(A), MULK_C(B), MULK_C(C), MULK_C(D), TRIMUL_E(D)
#define ROWS_C(T, S) MULROWS_E(T, S, 8), MULROWS_E(T, S, 16), MULROWS_E(T, S, 24), MULROWS_E(T, S, 32)
// DVAR: the kernels of one precision and register variant DD; PRECISION: all
// kernels of one precision, with the variants of kernels.go's dVariants
// (d ≤ 8, d ≤ 32, and 0 for the generic one).
#define DVAR(T, S, DD)                                                                                            \
    MULFREE_E(T, S, DD, 8), MULFREE_E(T, S, DD, 16), MULFREE_E(T, S, DD, 24), MULFREE_E(T, S, DD, 32),          \
        REDUCE_E(T, S, DD)
#define PRECISION(T, S) PREC(T, S), DVAR(T, S, 8), DVAR(T, S, 32), DVAR(T, S, 0), ROWS_C(T, S)

static const std::vector<entry> table = {
    PRECISION(double, f64),
    PRECISION(float, f32),
    MULK_4(1, 2, 3, 4),
    MULK_4(5, 6, 7, 8),
    MULK_4(9, 10, 11, 12),
    MULK_4(13, 14, 15, 16),
    MULK_4(17, 18, 19, 20),
    MULK_4(21, 22, 23, 24),
    MULK_4(25, 26, 27, 28),
    MULK_4(29, 30, 31, 32),
    E("gpnb_reduce_sum", true, gpnb_reduce_sum(P<const double>(a, 0), I(a, 1), I(a, 2), P<double>(a, 3))),
    E("gpnb_cgcoef", false,
      gpnb_cgcoef(P<const double>(a, 0), P<const double>(a, 1), I(a, 2), P<double>(a, 3), P<double>(a, 4))),
    E("gpnb_sumpart", false,
      gpnb_sumpart(P<const double>(a, 0), I(a, 1), I(a, 2), I(a, 3), P<double>(a, 4), I(a, 5), P<const i64>(a, 6),
                   I(a, 7), P<const double>(a, 8), I(a, 9), P<const i64>(a, 10), D(a, 11))),
    E("gpnb_vec", false,
      gpnb_vec(I(a, 0), P<double>(a, 1), P<const double>(a, 2), P<const i64>(a, 3), I(a, 4), I(a, 5),
               P<const i64>(a, 6), I(a, 7), P<const double>(a, 8), D(a, 9))),
    E("gpnb_dots_part", false,
      gpnb_dots_part(P<const double>(a, 0), P<const double>(a, 1), I(a, 2), P<const i64>(a, 3), I(a, 4), I(a, 5),
                     P<const i64>(a, 6), P<const i64>(a, 7), I(a, 8), I(a, 9), P<double>(a, 10))),
    E("gpnb_dots_final", false,
      gpnb_dots_final(P<const double>(a, 0), P<const i64>(a, 1), I(a, 2), I(a, 3), I(a, 4), P<double>(a, 5))),
    E("gpnb_mult", false,
      gpnb_mult(P<const double>(a, 0), I(a, 1), P<const double>(a, 2), I(a, 3), I(a, 4), P<const i64>(a, 5), I(a, 6),
                I(a, 7), P<double>(a, 8))),
    E("gpnb_muladd", false,
      gpnb_muladd(P<double>(a, 0), I(a, 1), I(a, 2), D(a, 3), P<const double>(a, 4), I(a, 5), P<const double>(a, 6),
                  P<const i64>(a, 7), I(a, 8))),
    E("gpnb_chol_init", false, gpnb_chol_init(P<const double>(a, 0), I(a, 1), P<double>(a, 2), P<i64>(a, 3))),
    E("gpnb_chol_diag", true, gpnb_chol_diag(P<double>(a, 0), I(a, 1), I(a, 2), P<i64>(a, 3))),
    E("gpnb_chol_panel", true, gpnb_chol_panel(P<double>(a, 0), I(a, 1), I(a, 2), P<i64>(a, 3))),
    E("gpnb_chol_update", true, gpnb_chol_update(P<double>(a, 0), I(a, 1), I(a, 2), P<i64>(a, 3))),
    E("gpnb_trinv_diag", true, gpnb_trinv_diag(P<const double>(a, 0), I(a, 1), P<double>(a, 2), P<i64>(a, 3))),
    E("gpnb_trinv_col", true,
      gpnb_trinv_col(P<const double>(a, 0), P<double>(a, 1), I(a, 2), I(a, 3), P<i64>(a, 4))),
    E("gpnb_trinv_mirror", false, gpnb_trinv_mirror(P<double>(a, 0), I(a, 1), P<i64>(a, 2))),
};

#define GPNB_STR2(x) #x
#define GPNB_STR(x) GPNB_STR2(x)
// gpnb_emu_source returns the sha256 of the gpnb.cu this was built from
// (the build flag GPNB_CU_SHA256, "sha256_<hex>").
extern "C" const char *gpnb_emu_source(void) { return GPNB_STR(GPNB_CU_SHA256); }

// gpnb_emu_lookup returns the index of kernel name, or −1.
extern "C" int gpnb_emu_lookup(const char *name) {
    for (size_t i = 0; i < table.size(); i++)
        if (table[i].name == name)
            return (int)i;
    return -1;
}

// gpnb_emu_check returns 0 for a launch a GPU would accept, 2 for more
// shared memory than a GPU gives without opt-in (48 KiB), 3 for a bad
// geometry.
extern "C" int gpnb_emu_check(int gx, int gy, int bx, int by, int shared) {
    if (shared > smemBytes)
        return 2;
    if (gx < 1 || gy < 1 || gy > 65535 || bx < 1 || by < 1 || bx * by > 1024)
        return 3;
    return 0;
}

// gpnb_emu_run runs kernel id on the grid, block after block.
extern "C" void gpnb_emu_run(int id, int gx, int gy, int bx, int by, const uint64_t *args) {
    const entry &e = table[id];
    blockDim = {(unsigned)bx, (unsigned)by, 1};
    gridDim = {(unsigned)gx, (unsigned)gy, 1};
    for (int y = 0; y < gy; y++)
        for (int x = 0; x < gx; x++) {
            // Poison shared memory so a read before a write shows up.
            memset(smem, 0xff, sizeof smem);
            blockIdx = {(unsigned)x, (unsigned)y, 0};
            if (!e.sync) {
                for (int ty = 0; ty < by; ty++)
                    for (int tx = 0; tx < bx; tx++) {
                        threadIdx = {(unsigned)tx, (unsigned)ty, 0};
                        e.fn(args);
                    }
                continue;
            }
            body = [&] { e.fn(args); };
            runBlock(bx, by);
        }
}
