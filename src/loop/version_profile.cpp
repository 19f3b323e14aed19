// kloop loop: profiling a version (see version_profile.hpp).
#include "loop/version_profile.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "eval/evaluator.hpp"
#include "eval/profile_step.hpp"
#include "loop/record/profile_facts.hpp"
#include "report/profile_report.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::loop {

std::string profile_version(iteration_record& r, const spec::op_spec& spec, const std::filesystem::path& source,
                            const std::map<std::string, std::vector<std::string>>& census_kernels,
                            const std::filesystem::path& dir, const eval::evaluation_options& options,
                            const profile_options& profile, platform::command_runner_base& runner) {
    r.suspect = false;
    r.suspect_reasons.clear();
    r.profile_bound.clear();
    r.profile_facts.clear();
    if (const auto why = backend::backend_for(spec).profile_unavailable(spec); !why.empty()) {
        r.profile_status = "n/a";
        r.profile_note = why;
        return "";
    }
    if (!profile.enabled) {
        r.profile_status = "missing";
        r.profile_note = "not profiled (--no-profile)";
        return "";
    }
    if (!r.gate_pass || !r.bench_ok || r.status == iteration_status::rejected) {
        r.profile_status = "missing";
        r.profile_note = "not profiled: no green gate and timed bench";
        return "";
    }
    eval::profile_step_request req;
    req.sets = profile.sets;
    req.timeout_s = profile.timeout_s;
    req.out_dir = dir;
    for (const auto& m : spec.modes) {
        eval::profile_target t;
        t.mode = m.name;
        t.shape = eval::default_profile_shape(spec, m.name);
        for (const auto& b : r.bench)
            if (b.mode == t.mode && b.shape == t.shape && b.s.median > 0) t.measured_ns = b.s.median * 1e9;
        if (auto it = census_kernels.find(m.name); it != census_kernels.end()) t.kernel_names = it->second;
        req.targets.push_back(std::move(t));
    }
    platform::scoped_temp_dir scratch("kloop-profile");
    const eval::evaluation_context ctx{spec, source, options, runner, platform::cache_dir(), scratch.path()};
    eval::profile_step_result res;
    try {
        res = eval::run_profile_step(ctx, req);
        report::write_profile_summary(req.out_dir, res);
    } catch (const error& e) {
        if (e.get_code() == exit_code::interrupted) throw;
        r.profile_status = "failed";
        r.profile_note = e.what();
        return "profile failed: " + r.profile_note;
    }
    r.profile_status = res.status;
    r.profile_note = res.note;
    r.profile_bound = res.bound;
    r.suspect = res.suspect;
    r.suspect_reasons = res.suspect_reasons;
    r.profile_facts = profile_facts_of(res);
    if (res.suspect)
        r.warnings.push_back("SUSPECT — cannot be promoted until re-checked: " + fmt::format("{}", fmt::join(res.suspect_reasons, "; ")));
    if (res.status == "unavailable" || res.status == "failed")
        return fmt::format("profile {}: {} — timing only", res.status, res.note);
    return fmt::format("profile {}: {}", res.status, res.note);
}

}  // namespace kloop::loop
