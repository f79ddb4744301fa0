/* emu_grid.c — a kernel launch's threads (emu.h: emu_run_grid): every thread of
 * min(grid, EMU_GRID_MAX) blocks of `block` threads runs the kernel with its
 * own threadIdx / blockIdx, blockDim and gridDim as launched (the grid capped:
 * the kernels are grid-stride loops). Thread 0 runs first, on a fiber of its
 * own: if it never reaches a warp shuffle or __syncthreads, the others run as
 * plain calls one after another (an elementwise kernel costs no switching); if
 * it does, every thread of the launch runs on a fiber: a shuffle waits until
 * its warp's 32 lanes have all reached it, then exchanges their values as CUDA
 * defines it (a source lane past the warp gives the caller's own value), a
 * __syncthreads until the whole block has (__shared__ arrays are per stream
 * thread, and a block's fibers share them). A lane that exited before its
 * warp's shuffle, a thread before its block's barrier, a shuffle from a
 * missing lane: reported, named, and the run aborts (undefined on a GPU). Fibers switch by a few
 * instructions (x86-64) or ucontext, with ASan's and TSan's fiber hooks. */
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "emu.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_THREAD__)
#define EMU_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define EMU_TSAN 1
#endif
#endif
#ifdef EMU_ASAN
#include <sanitizer/asan_interface.h>
#endif
#ifdef EMU_TSAN
#include <sanitizer/tsan_interface.h>
#endif
#if !defined(__x86_64__)
#include <ucontext.h>
#endif

__thread unsigned emu_tid = 0, emu_bid = 0, emu_bdim = 1, emu_gdim = 1;

#define WARP 32u
enum { WAIT_SHFL = 1, WAIT_BAR = 2 };
#define STACK_BYTES ((size_t)256 << 10) /* a fiber's stack: ASan's frames are large */

typedef struct fiber {
#if defined(__x86_64__)
    void *sp; /* saved stack pointer while switched out */
#else
    ucontext_t uc;
#endif
    char *stack; /* STACK_BYTES, mmap'd once, reused by later launches */
    unsigned tid;
    bool done;
    unsigned char wait; /* 0 running, WAIT_SHFL or WAIT_BAR */
    void *fake;         /* ASan's fake stack of this fiber while switched out */
    void *tsan;         /* TSan's fiber */
} fiber;

typedef struct warp_state {
    unsigned phase, arrived;
    unsigned long long
        slot[2][WARP]; /* phase parity: a lane reads one while the fast write the other */
} warp_state;

/* One per OS thread (the stream threads, the caller of the legacy stream): the
 * running launch and the fibers and warps it reuses. */
typedef struct grid_run {
    void (*fn)(void *);
    void *ctx;
    unsigned block;
    bool in_launch, fibers;
    unsigned bar_phase, bar_arrived; /* __syncthreads of the running block */
    fiber *f;
    unsigned n_f; /* fibers with a stack */
    warp_state *w;
    unsigned n_w;
    fiber *cur;
#if defined(__x86_64__)
    void *sched_sp;
#else
    ucontext_t sched;
#endif
    const void *sched_bottom; /* the OS thread's stack, for ASan */
    size_t sched_size;
    void *sched_tsan;
} grid_run;

static __thread grid_run *run_here;
static pthread_key_t run_key;
static pthread_once_t run_once = PTHREAD_ONCE_INIT;

