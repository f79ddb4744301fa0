/* test_live_index.c — emit/live_index.h against a scan of every item: random
 * lifetimes (short ones, long ones, single positions, the whole range) and
 * random query ranges; each query returns exactly the items live at some
 * position of its range, each once. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "emit/live_index.h"

static uint64_t rng = 7;
static int next(int n) { /* uniform in [0, n) */
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    return (int)((rng >> 33) % (uint64_t)n);
}

static void random_case(int lo, int hi, int n_items) {
    live_index *ix = live_index_new(lo, hi, n_items);
    int *first = malloc((size_t)n_items * sizeof(int)),
        *last = malloc((size_t)n_items * sizeof(int));
    bool *seen = calloc((size_t)n_items, sizeof(bool));
    int span = hi - lo + 1, checked = 0;
    for (int t = 0; t < n_items; t++) {
        int kind = next(4), len = kind == 0 ? 1 : kind == 1 ? 1 + next(4) : 1 + next(span);
        first[t] = kind == 3 ? lo : lo + next(span);
        last[t] = first[t] + len - 1 > hi ? hi : first[t] + len - 1;
        if (kind == 3) last[t] = hi;
        /* query before and after adding t */
        for (int q = 0; q < 2; q++) {
            int a = lo + next(span), b = a + next(1 + next(span));
            if (b > hi) b = hi;
            const int *found;
            int k = live_index_query(ix, a, b, &found);
            for (int i = 0; i < t + q; i++) seen[i] = false;
            for (int i = 0; i < k; i++) {
                assert_true(found[i] >= 0 && found[i] < t + q);
                assert_false(seen[found[i]]); /* each once */
                seen[found[i]] = true;
            }
            for (int i = 0; i < t + q; i++) {
                bool live = first[i] <= b && a <= last[i];
                if (live != seen[i])
                    fail_msg("item %d [%d, %d], query [%d, %d]: %s", i, first[i], last[i], a, b,
                             live ? "missing" : "reported but not live");
            }
            checked++;
            if (q == 0) live_index_add(ix, t, first[t], last[t]);
        }
    }
    printf("ok - live_index == a scan: positions %d..%d, %d items, %d queries\n", lo, hi, n_items,
           checked);
    free(first), free(last), free(seen);
    live_index_free(ix);
}

static void test_random(void **s) {
    (void)s;
    random_case(-1, 0, 20);
    random_case(-1, 37, 300);
    random_case(0, 1000, 2000);
    random_case(5, 5, 10);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_random)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
