// kloop backend/python: the Python backend — a module (Triton, torch, numpy) "built" as a
// snapshot, a probe and a manifest (python_builder), run by the Python worker
// (`<python> -m kloop_worker`, started through the fork server), checked by its source screen
// and the numeric flags its calls leave behind (python_checks).
#pragma once

#include "backend/backend.hpp"

namespace kloop::backend::python {

[[nodiscard]] const op_backend& python_backend();

}  // namespace kloop::backend::python
