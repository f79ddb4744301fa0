// cuda_bias.cu — biases and their gradients: a convolution's channel bias (+ ConvRelu's Relu),
// channel and column sums (ReduceSumTo), a GEMM's bias, NCHW <-> NHWC, fill.
// Shared helpers and the rules every kernel keeps: cu_kernels.h.
#include "cu_kernels.h"

// ---- ReduceSumTo (cpu_reduce_sum_to), patterns other than cu_sum_to_of's: one thread per
// dX element, loops the reduced dims in dY order, double accumulation (cu_reduce_sum_to,
// after the column sums below). ----
template <typename T>
__global__ void k_reduce_sum_to(const T *dy, cu_shape ys, cu_shape xs, T *dx, int64_t m,
                                float scale) {
    int r = ys.rank;
    int64_t stride[CU_MAX_RANK], acc = 1;
    bool red[CU_MAX_RANK];
    int64_t nred = 1;
    for (int d = r - 1; d >= 0; d--) {
        stride[d] = acc;
        acc *= ys.d[d];
        int j = d - (r - xs.rank);
        red[d] = (j < 0 || xs.d[j] == 1) && ys.d[d] != 1;
        if (red[d]) nred *= ys.d[d];
    }
    GRID_LOOP(i, m) {
        int64_t rem = i, base = 0;
        for (int d = r - 1; d >= 0; d--) {
            if (red[d]) continue;
            int j = d - (r - xs.rank);
            int64_t ext = j >= 0 ? xs.d[j] : 1;
            base += (rem % ext) * stride[d];
            rem /= ext;
        }
        double s = 0;
        for (int64_t k = 0; k < nred; k++) {
            int64_t kr = k, off = base;
            for (int d = r - 1; d >= 0; d--) {
                if (!red[d]) continue;
                off += (kr % ys.d[d]) * stride[d];
                kr /= ys.d[d];
            }
            s += ld(dy, off);
        }
        st(dx, i, (float)(s * scale));
    }
}

// ---- the channel bias of a convolution (+ ConvRelu's Relu) and its gradient (cuda_conv.c) ----
__global__ void k_channel_bias(void *y, int ky, const void *b, int kb, int64_t C, int64_t S,
                               int64_t n, int relu) {
    GRID_LOOP(i, n) {
        float v = half_load(y, ky, i) + half_load(b, kb, (i / S) % C);
        half_store(y, ky, i, relu ? oc_relu(v) : v);
    }
}

// Channels-last y (rows, C) += b, then the Relu (relu): a thread per V channels and row
// block, its biases in registers, every rb-th row from its block's first (k_rows_fill's
// walk: no division per element), V-wide accesses where C and the pointers allow.
template <typename T, int V>
__global__ void k_bias_rows(T *y, const T *b, int64_t rows, int64_t C, int64_t rb, int relu) {
    int64_t groups = C / V;
    GRID_LOOP(i, groups * rb) {
        int64_t g = i % groups;
        float bv[V], v[V];
        ldv<T, V>(b, g * V, bv);
        for (int64_t r = i / groups; r < rows; r += rb) {
            ldv<T, V>(y, r * C + g * V, v);
            UNROLL
            for (int k = 0; k < V; k++) v[k] = relu ? oc_relu(v[k] + bv[k]) : v[k] + bv[k];
            stv<T, V>(y, r * C + g * V, v);
        }
    }
}

// (N C, S) planes: a block per (n, c) plane, V elements a thread.
template <typename T, int V>
__global__ void k_bias_planes(T *y, const T *b, int64_t C, int64_t S, int64_t planes, int relu) {
    ROW_LOOP(pl, planes) {
        float bc = ld(b, pl % C), v[V];
        for (int64_t i = threadIdx.x * V; i < S; i += blockDim.x * V) {
            ldv<T, V>(y, pl * S + i, v);
            UNROLL
            for (int k = 0; k < V; k++) v[k] = relu ? oc_relu(v[k] + bc) : v[k] + bc;
            stv<T, V>(y, pl * S + i, v);
        }
    }
}

