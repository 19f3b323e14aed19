// kloop loop: a batch of tune's races as one Slurm job array (see tune_slurm.hpp).
#include "loop/tune_slurm.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "loop/report_page.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kloop::loop {

namespace {

using nlohmann::json;

std::string text_of(const json& j, const char* key) {
    return j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
}

// What the loop's classification reads of one side's evaluation in a `kloop compare` record
// (report/evaluation_json's schema): its disposition and reason, the gate's verdict, runner
// failure and cases, the integrity checks, the candidate build's diagnostics.
eval::evaluation evaluation_of(const json& e) {
    eval::evaluation x;
    const std::string status = text_of(e, "status");
    x.status = status == "passed"         ? eval::disposition::passed
               : status == "build_failed" ? eval::disposition::build_failed
                                          : eval::disposition::gate_failed;
    x.reason = text_of(e, "reason");
    if (e.contains("gate") && e.at("gate").is_object()) {
        const auto& g = e.at("gate");
        x.gate.pass = text_of(g, "status") == "pass";
        x.gate.runner_failure = text_of(g, "runner_failure");
        for (const auto& c : g.value("cases", json::array())) {
            eval::case_report r;
            r.mode = text_of(c, "mode");
            r.shape = text_of(c, "shape");
            r.trial = c.value("trial", 0);
            r.pass = text_of(c, "status") == "pass";
            r.reason = text_of(c, "reason");
            x.gate.cases.push_back(std::move(r));
        }
    }
    for (const auto& c : e.value("integrity", json::array())) {
        const std::string st = text_of(c, "status");
        x.integrity.push_back({text_of(c, "name"),
                               st == "pass"   ? eval::check_status::pass
                               : st == "warn" ? eval::check_status::warn
                               : st == "fail" ? eval::check_status::fail
                                              : eval::check_status::skipped,
                               text_of(c, "detail")});
    }
    if (e.contains("build") && e.at("build").is_object() && e.at("build").contains("candidate") &&
        e.at("build").at("candidate").is_object()) {
        const auto& b = e.at("build").at("candidate");
        x.candidate_build.ok = b.value("ok", false);
        x.candidate_build.diagnostics = text_of(b, "diagnostics");
    }
    return x;
}

}  // namespace

eval::ab_evaluation race_from_record(const nlohmann::json& record) {
    auto ab = ab_from_json(record);
    if (record.contains("evaluations") && record.at("evaluations").is_object()) {
        const auto& ev = record.at("evaluations");
        if (ev.contains("base") && ev.at("base").is_object()) ab.base = evaluation_of(ev.at("base"));
        if (ev.contains("candidate") && ev.at("candidate").is_object()) ab.candidate = evaluation_of(ev.at("candidate"));
    }
    return ab;
}

slurm_batch_outcome race_batch_on_slurm(const std::filesystem::path& spec_file, const std::vector<slurm_race>& races,
                                        const std::vector<std::string>& forwarded, const platform::slurm_options& options,
                                        platform::command_runner_base& commands) {
    std::vector<platform::slurm_task> tasks;
    for (std::size_t i = 0; i < races.size(); ++i) {
        platform::slurm_task t;
        t.record = options.state_dir / fmt::format("race-{}.json", i);
        t.argv = {platform::self_exe_path().string(), "compare", spec_file.string(), "--base", races[i].base.string(),
                  "--candidate", races[i].candidate.string(), "--json-out", t.record.string()};
        t.argv.insert(t.argv.end(), forwarded.begin(), forwarded.end());
        tasks.push_back(std::move(t));
    }
    const auto out = platform::run_slurm_array(tasks, options, commands);
    slurm_batch_outcome r;
    r.job_ids = out.job_ids;
    r.resumed = out.resumed;
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        slurm_race_result x;
        const auto& t = out.tasks[i];
        x.device = (t.device.empty() ? std::string("no GPU") : t.device) + (t.host.empty() ? "" : " on " + t.host);
        if (t.done) {
            try {
                x.ab = race_from_record(nlohmann::json::parse(platform::read_file(tasks[i].record)));
            } catch (const std::exception& e) {
                x.missing = fmt::format("its record '{}' does not parse: {}", tasks[i].record.string(), e.what());
            }
        } else {
            x.missing = "it wrote no record" + (t.output_tail.empty() ? std::string() : ": " + t.output_tail);
        }
        r.races.push_back(std::move(x));
    }
    return r;
}

}  // namespace kloop::loop
