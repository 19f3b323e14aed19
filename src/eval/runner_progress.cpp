// kloop eval: a runner's events as progress, while it runs (see runner_progress.hpp).
#include "eval/runner_progress.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <fstream>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace kloop::eval {

namespace {

std::string step_of(runner::job_phase p) {
    switch (p) {
        case runner::job_phase::gate: return "gate";
        case runner::job_phase::bench: return "bench";
        case runner::job_phase::ab: return "A/B";
        case runner::job_phase::profile: return "profile";
    }
    return "runner";
}

// The stages a runner names (runner.cpp, ab_phase.cpp, the Python worker); any other word is
// shown as "running", so a line cannot put text of its choosing on the user's terminal.
std::string known_stage(const std::string& s) {
    static constexpr std::array<std::string_view, 7> stages = {"reference", "candidate",    "same_address_recheck",
                                                               "determinism", "census_rerun", "warmup",
                                                               "timing"};
    return std::find(stages.begin(), stages.end(), s) != stages.end() ? s : std::string("running");
}

// The item `id` of the job: its subject and its place in its step.
std::optional<progress_update> item_of(const runner::job& job, int id) {
    progress_update u;
    u.step = step_of(job.phase);
    auto label = [&](int call) {
        return call >= 0 && static_cast<std::size_t>(call) < job.calls.size()
                   ? job.calls[static_cast<std::size_t>(call)].get_label()
                   : std::string("?");
    };
    if (job.phase == runner::job_phase::gate) {
        for (std::size_t i = 0; i < job.gate.size(); ++i)
            if (job.gate[i].id == id) {
                u.subject = label(job.gate[i].call) + " trial " + std::to_string(job.gate[i].trial + 1);
                u.index = static_cast<int>(i) + 1;
                u.count = static_cast<int>(job.gate.size());
                return u;
            }
        return std::nullopt;
    }
    for (std::size_t i = 0; i < job.bench.size(); ++i)
        if (job.bench[i].id == id) {
            u.subject = label(job.bench[i].call);
            u.index = static_cast<int>(i) + 1;
            u.count = static_cast<int>(job.bench.size());
            return u;
        }
    return std::nullopt;
}

}  // namespace

std::optional<progress_update> progress_of_event(const runner::job& job, const runner::event& e) {
    const auto id = runner::item_of(e);
    if (!id) return std::nullopt;
    auto u = item_of(job, *id);
    if (!u) return std::nullopt;
    std::visit(
        [&](const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, runner::item_start_event>) {
                u->state = "started";
            } else if constexpr (std::is_same_v<T, runner::stage_event>) {
                u->state = known_stage(x.stage);
            } else if constexpr (std::is_same_v<T, runner::progress_event>) {
                u->state = "timing";
                u->samples = x.samples;
                u->timed_s = x.time_s;
                u->rel_stdev = x.rel_stdev;
                u->target_rel_stdev = x.target_rel_stdev;
            } else if constexpr (std::is_same_v<T, runner::bench_result_event>) {
                u->finished = true;
                u->state = x.failure ? "failed" : "done";
                u->samples = static_cast<int>(x.samples_s.size());
            } else if constexpr (std::is_same_v<T, runner::ab_result_event>) {
                u->finished = true;
                u->state = x.failure ? "failed" : "done";
                u->samples = static_cast<int>(std::min(x.base_samples_s.size(), x.candidate_samples_s.size()));
            } else if constexpr (std::is_same_v<T, runner::profile_result_event>) {
                u->finished = true;
                u->state = x.failure ? "failed" : "done";
            } else if constexpr (std::is_same_v<T, runner::case_result_event>) {
                // The checker judges later; here only that the case ran.
                u->finished = true;
                u->state = "done";
            }
        },
        e);
    return u;
}

runner_follower::runner_follower(std::filesystem::path events_path, const runner::job& job, progress_sink* sink)
    : m_path(std::move(events_path)), m_job(job), m_sink(sink) {
    if (m_sink) m_thread = std::thread([this] { follow(); });
}

runner_follower::~runner_follower() { stop(); }

void runner_follower::stop() {
    if (!m_thread.joinable()) return;
    m_stop = true;
    m_thread.join();
}

void runner_follower::follow() {
    using namespace std::chrono_literals;
    while (!m_stop) {
        read_new_lines();
        std::this_thread::sleep_for(100ms);
    }
    read_new_lines();
}

void runner_follower::read_new_lines() {
    std::ifstream in(m_path, std::ios::binary);
    if (!in) return;
    in.seekg(static_cast<std::streamoff>(m_offset));
    std::string chunk((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (chunk.empty()) return;
    m_offset += chunk.size();
    m_partial += chunk;
    std::size_t start = 0;
    for (std::size_t nl; (nl = m_partial.find('\n', start)) != std::string::npos; start = nl + 1) {
        const auto j = nlohmann::json::parse(m_partial.begin() + static_cast<std::ptrdiff_t>(start),
                                             m_partial.begin() + static_cast<std::ptrdiff_t>(nl), nullptr, false);
        if (j.is_discarded()) continue;
        try {
            if (auto u = progress_of_event(m_job, runner::event_from_json(j))) m_sink->update(*u);
        } catch (const runner::event_error&) {
            // not an event: the session's reader, after the runner exits, says so
        }
    }
    m_partial.erase(0, start);
}

}  // namespace kloop::eval