template <typename T>
static void bias_act(cudaStream_t s, void *y, const void *b, int64_t N, int64_t C, int64_t S,
                     int relu) {
    if (S == 1) { // rows of C: channels-last, or (N, C, 1, ..)
        int V = vec_of(C, sizeof(T), y, b, NULL, NULL);
        int64_t groups = C / V, rb = ((int64_t)1 << 18) / groups;
        rb = rb < 1 ? 1 : rb > N ? N : rb;
        unsigned nb = blocks_for(groups * rb);
        if (V == 4) k_bias_rows<T, 4><<<nb, THREADS, 0, s>>>((T *)y, (const T *)b, N, C, rb, relu);
        else k_bias_rows<T, 1><<<nb, THREADS, 0, s>>>((T *)y, (const T *)b, N, C, rb, relu);
        return;
    }
    int V = vec_of(S, sizeof(T), y, NULL, NULL, NULL);
    unsigned nb = warps_for(N * C), nt = row_threads(S / V);
    if (V == 4) k_bias_planes<T, 4><<<nb, nt, 0, s>>>((T *)y, (const T *)b, C, S, N * C, relu);
    else k_bias_planes<T, 1><<<nb, nt, 0, s>>>((T *)y, (const T *)b, C, S, N * C, relu);
}

extern "C" int cu_channel_bias(void *stream, void *y, int ky, const void *b, int kb, int64_t N,
                               int64_t C, int64_t S, int relu) {
    int64_t n = N * C * S;
    if (n == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (ky != kb) {
        k_channel_bias<<<blocks_for(n), THREADS, 0, s>>>(y, ky, b, kb, C, S, n, relu);
    } else if (ky == 1) {
        bias_act<oc_f16>(s, y, b, N, C, S, relu);
    } else if (ky == 2) {
        bias_act<oc_bf16>(s, y, b, N, C, S, relu);
    } else {
        bias_act<float>(s, y, b, N, C, S, relu);
    }
    return last_error();
}

// t[r] = sum of row r's S elements (a warp per row, in double)
__global__ void k_row_sums(const void *x, int kx, int64_t rows, int64_t S, double *t) {
    ROW_LOOP(r, rows) {
        double acc = 0;
        for (int64_t i = threadIdx.x; i < S; i += blockDim.x) acc += half_load(x, kx, r * S + i);
        acc = warp_sum(acc);
        if (threadIdx.x == 0) t[r] = acc;
    }
}

// out[c] = scale * sum over n of t[n C + c]: a warp per column, lane l adding n = l, l + 32,
// .. in order, then the lanes' sums in warp_sum's fixed order (deterministic)
__global__ void k_col_sums(const double *t, int64_t N, int64_t C, void *out, int kout,
                           float scale) {
    ROW_LOOP(c, C) {
        double acc = 0;
        for (int64_t n = threadIdx.x; n < N; n += blockDim.x) acc += t[n * C + c];
        acc = warp_sum(acc);
        if (threadIdx.x == 0) half_store(out, kout, c, (float)(acc * scale));
    }
}

// scale * the sums of x (N, C, S) over N and S: per-(n, c) rows (a warp each) into ws, then
// over n per column (cu_channel_sum, ReduceSumTo)
static int sum_nsc(cudaStream_t st, const void *x, int kx, int64_t N, int64_t C, int64_t S,
                   double *ws, void *out, int kout, float scale) {
    if (C == 0) return 0;
    if (N * C > 0) k_row_sums<<<warps_for(N * C), WARP, 0, st>>>(x, kx, N * C, S, ws);
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, N, C, out, kout, scale);
    return last_error();
}

extern "C" int cu_channel_sum(void *stream, const void *x, int kx, int64_t N, int64_t C, int64_t S,
                              double *ws, void *out, int kout) {
    return sum_nsc((cudaStream_t)stream, x, kx, N, C, S, ws, out, kout, 1.0f);
}

