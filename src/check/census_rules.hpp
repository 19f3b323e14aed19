// kloop check: judging a kernel census — the list of GPU kernels (name, grid, block, duration)
// that CUPTI saw during each checked call of a CUDA candidate (backend/cuda/kernel_census).
//
// Responsibility: host-only rules over recorded kernel lists, so CI tests them without a GPU
// (tests/data/census/). Four named checks, each pass / warn / fail / skipped:
//
//   census_kernel_launched    every checked call launched at least one kernel; a call with none
//                             computed on the host, replayed a cache, or did nothing → fail
//   census_vendor_kernels     no kernel of a vendor library (cuBLAS nvjet_*/xmma/cutlass_NN_,
//                             cuDNN, cuFFT, cuSPARSE, PyTorch ATen, …) → fail: delegation.
//                             A user's own CUTLASS/CuTe/CUB kernels (cutlass::…, cute::…, cub::…)
//                             are allowed; a name shaped like a vendor's (sm90_…) only warns
//   census_kernel_set_stable  the multiset of kernel names is the same on every checked call of
//                             one mode × shape; a change (first-call autotuning, work skipped on
//                             later calls, a path picked by pointer) → warn
//   census_time_vs_event      Σ kernel durations vs the event-timed duration of the same call;
//                             more than 10 % apart (and beyond the event timer's floor) → warn;
//                             the kernels' GPU busy time (the union of their intervals) more than
//                             twice the event time → fail: work provably outside the timed window
//                             (a side stream nobody waits for), or a timer that lies
//
// The census JSON one checked call carries (written by the runner, read here):
//   {"available": true, "kernels": [{"name": "_Z…", "grid": [x,y,z], "block": [x,y,z],
//     "duration_ns": 1234, "stream": 13, …}], "dropped": 0, "event_s": 1.3e-05 (optional)}
//   {"available": false, "reason": "libcupti.so.13: cannot open shared object file"}
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace kloop::check {

struct census_kernel {
    std::string name;       // as CUPTI reports it (mangled for C++ kernels)
    std::string demangled;  // filled by census_call_from_json when empty
    std::array<std::uint32_t, 3> grid{};
    std::array<std::uint32_t, 3> block{};
    double duration_s = 0;
    std::uint32_t stream = 0;
    double start_s = 0, end_s = 0;  // CUPTI timestamps (0: not recorded)
};

struct census_call {
    std::string label;  // "fwd/r512_h1024 trial 0", "… same-address recheck"
    std::string key;    // the mode × shape whose calls must launch the same kernels: "fwd/r512_h1024"
    bool available = false;
    std::string unavailable_reason;
    std::vector<census_kernel> kernels;
    std::uint64_t dropped = 0;         // records CUPTI reported lost: the list may be incomplete
    std::optional<double> event_s;     // the event-timed duration of the same call, when known
    bool event_is_proxy = false;       // event_s is the bench median of the same mode × shape, not
                                       // this call's own: the warn tolerance widens to 25 %
};

// Tolerant reader: missing fields get defaults; a non-object is "unavailable".
[[nodiscard]] census_call census_call_from_json(const nlohmann::json& census, std::string label, std::string key);
[[nodiscard]] nlohmann::json to_json(const census_kernel& k);

// abi::__cxa_demangle, or the name itself when it is not a mangled C++ name.
[[nodiscard]] std::string demangle(std::string_view name);

enum class vendor_match { none, suspicious, vendor };
// Classifies one kernel name (mangled or demangled). `library` names the vendor ("cuBLAS").
[[nodiscard]] vendor_match match_vendor_kernel(std::string_view name, std::string& library);

enum class census_status { pass, warn, fail, skipped };
[[nodiscard]] std::string to_string(census_status s);

struct census_verdict {
    std::string name;  // "census_kernel_launched", ...
    census_status status = census_status::skipped;
    std::string detail;
};

inline constexpr double k_census_time_tolerance = 0.10;     // relative
inline constexpr double k_census_proxy_tolerance = 0.25;    // against a bench median (cold vs warm L2)
inline constexpr double k_census_time_floor_s = 2e-6;       // event pair resolution + launch jitter
inline constexpr double k_census_time_per_kernel_s = 1.5e-6;  // gap between back-to-back kernels
inline constexpr double k_census_span_fail_ratio = 2.0;     // span > 2 x event (+ floor) → fail

[[nodiscard]] census_verdict check_kernel_launched(const std::vector<census_call>& calls);
// PyTorch ATen kernels count as glue, not delegation, while in each mode's heaviest checked call
// (the most kernel time) their time stays within `aten_glue_share` of that call's kernel time
// ([python] aten_glue_share; 0: never): the check then warns and lists them. The heaviest call,
// not every call, because a wrapper's glue costs about the same on every shape (a few index
// kernels) and outweighs the op's own on a launch-bound one (20 tokens), while work done in torch
// grows with the shape; a spec with this setting gates a shape of real size. Other vendor kernels
// always fail.
[[nodiscard]] census_verdict check_vendor_kernels(const std::vector<census_call>& calls, double aten_glue_share = 0);
[[nodiscard]] census_verdict check_kernel_set_stable(const std::vector<census_call>& calls);
[[nodiscard]] census_verdict check_time_vs_event(const std::vector<census_call>& calls);

// The four checks above, in that order. With no calls at all (a CPU candidate) every one is
// skipped; when CUPTI was unavailable on every call they warn (nothing was cross-checked).
[[nodiscard]] std::vector<census_verdict> judge_census(const std::vector<census_call>& calls,
                                                     double aten_glue_share = 0);

}  // namespace kloop::check
