// kloop eval: one Nsight Compute capture (see profile_capture.hpp).
#include "eval/profile_capture.hpp"

#include <chrono>
#include <cstdlib>
#include <regex>

#include <fmt/format.h>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "eval/evaluator.hpp"
#include "eval/plan_builder.hpp"
#include "eval/runner_session.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"

namespace kloop::eval {

namespace fs = std::filesystem;

std::string to_string(profile_set s) {
    switch (s) {
        case profile_set::targeted: return "targeted";
        case profile_set::full: return "full";
        case profile_set::source: return "source";
    }
    return "targeted";
}

std::optional<profile_set> profile_set_from_string(std::string_view s) {
    if (s == "targeted") return profile_set::targeted;
    if (s == "full") return profile_set::full;
    if (s == "source") return profile_set::source;
    return std::nullopt;
}

std::vector<std::string> ncu_set_arguments(profile_set s) {
    switch (s) {
        case profile_set::targeted:
            // The sections the diagnosis reads, plus DRAM bytes by direction (no targeted section
            // collects them; profile/kernel_profile derives the total from the rate otherwise).
            return {"--section", "SpeedOfLight", "--section", "Occupancy", "--section", "LaunchStats",
                    "--section", "MemoryWorkloadAnalysis", "--section", "WarpStateStats", "--section",
                    "SchedulerStats", "--metrics",
                    "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,"
                    "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed"};
        case profile_set::full: return {"--set", "full"};
        case profile_set::source: return {"--section", "SourceCounters", "--import-source", "yes"};
    }
    return {};
}

namespace {

}  // namespace

ncu_diagnosis diagnose_ncu_output(std::string_view output, int exit_code, bool report_written) {
    ncu_diagnosis d;
    const auto lines = split_lines(output);
    std::string first_error;
    bool no_kernels = false;
    for (std::size_t i = 0; i < lines.size(); ++i) {
        const auto& l = lines[i];
        if (l.find("ERR_NVGPUCTRPERM") != std::string::npos) {
            d.outcome = ncu_outcome::no_permission;
            d.message = "ncu has no permission to the GPU's performance counters (ERR_NVGPUCTRPERM): run as root or "
                        "with CAP_SYS_ADMIN, or set NVreg_RestrictProfilingToAdminUsers=0 on the host";
            return d;
        }
        if (l.find("No kernels were profiled") != std::string::npos) no_kernels = true;
        if (no_kernels && l.find("Available Kernels:") != std::string::npos) {
            for (std::size_t k = i + 1; k < lines.size(); ++k) {
                // "  1. fwd_kernel" — numbered names until the next non-matching line.
                const std::string t(trim(lines[k]));
                const auto dot = t.find(". ");
                if (dot == std::string::npos || dot == 0 || t.find_first_not_of("0123456789") != dot) break;
                d.available_kernels.push_back(t.substr(dot + 2));
            }
        }
        if (first_error.empty() && l.rfind("==ERROR==", 0) == 0) first_error = std::string(trim(l.substr(9)));
    }
    if (no_kernels) {
        d.outcome = ncu_outcome::no_kernels;
        d.message = "ncu profiled no kernel: the candidate launched none inside the profiled call, or the kernel "
                    "filter matched none";
        if (!d.available_kernels.empty()) {
            d.message += " (available: ";
            for (std::size_t k = 0; k < d.available_kernels.size(); ++k)
                d.message += (k ? ", " : "") + d.available_kernels[k];
            d.message += ")";
        }
        return d;
    }
    if (!first_error.empty()) {
        d.outcome = ncu_outcome::failed;
        d.message = "ncu: " + first_error;
        return d;
    }
    if (exit_code != 0) {
        d.outcome = ncu_outcome::failed;
        d.message = fmt::format("ncu exited with {}", exit_code);
        return d;
    }
    if (!report_written) {
        d.outcome = ncu_outcome::failed;
        d.message = "ncu wrote no report";
        return d;
    }
    d.outcome = ncu_outcome::ok;
    return d;
}

std::string kernel_filter_regex(const std::vector<std::string>& mangled_names) {
    if (mangled_names.empty()) return "";
    // nvcc names an anonymous namespace _GLOBAL__N__<hash>_<len>_<file>_<hash>, the first hash
    // taken from the source's path: the same file built from another folder (the loop profiles
    // the snapshot in iter_vN/) gets another. Any hex digits match there.
    static const std::regex anonymous(R"(_GLOBAL__N__[0-9a-f]+_)");
    std::string out = "regex:^(";
    for (std::size_t i = 0; i < mangled_names.size(); ++i) {
        if (i) out += '|';
        const auto& name = mangled_names[i];
        std::size_t from = 0;
        for (std::sregex_iterator it(name.begin(), name.end(), anonymous), end;; ++it) {
            const std::size_t to = it == end ? name.size() : static_cast<std::size_t>(it->position());
            for (std::size_t j = from; j < to; ++j) {
                if (std::string_view("\\^$.|?*+()[]{}").find(name[j]) != std::string_view::npos) out += '\\';
                out += name[j];
            }
            if (it == end) break;
            out += "_GLOBAL__N__[0-9a-f]+_";
            from = to + static_cast<std::size_t>(it->length());
        }
    }
    return out + ")$";
}

profile_capture capture_profile(const evaluation_context& ctx, const profile_request& req) {
    profile_capture cap;
    cap.mode = req.mode;
    cap.shape = req.shape;
    cap.set = to_string(req.set);
    const auto t0 = std::chrono::steady_clock::now();
    auto finish = [&](std::string status, std::string reason) {
        cap.status = std::move(status);
        cap.reason = std::move(reason);
        cap.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        return cap;
    };

    // The job first: an unknown mode or shape is the user's error, whatever the machine has.
    evaluation_options opts = ctx.options;
    opts.modes = {req.mode};
    opts.input_sets = 1;
    runner::job job = build_bench_job(ctx.spec, opts, 1, 0);
    runner::bench_item item;
    bool found = false;
    std::string shapes;
    for (const auto& b : job.bench) {
        const auto& call = job.calls[static_cast<std::size_t>(b.call)];
        shapes += (shapes.empty() ? "" : ", ") + call.shape;
        if (call.shape == req.shape) {
            item = b;
            found = true;
        }
    }
    if (!found)
        throw usage_error(fmt::format("--shape '{}': not a bench shape of mode '{}' (bench shapes: {})", req.shape,
                                      req.mode, shapes.empty() ? "none" : shapes));
    job.phase = runner::job_phase::profile;
    job.bench = {item};

    const auto& be = backend::backend_for(ctx.spec);
    if (const auto why = be.profile_unavailable(ctx.spec); !why.empty()) return finish("unavailable", why);
    std::string ncu = req.ncu;
    if (ncu.empty())
        if (const char* e = std::getenv("KLOOP_NCU"); e != nullptr && *e != '\0') ncu = e;
    if (ncu.empty()) ncu = platform::find_tool("ncu");
    if (ncu.empty())
        return finish("unavailable", "ncu (Nsight Compute) not found on PATH, in $CUDA_HOME/bin or /usr/local/cuda/bin: "
                                     "profiling is unavailable, timing only");

    const auto ref_build = build_run_source(ctx, ctx.spec.reference, backend::source_role::reference);
    if (!ref_build.ok) return finish("failed", "the reference failed to build");
    const auto cand_build = build_run_source(ctx, ctx.candidate, backend::source_role::candidate);
    if (!cand_build.ok) return finish("failed", "the candidate failed to build");
    job.candidate_lib = cand_build.library.string();
    job.reference_lib = ref_build.library.string();
    job.candidate_sha256 = cand_build.library_sha256;
    job.reference_sha256 = ref_build.library_sha256;
    job.candidate_device = be.plan(ctx.spec, ctx.candidate, backend::source_role::candidate).device;
    job.reference_device = be.plan(ctx.spec, ctx.spec.reference, backend::source_role::reference).device;

    fs::create_directories(req.out_dir);
    const std::string stem = fmt::format("profile_{}_{}_{}", cap.set, req.mode, req.shape);
    cap.report = req.out_dir / (stem + ".ncu-rep");
    cap.raw_csv = req.out_dir / (stem + ".raw.csv");
    cap.log = req.out_dir / (stem + ".log");
    std::error_code ec;
    fs::remove(cap.report, ec);

    std::vector<std::string> wrapper = {ncu, "--clock-control", "none", "--target-processes", "all",
                                        "--profile-from-start", "off", "--kernel-name-base", "mangled"};
    std::ptrdiff_t filter_at = 0;
    if (const auto k = kernel_filter_regex(req.kernel_names); !k.empty()) {
        filter_at = static_cast<std::ptrdiff_t>(wrapper.size());
        wrapper.push_back("-k");
        wrapper.push_back(k);
    }
    for (auto& a : ncu_set_arguments(req.set)) wrapper.push_back(std::move(a));
    for (auto a : {std::string("-f"), std::string("-o"), (req.out_dir / stem).string()}) wrapper.push_back(std::move(a));
    cap.ncu_argv = wrapper;

    const auto scratch = ctx.scratch_dir / ("profile_" + cap.set);
    fs::create_directories(scratch);
    auto run_once = [&](const std::vector<std::string>& argv, std::string& log) {
        auto s = run_runner(be, job, scratch, req.timeout_s, ctx.commands, argv, ctx.options.max_output_bytes, 0,
                            ctx.options.progress);
        if (s.process.interrupted) throw error(exit_code::interrupted, "interrupted");
        // ncu's complaints are at the end of its output: the last 64 KiB of each stream.
        log = s.process.stdout_tail + s.process.stderr_tail;
        return s;
    };
    std::string log;
    auto session = run_once(wrapper, log);
    // The census names come from the gate's shapes; a kernel only the profiled shape launches (a
    // template picked by size) would be filtered out. The profiler range alone still holds only
    // the candidate's call: retry once without the filter.
    if (filter_at > 0 && diagnose_ncu_output(log, session.process.exit_code, fs::exists(cap.report)).outcome ==
                             ncu_outcome::no_kernels) {
        wrapper.erase(wrapper.begin() + filter_at, wrapper.begin() + filter_at + 2);
        cap.ncu_argv = wrapper;
        const std::string first_log = log;
        session = run_once(wrapper, log);
        platform::write_file_atomic(cap.log, "# kloop: the census kernel filter matched nothing; retried without it. "
                                             "First run:\n" + first_log + "# kloop: second run\n" + log);
    } else {
        platform::write_file_atomic(cap.log, log);
    }
    // `log` is the last run's own output: the diagnosis below judges that run alone.
    for (const auto* r : events_of<runner::profile_result_event>(session.events))
        if (!r->failure) cap.profiled_call_wall_s = r->wall_s;

    if (session.process.timed_out)
        return finish("failed", fmt::format("ncu did not finish within {:.0f} s (each kernel is replayed once per "
                                            "metric pass; raise --profile-timeout)", req.timeout_s));
    const bool written = fs::exists(cap.report);
    const auto diag = diagnose_ncu_output(log, session.process.exit_code, written);
    if (diag.outcome == ncu_outcome::no_permission) return finish("unavailable", diag.message);
    if (diag.outcome != ncu_outcome::ok) {
        std::string why = diag.message;
        if (!session.fatal.empty()) why += "; the runner: " + session.fatal;
        return finish("failed", why);
    }
    if (!cap.profiled_call_wall_s) return finish("failed", "the runner made no profiled call: " + session.describe_failure());

    // Re-read the report as CSV into its own file (never the program's output).
    platform::process_request csv;
    csv.argv = {ncu, "-i", cap.report.string(), "--csv", "--page", "raw"};
    csv.stdout_file = cap.raw_csv;
    csv.stderr_file = req.out_dir / (stem + ".csv.err");
    csv.timeout_s = 300;
    const auto r = ctx.commands.run(csv);
    if (!r.started || r.exit_code != 0) return finish("failed", "ncu -i --csv --page raw: " + r.describe());
    fs::remove(req.out_dir / (stem + ".csv.err"), ec);
    return finish("captured", "");
}

}  // namespace kloop::eval