// ReluGradBias: dz = relu'(y) dy written, and its per-(n, c) row sums in double into t
// (a warp per row), as k_row_sums adds x
__global__ void k_relu_grad_rows(const void *dy, const void *y, void *dz, int k, int64_t rows,
                                 int64_t S, double *t) {
    ROW_LOOP(r, rows) {
        double acc = 0;
        for (int64_t i = threadIdx.x; i < S; i += blockDim.x) {
            int64_t o = r * S + i;
            float d = oc_relu_grad(half_load(dy, k, o), half_load(y, k, o));
            half_store(dz, k, o, d);
            acc += d;
        }
        acc = warp_sum(acc);
        if (threadIdx.x == 0) t[r] = acc;
    }
}

// Channels-last: the same per (part, channel), as k_part_channel_sums adds x
__global__ void k_relu_grad_parts(const void *dy, const void *y, void *dz, int k, int64_t rows,
                                  int64_t C, int64_t R, int64_t P, double *t) {
    GRID_LOOP(i, P * C) {
        int64_t p = i / C, c = i % C, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double acc = 0;
        for (int64_t r = p * R; r < end; r++) {
            int64_t o = r * C + c;
            float d = oc_relu_grad(half_load(dy, k, o), half_load(y, k, o));
            half_store(dz, k, o, d);
            acc += d;
        }
        t[i] = acc;
    }
}

extern "C" int cu_relu_grad_bias(void *stream, int k, const void *dy, const void *y, void *dz,
                                 void *db, int kb, int64_t N, int64_t C, int64_t S, int nhwc,
                                 double *ws) {
    if (C == 0) return 0;
    cudaStream_t st = (cudaStream_t)stream;
    int64_t rows = N * S, P = nhwc ? cu_channel_parts(rows, C) : N;
    if (nhwc && rows > 0)
        k_relu_grad_parts<<<blocks_for(P * C), THREADS, 0, st>>>(dy, y, dz, k, rows, C,
                                                                 (rows + P - 1) / P, P, ws);
    else if (!nhwc && N * C > 0)
        k_relu_grad_rows<<<warps_for(N * C), WARP, 0, st>>>(dy, y, dz, k, N * C, S, ws);
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, rows > 0 ? P : 0, C, db, kb, 1.0f);
    return last_error();
}

// Channels-last: t[p C + c] = sum of x (rows, C) over the rows of part p, a
// thread per (p, c), the rows four at a time into two sums; then over the parts (k_col_sums).
__global__ void k_part_channel_sums(const void *x, int kx, int64_t rows, int64_t C, int64_t R,
                                    int64_t P, double *t) {
    GRID_LOOP(i, P * C) {
        int64_t p = i / C, c = i % C, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double a0 = 0, a1 = 0;
        int64_t r = p * R;
        for (; r + 3 < end; r += 4) { // four independent loads per thread
            a0 += half_load(x, kx, r * C + c);
            a1 += half_load(x, kx, (r + 1) * C + c);
            a0 += half_load(x, kx, (r + 2) * C + c);
            a1 += half_load(x, kx, (r + 3) * C + c);
        }
        for (; r < end; r++) a0 += half_load(x, kx, r * C + c);
        t[i] = a0 + a1;
    }
}

