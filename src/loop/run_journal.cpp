// kloop loop: the journal of an unattended run (see run_journal.hpp).
#include "loop/run_journal.hpp"

#include <fmt/format.h>

#include <array>
#include <utility>

#include "core/error.hpp"

namespace fs = std::filesystem;
using nlohmann::json;

namespace kloop::loop {

namespace {

constexpr std::array<std::pair<attempt_phase, const char*>, 8> k_phases = {{
    {attempt_phase::proposing, "proposing"},
    {attempt_phase::submitted, "submitted"},
    {attempt_phase::iterated, "iterated"},
    {attempt_phase::refused, "refused"},
    {attempt_phase::failed, "failed"},
    {attempt_phase::interrupted, "interrupted"},
    {attempt_phase::done, "done"},
    {attempt_phase::tampered, "tampered"},
}};

constexpr const char* k_kind = "kloop.run";

}  // namespace

std::string to_string(attempt_phase p) {
    for (const auto& [v, name] : k_phases)
        if (v == p) return name;
    return "?";
}

attempt_phase attempt_phase_from_string(const std::string& s, const std::string& file_for_messages) {
    for (const auto& [v, name] : k_phases)
        if (s == name) return v;
    throw usage_error(fmt::format("{}: unknown attempt phase '{}'", file_for_messages, s));
}

int run_journal::trailing_failures() const {
    int n = 0;
    for (auto it = attempts.rbegin(); it != attempts.rend(); ++it) {
        if (it->phase != attempt_phase::failed && it->phase != attempt_phase::refused) break;
        ++n;
    }
    return n;
}

run_attempt& run_journal::add(int iteration, const std::string& now) {
    run_attempt a;
    a.number = attempts.empty() ? 1 : attempts.back().number + 1;
    a.iteration = iteration;
    a.started_at = now;
    attempts.push_back(a);
    return attempts.back();
}

fs::path run_dir(const workspace& ws) { return ws.root() / "run"; }
fs::path journal_file(const workspace& ws) { return run_dir(ws) / "run.json"; }
fs::path attempt_dir(const workspace& ws, int attempt) { return run_dir(ws) / fmt::format("attempt-{:03}", attempt); }

json to_json(const run_attempt& a) {
    return {{"number", a.number},
            {"iteration", a.iteration},
            {"lane", a.lane},
            {"round", a.round},
            {"phase", to_string(a.phase)},
            {"reason", a.reason},
            {"iteration_status", a.iteration_status},
            {"proposer", a.proposer},
            {"proposer_wall_s", a.proposer_wall_s},
            {"started_at", a.started_at},
            {"ended_at", a.ended_at}};
}

run_journal read_journal(const workspace& ws) {
    run_journal j;
    const auto file = journal_file(ws);
    if (!fs::exists(file)) return j;
    const auto rec = read_record(file, k_kind);
    try {
        for (const auto& a : rec.at("attempts")) {
            run_attempt x;
            x.number = a.at("number").get<int>();
            x.iteration = a.at("iteration").get<int>();
            x.lane = a.value("lane", 0);
            x.round = a.value("round", 0);
            x.phase = attempt_phase_from_string(a.at("phase").get<std::string>(), file.string());
            x.reason = a.value("reason", "");
            x.iteration_status = a.value("iteration_status", "");
            x.proposer = a.value("proposer", "");
            x.proposer_wall_s = a.value("proposer_wall_s", 0.0);
            x.started_at = a.value("started_at", "");
            x.ended_at = a.value("ended_at", "");
            j.attempts.push_back(x);
        }
        j.ended = rec.value("ended", "");
        j.ended_at = rec.value("ended_at", "");
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("{}: malformed run journal: {}", file.string(), e.what()));
    }
    return j;
}

void write_journal(const workspace& ws, const run_journal& j, const record_origin& origin) {
    json attempts = json::array();
    for (const auto& a : j.attempts) attempts.push_back(to_json(a));
    fs::create_directories(run_dir(ws));
    write_record(journal_file(ws), k_kind, {{"attempts", attempts}, {"ended", j.ended}, {"ended_at", j.ended_at}}, origin);
}

}  // namespace kloop::loop
