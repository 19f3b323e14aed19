// kloop profile: the summary of one capture — per-kernel facts and diagnosis, totals, the
// dominant kernel, and the roofline of the call — as a record (profile_summary.json).
//
// Responsibility: build the in-memory model from parsed kernels plus optional roofline inputs,
// and its JSON form; its page (profile_summary.md) is report/profile_report's. Pure functions:
// the caller writes the files. The JSON keys are documented in
// docs/profiling.md "profile_summary.json" (schema_version 1); a key is never dropped when a value
// is absent, it is null.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile/diagnosis.hpp"
#include "profile/kernel_profile.hpp"
#include "profile/ncu_details.hpp"
#include "profile/roofline.hpp"

namespace kloop::profile {

inline constexpr int profile_summary_schema_version = 1;

// The op's side of the roofline, for the shape that was profiled.
struct roofline_input {
    std::string shape;                   // the spec's shape name, for the record
    double flops = 0;                    // spec `flops` of one call
    double bytes = 0;                    // spec `bytes` of one call (fewest DRAM bytes)
    bool uses_tensor_cores = false;      // the floor uses the tensor-core rate, else FP32
    std::optional<double> measured_ns;   // kloop's bench median of one call, if it ran
    int calls_profiled = 1;              // calls whose kernels the capture holds (ncu -c)
};

struct summary_input {
    std::vector<kernel_profile> kernels;
    std::optional<roofline_input> roofline;
    // Peaks to use; without them the datasheet entry of the captured device, else no roofline.
    std::optional<device_peaks> peaks;
    std::string source;  // the capture, as the caller wants it recorded (a relative path)
    // ncu's rule results from the details page (optional), matched to kernels by "ID".
    std::vector<ncu_rule_result> rules;
};

struct kernel_entry {
    kernel_profile facts;
    diagnosis diag;
    std::optional<double> share_of_time;  // duration / total duration (0..1)
    std::vector<ncu_rule_result> rules;   // ncu's own advice for this kernel, if given
};

struct roofline_summary {
    std::string shape;
    device_peaks peaks;
    roofline_point point;
    int calls_profiled = 1;
    std::optional<double> profiled_ns;            // sum of kernel durations / calls_profiled
    std::optional<double> profiled_pct_of_floor;
    std::optional<double> measured_ns;
    std::optional<double> measured_pct_of_floor;
    std::optional<double> dram_bytes;             // measured DRAM bytes of one call (ncu)
    bool dram_bytes_derived = false;
    std::optional<double> reread_factor;          // dram_bytes / spec bytes
    double suspect_margin = default_suspect_margin;
    bool profiled_below_floor = false;            // suspect_below_floor on profiled_ns
    bool measured_below_floor = false;            // suspect_below_floor on measured_ns
    std::vector<std::string> notes;
};

struct profile_summary {
    std::string source;
    std::string device_name;
    std::vector<kernel_entry> kernels;            // capture order
    double total_duration_ns = 0;                 // over the kernels with a duration
    std::size_t kernels_with_duration = 0;
    std::optional<double> total_dram_bytes;       // only when every kernel has DRAM bytes
    bool dram_bytes_derived = false;              // some kernel's bytes are rate × duration
    std::optional<std::size_t> dominant;          // index of the longest kernel
    std::optional<roofline_summary> roofline;
    std::vector<std::string> notes;
};

// Throws usage_error for bad roofline inputs (negative flops/bytes, calls_profiled < 1, bad peaks).
[[nodiscard]] profile_summary summarize_profile(const summary_input& in);

[[nodiscard]] nlohmann::json to_json(const profile_summary& s);

// "fwd_kernel" from "<unnamed>::fwd_kernel(const __nv_bfloat16 *, int)": the name up to its
// parameter list, without a leading return type.
[[nodiscard]] std::string short_kernel_name(const std::string& name);

}  // namespace kloop::profile