// The same with 4 channels a thread, one 16-byte (float32) or 8-byte (half) load a row, where C
// is a multiple of 4 and x aligned (vec_of): each channel's two sums take its rows in the
// one-channel kernel's order, so the result is the same to the bit, with 4 times the bytes in
// flight a load (a GEMM's bias gradient: ~1.25 TB/s on an H200 one channel a thread).
template <typename T>
__global__ void k_part_channel_sums4(const T *x, int64_t rows, int64_t C, int64_t R, int64_t P,
                                     double *t) {
    int64_t G = C / 4;
    GRID_LOOP(i, P * G) {
        int64_t p = i / G, c = i % G * 4, end = (p + 1) * R < rows ? (p + 1) * R : rows;
        double a0[4] = {0, 0, 0, 0}, a1[4] = {0, 0, 0, 0};
        int64_t r = p * R;
        for (; r + 3 < end; r += 4) { // four independent loads per thread
            float v0[4], v1[4], v2[4], v3[4];
            ldv<T, 4>(x, r * C + c, v0);
            ldv<T, 4>(x, (r + 1) * C + c, v1);
            ldv<T, 4>(x, (r + 2) * C + c, v2);
            ldv<T, 4>(x, (r + 3) * C + c, v3);
            for (int e = 0; e < 4; e++) a0[e] += v0[e], a1[e] += v1[e];
            for (int e = 0; e < 4; e++) a0[e] += v2[e], a1[e] += v3[e];
        }
        for (; r < end; r++) {
            float v[4];
            ldv<T, 4>(x, r * C + c, v);
            for (int e = 0; e < 4; e++) a0[e] += v[e];
        }
        for (int e = 0; e < 4; e++) t[p * C + c + e] = a0[e] + a1[e];
    }
}

// scale * the column sums of x (rows, C): parts of rows per column (cu_channel_parts) into ws,
// then the parts per column (cu_channel_sum_nhwc, ReduceSumTo)
static int sum_cols(cudaStream_t st, const void *x, int kx, int64_t rows, int64_t C, double *ws,
                    void *out, int kout, float scale) {
    if (C == 0) return 0;
    int64_t P = cu_channel_parts(rows, C), R = (rows + P - 1) / P;
    unsigned b4 = blocks_for(P * C / 4);
    if (rows > 0 && vec_of(C, kx ? 2 : 4, x, NULL, NULL, NULL) == 4 && !scalar_sums()) {
        if (kx == 1)
            k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const oc_f16 *)x, rows, C, R, P, ws);
        else if (kx == 2)
            k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const oc_bf16 *)x, rows, C, R, P, ws);
        else k_part_channel_sums4<<<b4, THREADS, 0, st>>>((const float *)x, rows, C, R, P, ws);
    } else if (rows > 0) {
        k_part_channel_sums<<<blocks_for(P * C), THREADS, 0, st>>>(x, kx, rows, C, R, P, ws);
    }
    k_col_sums<<<warps_for(C), WARP, 0, st>>>(ws, rows > 0 ? P : 0, C, out, kout, scale);
    return last_error();
}

extern "C" int cu_channel_sum_nhwc(void *stream, const void *x, int kx, int64_t rows, int64_t C,
                                   double *ws, void *out, int kout) {
    return sum_cols((cudaStream_t)stream, x, kx, rows, C, ws, out, kout, 1.0f);
}

