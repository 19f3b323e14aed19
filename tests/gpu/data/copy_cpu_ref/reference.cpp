// CPU reference of the copy op: a CUDA candidate checked against host code (the runner runs it
// on its host executor; the job's reference_device is "cpu").
#include <cstring>

#include "kloop/kernel.h"

extern "C" int copy_ref(const kl_args* a) {
    const kl_tensor* x = kl_input(a, "x");
    const kl_tensor* y = kl_output(a, "y");
    if (x == nullptr || y == nullptr) return KL_ERR_BAD_ARGS;
    std::memcpy(y->data, x->data, static_cast<std::size_t>(x->shape[0]) * sizeof(float));
    return KL_OK;
}
