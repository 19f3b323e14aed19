// kloop cli: `kloop preflight [--json] [--workspace DIR] [--calibrate]` — GPU, driver, clocks,
// tools (platform/preflight.hpp). Exits 0 whether or not a GPU or a tool is there: absence is a
// finding, printed and recorded, not an error. --calibrate also measures this GPU's attainable
// peaks with the bundled calibration op (eval/calibration.hpp) and caches them for the roofline;
// a calibration that cannot run (no GPU) is an error (exit 3).
#include "cli/preflight_command.hpp"

#include <CLI/CLI.hpp>

#include <algorithm>
#include <ostream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "backend/backend.hpp"
#include "report/preflight_report.hpp"
#include "cli/option_checks.hpp"
#include "core/error.hpp"
#include "eval/calibration.hpp"
#include "eval/evaluator.hpp"
#include "platform/paths.hpp"
#include "spec/spec_loader.hpp"
#include "platform/file_io.hpp"
#include "platform/preflight.hpp"
#include "platform/subprocess.hpp"

namespace kloop::cli {

namespace {

class preflight_command final : public command_base {
protected:
    void do_declare(CLI::App& sub) override {
        sub.add_flag("--json", m_json, "Print the JSON record instead of the Markdown summary");
        sub.add_option("--workspace", m_workspace,
                       "Also write preflight_check.json and preflight_check.md into this directory");
        sub.add_flag("--no-python", m_no_python, "Skip the torch / triton version probes (python imports can be slow)");
        sub.add_flag("--calibrate", m_calibrate,
                     "Also measure this GPU's attainable peaks (copy bandwidth, FP32 rate, mma.sync bf16 rate) with "
                     "the bundled calibration op and cache them for the roofline of `kloop profile` and the loop");
        sub.add_option("--calibrate-max-time", m_calibrate_max_time, "Stopping rule cap per calibration kernel, seconds")
            ->check(seconds_option())
            ->capture_default_str();
    }

    int do_execute(const invocation& inv) override {
        platform::posix_command_runner commands;
        platform::preflight_options o;
        const auto& cuda = backend::backend_for(spec::backend_kind::cuda);
        o.cuda_support_built_in = cuda.built_in();
        o.gpu_probe_argv = cuda.device_probe_command();
        o.query_python = !m_no_python;
        auto report = platform::run_preflight(commands, o);
        report.command_line = inv.argv;
        const auto record = report::to_json(report);
        const auto markdown = report::to_markdown(report);
        if (!m_workspace.empty()) {
            const std::filesystem::path dir(m_workspace);
            platform::write_file_atomic(dir / "preflight_check.json", record.dump(2) + "\n");
            platform::write_file_atomic(dir / "preflight_check.md", markdown);
        }
        if (m_json) inv.out << record.dump(2) << "\n";
        else inv.out << markdown;
        if (m_calibrate) return calibrate(inv, report, commands);
        return static_cast<int>(exit_code::success);
    }

    int calibrate(const invocation& inv, const platform::preflight_report& report, platform::command_runner_base& commands) {
        if (!report.gpu_present || report.gpus.empty())
            throw error(exit_code::gate_red, "--calibrate: no GPU (" + report.gpu_absent_reason + ")");
        const auto spec = spec::load_op_spec(eval::calibration_op_dir());
        platform::scoped_temp_dir scratch("kloop-calibrate");
        eval::evaluation_options o;
        o.stop.max_time_s = m_calibrate_max_time;
        o.stop.min_time_s = std::min(0.2, m_calibrate_max_time);
        const eval::evaluation_context ctx{spec, spec.op_dir / "calibrate.cu", o, commands, platform::cache_dir(),
                                           scratch.path()};
        const auto ev = eval::evaluate(ctx);
        if (ev.status != eval::disposition::passed)
            throw error(exit_code::gate_red, "--calibrate: the calibration op did not pass: " + ev.reason);
        const auto peaks = eval::peaks_from_calibration(ev, report.gpus.front().name);
        eval::save_calibration(peaks, report.created_utc);
        const auto datasheet = profile::datasheet_peaks(peaks.device_name);
        // " (81 % of the datasheet)", or nothing for a device the datasheet table does not know.
        auto pct = [&](double profile::device_peaks::*peak) {
            return datasheet ? fmt::format(" ({:.0f} % of the datasheet)", 100 * peaks.*peak / (*datasheet).*peak) : std::string();
        };
        inv.err << fmt::format("calibrated {}: DRAM copy {:.2f} TB/s{}, FP32 {:.1f} TFLOP/s{}, mma.sync bf16 {:.0f} TFLOP/s{}\n"
                               "cached in {}\n",
                               peaks.device_name, peaks.dram_bytes_per_s * 1e-12,
                               pct(&profile::device_peaks::dram_bytes_per_s),
                               peaks.fp32_flops_per_s * 1e-12,
                               pct(&profile::device_peaks::fp32_flops_per_s),
                               peaks.tensor_flops_per_s * 1e-12,
                               pct(&profile::device_peaks::tensor_flops_per_s),
                               eval::calibration_file(peaks.device_name).string());
        return static_cast<int>(exit_code::success);
    }

private:
    bool m_json = false;
    bool m_no_python = false;
    bool m_calibrate = false;
    double m_calibrate_max_time = 2.0;
    std::string m_workspace;
};

}  // namespace

std::unique_ptr<command_base> make_preflight_command() { return std::make_unique<preflight_command>(); }

}  // namespace kloop::cli
