// kloop backend/cpu: the CPU backend — C++ sources compiled by c++ into a shared object that
// kloop-runner loads (backend.hpp's interface; cpu_builder does the compiling).
#pragma once

#include "backend/backend.hpp"

namespace kloop::backend::cpu {

[[nodiscard]] const op_backend& cpu_backend();

}  // namespace kloop::backend::cpu