// ReduceSumTo: the bias gradient of a GEMM (rows summed), of a convolution (N and S), a
// row's tail, with the kernels of the bias gradients above; anything else one thread per
// dX element
extern "C" int cu_reduce_sum_to(void *stream, int kind, const void *dy, cu_shape ys, void *dx,
                                cu_shape xs, float scale, double *ws) {
    int64_t m = numel(xs);
    if (m == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    cu_sum_to k = cu_sum_to_of(ys, xs);
    if (k.kind == CU_SUM_TO_COLS) return sum_cols(s, dy, kind, k.a, k.b, ws, dx, kind, scale);
    if (k.kind == CU_SUM_TO_MID) return sum_nsc(s, dy, kind, k.a, k.b, k.c, ws, dx, kind, scale);
    unsigned b = blocks_for(m);
    if (kind == 1)
        k_reduce_sum_to<<<b, THREADS, 0, s>>>((const oc_f16 *)dy, ys, xs, (oc_f16 *)dx, m, scale);
    else if (kind == 2)
        k_reduce_sum_to<<<b, THREADS, 0, s>>>((const oc_bf16 *)dy, ys, xs, (oc_bf16 *)dx, m, scale);
    else k_reduce_sum_to<<<b, THREADS, 0, s>>>((const float *)dy, ys, xs, (float *)dx, m, scale);
    return last_error();
}

// (N, S, C) <-> (N, C, S) with a change of float kind: i indexes the (N, C, S) side.
__global__ void k_nhwc_convert(const void *x, int kx, void *y, int ky, int64_t C, int64_t S,
                               int64_t n, int to_nchw) {
    GRID_LOOP(i, n) {
        int64_t s = i % S, c = i / S % C, b = i / (S * C), j = (b * S + s) * C + c;
        if (to_nchw) half_store(y, ky, i, half_load(x, kx, j));
        else half_store(y, ky, j, half_load(x, kx, i));
    }
}

extern "C" int cu_nhwc_convert(void *stream, const void *x, int kx, void *y, int ky, int64_t N,
                               int64_t C, int64_t S, int to_nchw) {
    int64_t n = N * C * S;
    if (n == 0) return 0;
    k_nhwc_convert<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(x, kx, y, ky, C, S, n,
                                                                        to_nchw);
    return last_error();
}

// ---- fill (the ones vector of the conv bias gradient, cuda_conv.c) ----
__global__ void k_fill(float *p, int64_t n, float v) { GRID_LOOP(i, n) p[i] = v; }

extern "C" int cu_fill(void *stream, float *p, int64_t n, float v) {
    if (n == 0) return 0;
    k_fill<<<blocks_for(n), THREADS, 0, (cudaStream_t)stream>>>(p, n, v);
    return last_error();
}

// ---- Gemm bias, BN saved variance, Gather ----
__global__ void k_gemm_bias(const void *c, int kind, int64_t s0, int64_t s1, float beta, void *y,
                            int64_t M, int64_t N) {
    GRID_LOOP(t, M * N)
    half_store(y, kind, t, beta * half_load(c, kind, (t / N) * s0 + (t % N) * s1));
}

extern "C" int cu_gemm_bias(void *stream, const void *c, int kind, int64_t s0, int64_t s1,
                            float beta, void *y, int64_t M, int64_t N) {
    if (M * N == 0) return 0;
    k_gemm_bias<<<blocks_for(M * N), THREADS, 0, (cudaStream_t)stream>>>(c, kind, s0, s1, beta, y,
                                                                         M, N);
    return last_error();
}

// Y (rows, N) = b in every row (Linear's bias before its GEMM adds the product): a thread
// per V columns and row block, holding its columns in registers and writing them to every
// rb-th row from its block's first (one division per thread, not per element); V-wide
// stores where N and the pointers allow.
template <typename T, int V>
__global__ void k_rows_fill(const T *b, T *y, int64_t rows, int64_t N, int64_t rb) {
    int64_t groups = N / V;
    GRID_LOOP(i, groups * rb) {
        int64_t g = i % groups;
        float v[V];
        ldv<T, V>(b, g * V, v);
        for (int64_t r = i / groups; r < rows; r += rb) stv<T, V>(y, r * N + g * V, v);
    }
}

template <typename T>
static void rows_fill(cudaStream_t s, const void *b, void *y, int64_t rows, int64_t N) {
    int V = vec_of(N, sizeof(T), b, y, NULL, NULL);
    int64_t groups = N / V, rb = ((int64_t)1 << 18) / groups; /* about 2^18 threads */
    rb = rb < 1 ? 1 : rb > rows ? rows : rb;
    unsigned nb = blocks_for(groups * rb);
    if (V == 4) k_rows_fill<T, 4><<<nb, THREADS, 0, s>>>((const T *)b, (T *)y, rows, N, rb);
    else k_rows_fill<T, 1><<<nb, THREADS, 0, s>>>((const T *)b, (T *)y, rows, N, rb);
}

extern "C" int cu_rows_fill(void *stream, const void *b, int kind, void *y, int64_t rows,
                            int64_t N) {
    if (rows * N == 0) return 0;
    cudaStream_t s = (cudaStream_t)stream;
    if (kind == 1) rows_fill<oc_f16>(s, b, y, rows, N);
    else if (kind == 2) rows_fill<oc_bf16>(s, b, y, rows, N);
    else rows_fill<float>(s, b, y, rows, N);
    return last_error();
}
