/* fuzz_cli.c — libFuzzer target: both command lines. The input is argv, its
 * arguments separated by NUL bytes. The first byte picks the program:
 *  - even: outcore-plan's dispatcher and every subcommand, run for real in a
 *    scratch folder holding a small model, its profile, a plan and a training
 *    graph (restored before each input: m.onnx, p.json, plan.onnx, t.onnx,
 *    dev.json); an argument holding '/' is skipped so that every file the
 *    commands write stays in that folder;
 *  - odd: outcore-run's option parser (parse_args), which decides everything
 *    before a step runs (the steps themselves are fuzz_plan's).
 * Both main.c files are included here under other names: their parsers are
 * static. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);
int outcore_plan_main(int argc, char **argv);
int outcore_run_main(int argc, char **argv);

#define main outcore_plan_main
#include "../../planner/cli/main.c"
#undef main
#define main outcore_run_main
#define usage run_usage
#include "../../runtime/cli/main.c"
#undef main
#undef usage

#define MAX_ARGS 24
#define MAX_FIXTURE (4 << 20)

typedef struct fixture {
    const char *name;
    char *bytes;
    size_t len;
} fixture;
static fixture fixtures[] = {{.name = "m.onnx"},
                             {.name = "p.json"},
                             {.name = "plan.onnx"},
                             {.name = "t.onnx"},
                             {.name = "dev.json"}};
enum { N_FIXTURES = sizeof fixtures / sizeof fixtures[0] };

/* The fixtures come from $OC_FUZZ_FIXTURES (tests/fuzz/run.sh makes them);
 * the scratch folder is the current one. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    const char *dir = getenv("OC_FUZZ_FIXTURES");
    if (!dir) {
        fprintf(stderr, "fuzz_cli: set OC_FUZZ_FIXTURES (tests/fuzz/run.sh does)\n");
        exit(2);
    }
    for (int i = 0; i < N_FIXTURES; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, fixtures[i].name);
        FILE *f = fopen(path, "rb");
        fixtures[i].bytes = malloc(MAX_FIXTURE);
        if (!f || !fixtures[i].bytes) {
            fprintf(stderr, "fuzz_cli: cannot read %s\n", path);
            exit(2);
        }
        fixtures[i].len = fread(fixtures[i].bytes, 1, MAX_FIXTURE, f);
        fclose(f);
    }
    return 0;
}

static bool is_fixture(const char *name) {
    for (int i = 0; i < N_FIXTURES; i++)
        if (strcmp(name, fixtures[i].name) == 0) return true;
    return false;
}

/* The scratch folder as it was: fixtures rewritten, anything else removed. */
static void reset_folder(void) {
    DIR *d = opendir(".");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") && !is_fixture(e->d_name)) {
            if (unlink(e->d_name) != 0) rmdir(e->d_name);
        }
    if (d) closedir(d);
    for (int i = 0; i < N_FIXTURES; i++) {
        FILE *f = fopen(fixtures[i].name, "wb");
        if (!f || fwrite(fixtures[i].bytes, 1, fixtures[i].len, f) != fixtures[i].len) abort();
        fclose(f);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    bool run = data[0] & 1;
    char *copy = malloc(size + 1);
    memcpy(copy, data + 1, size - 1);
    copy[size - 1] = 0;
    char *argv[MAX_ARGS + 2] = {run ? "outcore-run" : "outcore-plan"};
    int argc = 1;
    for (char *p = copy; p < copy + size - 1 && argc <= MAX_ARGS; p += strlen(p) + 1)
        if (run || !strchr(p, '/')) argv[argc++] = p;
    argv[argc] = NULL;
    if (run) {
        run_opts o = {0};
        oc_err err;
        parse_args(argc, argv, &o, &err);
    } else {
        reset_folder();
        outcore_plan_main(argc, argv);
    }
    free(copy);
    return 0;
}
