/* test_emu_grid.c — the CUDA emulator's launches (tests/emu/emu_grid.c): every
 * thread of min(grid, EMU_GRID_MAX) blocks runs with its own coordinates and
 * the launch's block and grid sizes; a kernel that shuffles runs on fibers and
 * a warp's butterfly sum equals the lanes' sum in every lane; a lane mask past
 * the warp gives the lane its own value (CUDA's rule, the reduction bug the
 * H100 found); a 64-lane reduction over a 128-thread block keeps its two warps
 * apart; __syncthreads holds a block's threads until all have written shared
 * memory; the errors a GPU leaves undefined abort, named: a lane leaving before
 * its warp's shuffle or its block's barrier, a shuffle from a lane the warp
 * lacks, a shuffle by a thread whose thread 0 did not shuffle. Built only with `make CUDA=emu`. */
#ifndef OC_CUDA_EMU
#include <stdio.h>
int main(void) {
    puts("SKIP test_emu_grid: needs CUDA=emu");
    return 0;
}
#else
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "emu.h"

#define MAXT 4096

typedef struct seen {
    int n;
    unsigned tid[MAXT], bid[MAXT], bdim, gdim;
} seen;

static void record(void *p) {
    seen *s = p;
    s->tid[s->n] = emu_tid, s->bid[s->n] = emu_bid, s->n++;
    s->bdim = emu_bdim, s->gdim = emu_gdim;
}

static void every_thread_once(void **state) {
    (void)state;
    static seen s;
    memset(&s, 0, sizeof s);
    emu_run_grid(5, 96, record, &s); /* capped at EMU_GRID_MAX (2) blocks */
    assert_int_equal(s.n, 2 * 96);
    assert_int_equal(s.bdim, 96);
    assert_int_equal(s.gdim, 2);
    for (int i = 0; i < s.n; i++) {
        assert_int_equal(s.bid[i], (unsigned)i / 96);
        assert_int_equal(s.tid[i], (unsigned)i % 96);
    }
    assert_int_equal(emu_tid, 0); /* the host thread's coordinates restored */
    assert_int_equal(emu_bdim, 1);
    memset(&s, 0, sizeof s);
    emu_run_grid(1, 7, record, &s);
    assert_int_equal(s.n, 7);
    assert_int_equal(s.gdim, 1);
}

/* A kernel: each thread's value reduced over `width` lanes by xor butterflies. */
typedef struct red {
    int width;
    double in[MAXT], out[MAXT];
} red;

static void butterfly(void *p) {
    red *r = p;
    unsigned t = emu_bid * emu_bdim + emu_tid;
    double v = r->in[t];
    for (int o = r->width / 2; o > 0; o /= 2) {
        unsigned long long b;
        memcpy(&b, &v, sizeof v);
        b = emu_shfl_xor(0xffffffffu, b, o);
        double w;
        memcpy(&w, &b, sizeof w);
        v += w;
    }
    r->out[t] = v;
}

static void warp_sums(void **state) {
    (void)state;
    static red r;
    for (int i = 0; i < MAXT; i++) r.in[i] = (double)(i * 7 % 13) + 0.25 * i;
    r.width = 32;
    emu_run_grid(2, 128, butterfly, &r);
    for (int t = 0; t < 256; t++) {
        double want = 0;
        for (int l = 0; l < 32; l++) want += r.in[t / 32 * 32 + l];
        assert_true(r.out[t] == want);
    }
    /* offsets 64, 32 on a 128-thread block: XOR past the warp is the lane's own value, so
     * each warp sums its lanes and doubles twice (CUDA's rule), never reads the other warp */
    r.width = 128;
    emu_run_grid(1, 128, butterfly, &r);
    for (int t = 0; t < 128; t++) {
        double want = 0;
        for (int l = 0; l < 32; l++) want += r.in[t / 32 * 32 + l];
        assert_true(r.out[t] == 4 * want);
    }
}

/* A block's threads write shared memory, meet at the barrier, read their neighbour's. */
typedef struct bar {
    unsigned out[MAXT];
} bar;
static unsigned shared_mem[1024];

static void neighbours(void *p) {
    bar *b = p;
    shared_mem[emu_tid] = emu_tid * 2 + emu_bid;
    emu_syncthreads();
    unsigned v = shared_mem[(emu_tid + 1) % emu_bdim];
    emu_syncthreads(); /* before the next block's threads overwrite it */
    b->out[emu_bid * emu_bdim + emu_tid] = v;
}

static void block_barrier(void **state) {
    (void)state;
    static bar b;
    emu_run_grid(2, 96, neighbours, &b);
    for (unsigned t = 0; t < 192; t++) assert_int_equal(b.out[t], (t % 96 + 1) % 96 * 2 + t / 96);
}

/* Runs fn in a child; true when it aborted with `want` on stderr. */
static bool aborts_with(void (*fn)(void), const char *want) {
    int pipefd[2];
    if (pipe(pipefd)) return false;
    pid_t pid = fork();
    if (pid == 0) {
        dup2(pipefd[1], 2);
        close(pipefd[0]);
        fn();
        _exit(0);
    }
    close(pipefd[1]);
    char buf[1024] = {0};
    size_t n = 0;
    ssize_t k;
    while (n + 1 < sizeof buf && (k = read(pipefd[0], buf + n, sizeof buf - 1 - n)) > 0)
        n += (size_t)k;
    close(pipefd[0]);
    int st = 0;
    waitpid(pid, &st, 0);
    if (!strstr(buf, want)) fprintf(stderr, "child said: %s\n", buf);
    return WIFSIGNALED(st) && strstr(buf, want) != NULL;
}

static void early_exit_kernel(void *p) {
    (void)p;
    if (emu_tid == 5) return; /* lane 5 leaves */
    emu_shfl_xor(0xffffffffu, emu_tid, 1);
}
static void early_exit(void) { emu_run_grid(1, 32, early_exit_kernel, NULL); }

static void missing_lane_kernel(void *p) {
    (void)p;
    emu_shfl_xor(0xffffffffu, emu_tid, 8); /* a warp of 4 lanes */
}
static void missing_lane(void) { emu_run_grid(1, 4, missing_lane_kernel, NULL); }

static void late_shuffle_kernel(void *p) {
    (void)p;
    if (emu_tid != 0) emu_shfl_xor(0xffffffffu, emu_tid, 1);
}
static void late_shuffle(void) { emu_run_grid(1, 32, late_shuffle_kernel, NULL); }

static void barrier_exit_kernel(void *p) {
    (void)p;
    if (emu_tid == 40) return;
    emu_syncthreads();
}
static void barrier_exit(void) { emu_run_grid(1, 64, barrier_exit_kernel, NULL); }

static void undefined_shuffles_abort(void **state) {
    (void)state;
    assert_true(aborts_with(early_exit, "exited before a shuffle"));
    assert_true(aborts_with(missing_lane, "reads lane 8 of a warp of 4 lanes"));
    assert_true(aborts_with(late_shuffle, "its thread 0 did not"));
    assert_true(aborts_with(barrier_exit, "exited before a __syncthreads"));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_thread_once),
        cmocka_unit_test(warp_sums),
        cmocka_unit_test(block_barrier),
        cmocka_unit_test(undefined_shuffles_abort),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
#endif
