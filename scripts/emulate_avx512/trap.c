/* trap.c - runs the AVX-512 code of a process on a CPU without AVX-512, by
 * handing it to an emulator.
 *
 * The first AVX-512 instruction a thread meets raises SIGILL.  The handler
 * gives the thread's registers (general, flags, instruction pointer, the
 * FS base for thread-local storage, MXCSR and the 16 ymm registers) to a
 * callback, which emulates from that instruction until the emulated code
 * returns to a caller outside the AVX-512 functions, and hands back the
 * registers at that point; the handler writes them into the signal frame,
 * and the thread goes on natively from there.  Memory is shared: the
 * emulator reads and writes the process's own pages.
 *
 * Between functions the x86-64 calling convention keeps nothing in the
 * vector registers but xmm0/xmm1's return values, so only the ymm halves
 * go back; the zmm upper halves and mask registers end with the call.
 *
 * The handler runs on an alternate signal stack (each thread that can meet
 * AVX-512 code needs one: trap_thread_init), since the emulated code uses
 * the stack below the interrupted stack pointer, where the kernel would
 * otherwise put the signal frame.  A SIGILL that the callback declines, or
 * one on a thread without the stack, goes to the previous handler. */
#define _GNU_SOURCE
#include <asm/prctl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

/* The registers, in the encoding's order (rax rcx rdx rbx rsp rbp rsi rdi
 * r8..r15); ymm[i] is four 64-bit words, low first. */
struct trap_regs {
    uint64_t gpr[16];
    uint64_t rip, rflags, fs_base, mxcsr;
    uint64_t ymm[16][4];
};

typedef int (*trap_fn)(struct trap_regs *);

static trap_fn callback;
static struct sigaction previous;

static const int gregs_index[16] = {
    REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
    REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15};

/* The signal frame's FPU area is the XSAVE layout when the kernel marks it
 * so: fxsave's 512 bytes (xmm at 160), the XSAVE header at 512 (which
 * components hold state), and the ymm upper halves at 576. */
#define FX_XMM 160
#define FX_SW_BYTES 464
#define XSAVE_HEADER 512
#define XSAVE_YMM_HI 576
#define XSTATE_MAGIC1 0x46505853U
#define XFEATURE_YMM 4u

static int
frame_has_ymm(const uint8_t *fx)
{
    uint32_t magic;
    uint64_t features;
    memcpy(&magic, fx + FX_SW_BYTES, sizeof magic);
    memcpy(&features, fx + FX_SW_BYTES + 8, sizeof features);
    return magic == XSTATE_MAGIC1 && (features & XFEATURE_YMM);
}

static void
decline(void)
{
    sigaction(SIGILL, &previous, NULL);
}

static void
on_sigill(int sig, siginfo_t *info, void *context)
{
    ucontext_t *uc = context;
    mcontext_t *mc = &uc->uc_mcontext;
    uint8_t *fx = (uint8_t *)mc->fpregs;
    struct trap_regs r;
    stack_t current;
    uint64_t present = 0;
    int ymm = frame_has_ymm(fx);
    (void)sig;
    (void)info;
    if (sigaltstack(NULL, &current) != 0 ||
        !(current.ss_flags & SS_ONSTACK)) {
        static const char msg[] =
            "AVX-512 code on a thread without an emulation stack\n";
        (void)!write(2, msg, sizeof msg - 1);
        decline();
        return;
    }
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 16; i++) {
        r.gpr[i] = (uint64_t)mc->gregs[gregs_index[i]];
    }
    r.rip = (uint64_t)mc->gregs[REG_RIP];
    r.rflags = (uint64_t)mc->gregs[REG_EFL];
    syscall(SYS_arch_prctl, ARCH_GET_FS, &r.fs_base);
    r.mxcsr = mc->fpregs->mxcsr;
    if (ymm) {
        memcpy(&present, fx + XSAVE_HEADER, sizeof present);
    }
    for (int i = 0; i < 16; i++) {
        memcpy(r.ymm[i], fx + FX_XMM + 16 * i, 16);
        if (present & XFEATURE_YMM) {
            memcpy(&r.ymm[i][2], fx + XSAVE_YMM_HI + 16 * i, 16);
        }
    }
    if (callback == NULL || callback(&r) != 0) {
        decline();
        return;
    }
    for (int i = 0; i < 16; i++) {
        mc->gregs[gregs_index[i]] = (greg_t)r.gpr[i];
    }
    mc->gregs[REG_RIP] = (greg_t)r.rip;
    mc->gregs[REG_EFL] = (greg_t)r.rflags;
    mc->fpregs->mxcsr = (uint32_t)r.mxcsr;
    for (int i = 0; i < 16; i++) {
        memcpy(fx + FX_XMM + 16 * i, r.ymm[i], 16);
    }
    if (ymm) {
        for (int i = 0; i < 16; i++) {
            memcpy(fx + XSAVE_YMM_HI + 16 * i, &r.ymm[i][2], 16);
        }
        memcpy(&present, fx + XSAVE_HEADER, sizeof present);
        present |= XFEATURE_YMM;
        memcpy(fx + XSAVE_HEADER, &present, sizeof present);
    }
}

/* Gives the calling thread an alternate signal stack of `bytes` (kept for
 * the thread's life).  Returns 0, or -1. */
int
trap_thread_init(size_t bytes)
{
    stack_t ss;
    ss.ss_sp = malloc(bytes);
    ss.ss_size = bytes;
    ss.ss_flags = 0;
    if (ss.ss_sp == NULL || sigaltstack(&ss, NULL) != 0) {
        free(ss.ss_sp);
        return -1;
    }
    return 0;
}

/* Installs the handler with `fn` as its callback, and gives the calling
 * thread its stack.  Returns 0, or -1. */
int
trap_install(trap_fn fn, size_t stack_bytes)
{
    struct sigaction sa;
    if (trap_thread_init(stack_bytes) != 0) {
        return -1;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigill;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    callback = fn;
    return sigaction(SIGILL, &sa, &previous);
}