__attribute__((format(printf, 1, 2), noreturn)) static void fatal(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("emu: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static void run_free(void *p) {
    grid_run *g = p;
    for (unsigned i = 0; i < g->n_f; i++) munmap(g->f[i].stack, STACK_BYTES);
    free(g->f);
    free(g->w);
    free(g);
}
static void key_init(void) {
    if (pthread_key_create(&run_key, run_free)) abort();
}

static grid_run *run_of_thread(void) {
    if (run_here) return run_here;
    pthread_once(&run_once, key_init);
    grid_run *g = calloc(1, sizeof *g);
    if (!g) abort();
    pthread_setspecific(run_key, g); /* freed when the thread exits */
    return run_here = g;
}

static void reserve(grid_run *g, unsigned threads) {
    unsigned warps = (threads + WARP - 1) / WARP;
    if (warps > g->n_w) {
        g->w = realloc(g->w, warps * sizeof *g->w);
        if (!g->w) abort();
        g->n_w = warps;
    }
    if (threads <= g->n_f) return;
    g->f = realloc(g->f, threads * sizeof *g->f);
    if (!g->f) abort();
    for (unsigned i = g->n_f; i < threads; i++) {
        memset(&g->f[i], 0, sizeof g->f[i]);
        void *s =
            mmap(NULL, STACK_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (s == MAP_FAILED) fatal("no memory for %u fiber stacks", threads);
        g->f[i].stack = s;
    }
    g->n_f = threads;
}

/* ---- switching ---- */
#if defined(__x86_64__)
/* Saves the callee-saved registers on the current stack and the stack pointer in
 * *from, then continues on the stack `to` (saved the same way, or made by
 * fiber_start). */
void emu_switch(void **from, void *to);
__asm__(".text\n"
        ".globl emu_switch\n"
        ".type emu_switch,@function\n"
        "emu_switch:\n"
        "  pushq %rbp\n  pushq %rbx\n  pushq %r12\n  pushq %r13\n  pushq %r14\n  pushq %r15\n"
        "  movq %rsp, (%rdi)\n"
        "  movq %rsi, %rsp\n"
        "  popq %r15\n  popq %r14\n  popq %r13\n  popq %r12\n  popq %rbx\n  popq %rbp\n"
        "  ret\n"
        ".size emu_switch, .-emu_switch\n");
#endif

static void to_fiber(grid_run *g, fiber *f) { /* scheduler -> f */
    g->cur = f;
    emu_tid = f->tid;
#ifdef EMU_ASAN
    void *fake = NULL;
    __sanitizer_start_switch_fiber(&fake, f->stack, STACK_BYTES);
#endif
#ifdef EMU_TSAN
    __tsan_switch_to_fiber(f->tsan, 0);
#endif
#if defined(__x86_64__)
    emu_switch(&g->sched_sp, f->sp);
#else
    swapcontext(&g->sched, &f->uc);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(fake, NULL, NULL);
#endif
    g->cur = NULL;
}

static void to_scheduler(grid_run *g, fiber *f, bool dying) { /* f -> scheduler */
#ifdef EMU_ASAN
    __sanitizer_start_switch_fiber(dying ? NULL : &f->fake, g->sched_bottom, g->sched_size);
#endif
#ifdef EMU_TSAN
    __tsan_switch_to_fiber(g->sched_tsan, 0);
#endif
#if defined(__x86_64__)
    emu_switch(&f->sp, g->sched_sp);
#else
    if (dying) setcontext(&g->sched);
    swapcontext(&f->uc, &g->sched);
#endif
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(f->fake, &g->sched_bottom, &g->sched_size);
#endif
    (void)dying;
}

static void fiber_main(void) {
    grid_run *g = run_here;
    fiber *f = g->cur;
#ifdef EMU_ASAN
    __sanitizer_finish_switch_fiber(NULL, &g->sched_bottom, &g->sched_size);
#endif
    g->fn(g->ctx);
    f->done = true;
    to_scheduler(g, f, true);
    abort(); /* never resumed */
}

static void fiber_start(fiber *f, unsigned tid) {
    f->tid = tid;
    f->done = false, f->wait = 0;
    f->fake = NULL;
#if defined(__x86_64__)
    uintptr_t top = ((uintptr_t)f->stack + STACK_BYTES) & ~(uintptr_t)15;
    void **sp = (void **)top;
    *--sp = NULL;                             /* fiber_main's return address: it never returns */
    *--sp = (void *)fiber_main;               /* emu_switch's ret */
    for (int i = 0; i < 6; i++) *--sp = NULL; /* rbp rbx r12 r13 r14 r15 */
    f->sp = sp;
#else
    getcontext(&f->uc);
    f->uc.uc_stack.ss_sp = f->stack;
    f->uc.uc_stack.ss_size = STACK_BYTES;
    f->uc.uc_link = NULL;
    makecontext(&f->uc, fiber_main, 0);
#endif
#ifdef EMU_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
}

static void fiber_end(fiber *f) {
#ifdef EMU_TSAN
    if (f->tsan) __tsan_destroy_fiber(f->tsan);
    f->tsan = NULL;
#else
    (void)f;
#endif
}

/* ---- warps ---- */
static unsigned warp_lanes(const grid_run *g, unsigned w) {
    unsigned rest = g->block - w * WARP;
    return rest < WARP ? rest : WARP;
}

/* The running fiber, where a kernel thread may wait (fiber mode). */
static fiber *waiting_fiber(const char *what) {
    grid_run *g = run_here;
    if (!g || !g->in_launch) fatal("%s outside a kernel", what);
    if (!g->fibers || !g->cur)
        fatal("thread %u of a kernel reached %s, but its thread 0 did not (the emulator ran the "
              "launch as plain calls; block size %u)",
              emu_tid, what, g->block);
    return g->cur;
}

unsigned long long emu_shfl_xor(unsigned mask, unsigned long long v, int lane_mask) {
    fiber *f = waiting_fiber("a warp shuffle");
    grid_run *g = run_here;
    unsigned w = f->tid / WARP, lane = f->tid % WARP, lanes = warp_lanes(g, w);
    if (mask != 0xffffffffu) fatal("a shuffle mask %u other than all lanes (lane %u)", mask, lane);
    warp_state *W = &g->w[w];
    unsigned ph = W->phase;
    W->slot[ph & 1][lane] = v;
    W->arrived++;
    f->wait = WAIT_SHFL;
    while (W->phase == ph) to_scheduler(g, f, false);
    unsigned src = lane ^ (unsigned)lane_mask;
    if (src >= WARP) return v; /* a later group of lanes: the caller's own value */
    if (src >= lanes) fatal("a shuffle reads lane %u of a warp of %u lanes", src, lanes);
    return W->slot[ph & 1][src];
}

void emu_syncthreads(void) {
    fiber *f = waiting_fiber("__syncthreads");
    grid_run *g = run_here;
    unsigned ph = g->bar_phase;
    g->bar_arrived++;
    f->wait = WAIT_BAR;
    while (g->bar_phase == ph) to_scheduler(g, f, false);
}

/* Releases the block's barrier or a warp's shuffle once every thread they need is at
 * it; true when one was released. */
static bool release(grid_run *g) {
    bool any = false;
    unsigned nw = (g->block + WARP - 1) / WARP, done = 0;
    for (unsigned t = 0; t < g->block; t++) done += g->f[t].done;
    if (g->bar_arrived && g->bar_arrived + done == g->block && done)
        fatal("%u threads of block %u exited before a __syncthreads the other %u wait at", done,
              emu_bid, g->bar_arrived);
    if (g->bar_arrived == g->block) {
        g->bar_phase++, g->bar_arrived = 0, any = true;
        for (unsigned t = 0; t < g->block; t++) g->f[t].wait = 0;
    }
    for (unsigned w = 0; w < nw; w++) {
        warp_state *W = &g->w[w];
        unsigned lanes = warp_lanes(g, w), out = 0;
        if (!W->arrived) continue;
        for (unsigned l = 0; l < lanes; l++) out += g->f[w * WARP + l].done;
        if (W->arrived + out == lanes && out)
            fatal("%u lanes of a warp exited before a shuffle the other %u wait at", out,
                  W->arrived);
        if (W->arrived != lanes) continue;
        W->phase++, W->arrived = 0, any = true;
        for (unsigned l = 0; l < lanes; l++) g->f[w * WARP + l].wait = 0;
    }
    return any;
}

/* Runs threads [first, block) of the current block on fibers (thread 0 may be
 * one already, waiting), releasing shuffles and barriers as they fill. */
static void block_on_fibers(grid_run *g, unsigned first) {
    for (unsigned t = first; t < g->block; t++) fiber_start(&g->f[t], t);
    for (;;) {
        bool live = false, progress = false;
        for (unsigned t = 0; t < g->block; t++) {
            fiber *f = &g->f[t];
            if (!f->done && !f->wait) to_fiber(g, f), progress = true;
            live = live || !f->done;
        }
        if (!live) break;
        if (release(g)) progress = true;
        if (!progress)
            fatal("the threads of block %u wait at shuffles or barriers that cannot complete",
                  emu_bid);
    }
    for (unsigned t = 0; t < g->block; t++) fiber_end(&g->f[t]);
}

static unsigned grid_max(void) {
    static unsigned cached;
    unsigned m = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (m) return m;
    const char *e = getenv("EMU_GRID_MAX");
    long v = e ? strtol(e, NULL, 10) : 0;
    m = v > 0 && v < 65536 ? (unsigned)v : 2;
    __atomic_store_n(&cached, m, __ATOMIC_RELAXED);
    return m;
}

void emu_run_grid(unsigned grid, unsigned block, void (*fn)(void *), void *ctx) {
    if (grid == 0 || block == 0 || block > 1024)
        fatal("a launch of %u blocks of %u threads (CUDA: invalid configuration)", grid, block);
    grid_run *g = run_of_thread();
    if (g->in_launch) fatal("a launch inside a kernel");
    reserve(g, block);
    g->fn = fn, g->ctx = ctx, g->block = block, g->in_launch = true;
    g->fibers = true;
#ifdef EMU_TSAN
    g->sched_tsan = __tsan_get_current_fiber();
#endif
    unsigned nb = grid < grid_max() ? grid : grid_max();
    emu_bdim = block, emu_gdim = nb;
    for (unsigned b = 0; b < nb; b++) {
        emu_bid = b;
        memset(g->w, 0, ((block + WARP - 1) / WARP) * sizeof *g->w);
        g->bar_phase = g->bar_arrived = 0;
        if (b == 0) { /* thread 0 on a fiber tells whether the kernel ever waits */
            fiber_start(&g->f[0], 0);
            to_fiber(g, &g->f[0]);
            if (g->f[0].done) {
                fiber_end(&g->f[0]);
                g->fibers = false;
            } else {
                block_on_fibers(g, 1);
                continue;
            }
            for (unsigned t = 1; t < block; t++) emu_tid = t, fn(ctx);
        } else if (g->fibers) {
            block_on_fibers(g, 0);
        } else {
            for (unsigned t = 0; t < block; t++) emu_tid = t, fn(ctx);
        }
    }
    emu_tid = emu_bid = 0, emu_bdim = emu_gdim = 1;
    g->in_launch = false;
}
