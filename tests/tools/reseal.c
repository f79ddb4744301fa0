/* reseal.c — rewrites the outcore.seal of each file named (ir/model_seal.h), in
 * place. Tests forge edited plans with it, as an attacker could, to reach the
 * checks the seal does not replace (verifier, structure, decoded arguments). */
#include <stdio.h>

#include "ir/common.h"
#include "ir/model_seal.h"

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) {
        uint8_t *buf, *out;
        size_t len, out_len;
        oc_err err;
        if (oc_read_file(argv[i], &buf, &len, &err)) {
            fprintf(stderr, "reseal: %s\n", err.msg);
            return 1;
        }
        int bad = model_seal_rewrite(buf, len, &out, &out_len);
        oc_free(buf);
        FILE *f = bad ? NULL : fopen(argv[i], "wb");
        bool ok = f && fwrite(out, 1, out_len, f) == out_len;
        if (f) ok = fclose(f) == 0 && ok;
        if (!bad) oc_free(out);
        if (!ok) {
            fprintf(stderr, "reseal: %s: %s\n", argv[i],
                    bad ? "not an ONNX model" : "write failed");
            return 1;
        }
    }
    return 0;
}
