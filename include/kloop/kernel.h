/*
 * kloop/kernel.h — the candidate ABI.
 *
 * The only header a candidate (or a reference) compiles against. A candidate exports, for each
 * mode of its op spec, one C function
 *
 *     extern "C" int <entry>(const kl_args* args);
 *
 * which reads its inputs and writes every element of its outputs, then returns 0. Any non-zero
 * return rejects the run; kloop reports the value. kloop owns every buffer: it allocates outputs
 * fresh for each checked call, poisons them (NaN for floats, 0xFF bytes for integers) and guards
 * them with canary red zones, so a candidate must never read an output before writing it, write
 * outside it, or keep pointers across calls. Inputs must not be modified unless the spec marks
 * them in-out.
 *
 * Plain C (C99 / C++98 compatible), no includes beyond <stdint.h> and <string.h>, so it compiles
 * under gcc, clang, nvcc and hipcc alike.
 */
#ifndef KLOOP_KERNEL_H
#define KLOOP_KERNEL_H

#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any layout change; the runner refuses a candidate built against another version. */
#define KL_ABI_VERSION 1
#define KL_MAX_DIMS 8

typedef enum kl_dtype {
    KL_F32 = 0,
    KL_F16 = 1,
    KL_BF16 = 2,
    KL_F64 = 3,
    KL_I32 = 4,
    KL_I64 = 5
} kl_dtype;

/* Where tensor data lives: host memory (CPU backend) or device memory (CUDA backend). */
typedef enum kl_device { KL_HOST = 0, KL_CUDA = 1 } kl_device;

typedef struct kl_tensor {
    const char* name;              /* as in op.toml */
    void* data;                    /* first element; device memory when device == KL_CUDA */
    kl_dtype dtype;
    kl_device device;
    int32_t ndim;
    int64_t shape[KL_MAX_DIMS];
    int64_t strides[KL_MAX_DIMS];  /* in elements, not bytes; row-major contiguous today */
} kl_tensor;

/* A scalar parameter: both views are filled; integer params have f64 == (double)i64. */
typedef struct kl_param {
    const char* name;
    double f64;
    int64_t i64;
} kl_param;

/* A named dimension of the current shape (e.g. N = 4096). */
typedef struct kl_dim {
    const char* name;
    int64_t value;
} kl_dim;

typedef struct kl_args {
    int32_t abi_version;           /* KL_ABI_VERSION of the caller */
    int32_t n_inputs;
    const kl_tensor* inputs;       /* in op.toml order */
    int32_t n_outputs;
    const kl_tensor* outputs;      /* in op.toml order */
    int32_t n_params;
    const kl_param* params;
    int32_t n_dims;
    const kl_dim* dims;
    void* stream;                  /* cudaStream_t on the CUDA backend; NULL on the CPU */
} kl_args;

/* Lookup helpers: NULL (or the fallback) when the name is absent. Linear scans; cheap for the
 * handful of entries an op has, but hoist them out of inner loops. */
static inline const kl_tensor* kl_input(const kl_args* a, const char* name) {
    for (int32_t i = 0; i < a->n_inputs; ++i)
        if (strcmp(a->inputs[i].name, name) == 0) return &a->inputs[i];
    return 0;
}

static inline const kl_tensor* kl_output(const kl_args* a, const char* name) {
    for (int32_t i = 0; i < a->n_outputs; ++i)
        if (strcmp(a->outputs[i].name, name) == 0) return &a->outputs[i];
    return 0;
}

static inline double kl_param_f64(const kl_args* a, const char* name, double fallback) {
    for (int32_t i = 0; i < a->n_params; ++i)
        if (strcmp(a->params[i].name, name) == 0) return a->params[i].f64;
    return fallback;
}

static inline int64_t kl_param_i64(const kl_args* a, const char* name, int64_t fallback) {
    for (int32_t i = 0; i < a->n_params; ++i)
        if (strcmp(a->params[i].name, name) == 0) return a->params[i].i64;
    return fallback;
}

static inline int64_t kl_dim_value(const kl_args* a, const char* name, int64_t fallback) {
    for (int32_t i = 0; i < a->n_dims; ++i)
        if (strcmp(a->dims[i].name, name) == 0) return a->dims[i].value;
    return fallback;
}

/* Error codes a candidate may return (any non-zero value rejects; these just read better). */
#define KL_OK 0
#define KL_ERR_UNSUPPORTED 1  /* shape or dtype not handled by this candidate */
#define KL_ERR_BAD_ARGS 2     /* missing tensor or param */
#define KL_ERR_LAUNCH 3       /* a device launch failed */

#ifdef __cplusplus
}
#endif

#endif /* KLOOP_KERNEL_H */
