// kloop backend: what the native backends (cpu, cuda) share — the kloop-runner launch and the
// imported-symbols check of a shared object.
//
// Responsibility: the command line of kloop-runner / kloop-runner-cuda for one job (the sibling
// binary beside kloop, --job, --events; the address-space cap on the CPU runner when nothing
// wraps it), and `imported_symbols` over the built library (check/imported_symbols' rules): fail
// for delegation, timers, dlopen, process creation, …; warn for threads and streams; fail when
// the library cannot be read.
#pragma once

#include <filesystem>
#include <string>

#include "backend/backend.hpp"

namespace kloop::backend {

// `tool`: "kloop-runner" or "kloop-runner-cuda".
void launch_native_runner(platform::process_request& req, const launch_inputs& in, const std::string& tool);

[[nodiscard]] eval::integrity_check imported_symbols_check(const std::filesystem::path& library);

// The base of the cpu and cuda backends: a shared object run by kloop-runner (kloop-runner-cuda
// when a side runs on the GPU), screened by its imported symbols.
class native_backend : public op_backend {
public:
    void launch(platform::process_request& req, const launch_inputs& in) const override;
    [[nodiscard]] eval::integrity_check artefact_check(const build_record& candidate) const override;
};

}  // namespace kloop::backend
