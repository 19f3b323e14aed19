// kloop backend/cuda: the `nvcc -Xptxas -v` report, parsed (host-only; no CUDA headers).
//
// Responsibility: turn ptxas's verbose output into per-kernel resource usage — registers,
// barriers, static shared memory, stack frame, spill stores/loads, cumulative stack, constant
// memory per bank — so every build record says what the compiler did with each kernel (spills
// and local-memory arrays are the first thing a reviewer looks for). The format (CUDA 13.0,
// stderr; see docs/cuda.md and tests/data/ptxas/):
//
//   ptxas info    : Compiling entry function '_Z6copy_kPKfPfl' for 'sm_90'
//   ptxas info    : Function properties for _Z6copy_kPKfPfl
//       80 bytes stack frame, 76 bytes spill stores, 76 bytes spill loads
//   ptxas info    : Used 32 registers, used 1 barriers, 80 bytes cumulative stack size, 4096 bytes smem
//
// Older toolkits append ", 368 bytes cmem[0]" to the "Used" line and omit "used N barriers", so
// every field is matched on its own. "Function properties for X" without a preceding
// "Compiling entry function 'X'" is a non-inlined device function: reported separately. A kernel
// compiled for two targets appears once per target.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kloop::backend::cuda {

struct ptxas_kernel {
    std::string name;        // as ptxas prints it (mangled for C++ kernels)
    std::string demangled;   // abi::__cxa_demangle of name, or name itself
    std::string target;      // "sm_90", "sm_90a"
    int registers = -1;      // -1: not reported
    int barriers = -1;
    std::int64_t smem_bytes = 0;              // static shared memory (dynamic smem is a launch parameter)
    std::int64_t stack_frame_bytes = 0;
    std::int64_t spill_store_bytes = 0;
    std::int64_t spill_load_bytes = 0;
    std::int64_t cumulative_stack_bytes = 0;
    std::map<int, std::int64_t> cmem_bytes;   // constant bank -> bytes (older toolkits)

    // Spills, or a stack frame without spills (a run-time-indexed local array).
    [[nodiscard]] bool uses_local_memory() const {
        return spill_store_bytes > 0 || spill_load_bytes > 0 || stack_frame_bytes > 0;
    }
};

struct ptxas_function {      // a non-entry (device) function with its own frame
    std::string name;
    std::string demangled;
    std::int64_t stack_frame_bytes = 0;
    std::int64_t spill_store_bytes = 0;
    std::int64_t spill_load_bytes = 0;
};

struct ptxas_report {
    std::vector<ptxas_kernel> kernels;          // in the order ptxas compiled them
    std::vector<ptxas_function> device_functions;
    std::int64_t gmem_bytes = 0;
    std::vector<std::string> notes;             // ptxas warnings and "Potential Performance Loss" infos

    [[nodiscard]] bool empty() const { return kernels.empty(); }
    [[nodiscard]] bool has_spills() const;
    // First kernel named `name` (mangled or demangled); nullptr when none.
    [[nodiscard]] const ptxas_kernel* find(std::string_view name) const;

    // {"kernels":[{name, demangled, target, registers, barriers, smem_bytes, stack_frame_bytes,
    //  spill_store_bytes, spill_load_bytes, cumulative_stack_bytes, cmem_bytes:{"0":368}}],
    //  "device_functions":[…], "gmem_bytes":…, "notes":[…]}
    [[nodiscard]] nlohmann::json to_json() const;
    [[nodiscard]] static ptxas_report from_json(const nlohmann::json& j);  // throws on a malformed value
};

// Parses ptxas -v output (other compiler output mixed in is ignored). Never throws.
[[nodiscard]] ptxas_report parse_ptxas_output(std::string_view text);

// "name: 32 regs, 4096 B smem, 80 B stack, 76/76 B spill st/ld" — one line per kernel.
[[nodiscard]] std::string summarize_kernel(const ptxas_kernel& k);

// The demangled form of a symbol, or the symbol itself.
[[nodiscard]] std::string demangle(const std::string& symbol);

}  // namespace kloop::backend::cuda
