// kloop backend/python: the integrity checks only a Python candidate has.
//
// Responsibility: turn what the probe and the worker reported into named checks, which the
// backend (python_backend) adds to the pipeline's (docs/python.md, docs/correctness.md):
//
//   python_source_screen     the static screen of the candidate's source (the probe's "screen"
//                            findings, python/kloop_worker/screen.py): fail for native code
//                            (ctypes), process creation, timers, profiler interfaces, reaching
//                            into the worker, dynamic code, setting numeric flags; warn for
//                            threads and torch.utils.cpp_extension. Stands where a native
//                            candidate has `imported_symbols`.
//   numeric_flags_unchanged  torch's numeric switches (TF32, matmul precision, reduced-precision
//                            reductions, default dtype) after every candidate call of the gate
//                            and the bench: any change fails. Skipped with numpy tensors.
//
// Host-only, no I/O beyond reading the manifest.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/record/evaluation.hpp"
#include "runner/events.hpp"

namespace kloop::backend::python {

// From the candidate's manifest (the library path of its build record).
[[nodiscard]] eval::integrity_check source_screen_check(const std::filesystem::path& candidate_manifest);

// From the worker's events: the start event says which flags were held ("worker".numeric_flags,
// null with numpy tensors); case_result / same_address_recheck / bench_result / checks /
// ab_result carry "numeric_flags_changed" when a call changed one. Several sessions' events
// (gate, bench) may be passed together.
[[nodiscard]] eval::integrity_check numeric_flags_check(const std::vector<const std::vector<runner::event>*>& sessions);

}  // namespace kloop::backend::python
