// kloop loop: opening a workspace (see loop_session.hpp).
#include "loop/loop_session.hpp"

#include <fmt/format.h>

#include "core/error.hpp"
#include "loop/evaluation_marker.hpp"
#include "loop/fingerprint.hpp"
#include "report/opt_log.hpp"
#include "loop/ranking.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

iteration_record load_iteration(const workspace& ws, int n) {
    const auto file = ws.iteration_dir(n) / "benchmark_result.json";
    const auto j = read_record(file, "kloop.iteration");
    try {
        auto r = iteration_record_from_json(j.at("iteration"));
        if (r.number != n)
            throw usage_error(fmt::format("workspace file '{}' records iteration {}, not {}", file.string(), r.number, n));
        return r;
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("workspace file '{}' is malformed: {}", file.string(), e.what()));
    } catch (const std::invalid_argument& e) {
        throw usage_error(fmt::format("workspace file '{}' is malformed: {}", file.string(), e.what()));
    }
}

loop_session open_session(const fs::path& root, access a, record_origin origin, std::shared_ptr<workspace_lock> held) {
    loop_session s{workspace(root), {}, {}, nullptr, std::move(origin), {}};
    const auto cj = read_record(s.ws.contract_file(), "kloop.contract");
    s.c = contract_from_json(cj, s.ws.root());
    verify_contract(s.c);
    if (held && held->is_held()) s.lock = std::move(held);
    else if (a == access::write) s.lock = std::make_unique<workspace_lock>(s.ws);
    else s.lock = std::make_unique<workspace_lock>(s.ws, std::nothrow);
    platform::posix_command_runner git_runner;  // only for the commit of an abandoned evaluation
    if (s.lock->is_held())
        for (auto& note : record_abandoned_evaluations(s.ws, s.c.op, static_cast<int>(s.ws.list_iterations().size()), s.origin,
                                                  s.c.candidate, git_runner))
            s.repairs.push_back(std::move(note));
    for (int n : s.ws.list_iterations()) s.records.push_back(load_iteration(s.ws, n));
    if (s.records.empty())
        throw usage_error(fmt::format("workspace '{}' has no iter_v0 (the baseline); run `kloop init` again in a fresh "
                                      "workspace",
                                      s.ws.root().string()));
    if (s.lock->is_held()) {
        s.ws.remove_stale_staging();
        const std::string log = fs::exists(s.ws.opt_log_file()) ? platform::read_file(s.ws.opt_log_file()) : std::string();
        const std::string fixed = report::append_missing_rows(log, s.records);
        if (fixed != log) {
            platform::write_file_atomic(s.ws.opt_log_file(), fixed);
            s.repairs.push_back("OPT_LOG.md: added the missing rows of recorded iterations");
        }
    }
    return s;
}

memory_row memory_row_of(const loop_session& s, const iteration_record& r) {
    memory_row m;
    m.run_id = s.c.run_id;
    m.iteration = r.number;
    m.key = s.key();
    m.fingerprint = r.number == 0 ? "baseline" : r.fingerprint;
    m.tags = normalise_tags(r.tags);
    m.status = to_string(r.status);
    m.reason = r.reason;
    if (r.overall) {
        m.speedup = r.overall->speedup;
        m.ci_low = r.overall->ci_low;
        m.ci_high = r.overall->ci_high;
    }
    m.workspace = s.ws.root().string();
    m.recorded_at = r.recorded_at;
    m.override_reason = r.blocked_override;
    return m;
}

int reconcile_memory(const loop_session& s, strategy_memory& memory) {
    int added = 0;
    for (const auto& r : s.records)
        if (!memory.has(s.c.run_id, r.number)) {
            memory.record(memory_row_of(s, r));
            ++added;
        }
    return added;
}

void write_manifest(const loop_session& s, const fs::path& memory_db) {
    json its = json::array();
    for (const auto& r : s.records)
        its.push_back({{"number", r.number}, {"label", version_label(r.number)}, {"status", to_string(r.status)},
                       {"dir", fs::path(s.ws.iteration_dir(r.number)).filename().string()},
                       {"fingerprint", r.fingerprint}, {"git_commit", r.git.commit}, {"recorded_at", r.recorded_at}});
    const auto best = best_version(s.records, ab_target_policy());
    json body = {{"op", s.c.op},
                 {"run_id", s.c.run_id},
                 {"contract", "contract.json"},
                 {"memory_db", memory_db.string()},
                 {"max_iterations", s.c.max_iterations},
                 {"iterations", its},
                 {"best", best ? json(*best) : json(nullptr)}};
    write_record(s.ws.manifest_file(), "kloop.run_manifest", body, s.origin);
}

eval::evaluation_options contract_options(const contract& c, eval::evaluation_options base) {
    base.modes.clear();      // every mode of the contract's spec
    base.gate_k.clear();     // never partial inside the loop
    base.trials = std::max(3, c.trials);
    base.bench = true;
    return base;
}

}  // namespace kloop::loop
