// kloop runner: where the checker's wall time goes, per kind of operation.
#include "runner/op_timings.hpp"

#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

namespace kloop::runner {

op_timings& op_timings::process() {
    static op_timings totals;
    return totals;
}

op_timings::op_timings() : m_born(std::chrono::steady_clock::now()) {
    if (const char* p = std::getenv("KLOOP_OP_TIMES"); p != nullptr) m_path = p;
}

op_timings::~op_timings() {
    if (m_path.empty()) return;
    nlohmann::json ops = nlohmann::json::object();
    double sum = 0;
    for (const auto& [name, t] : m_totals) {
        ops[name] = {{"count", t.count}, {"seconds", t.seconds}};
        sum += t.seconds;
    }
    const double life = std::chrono::duration<double>(std::chrono::steady_clock::now() - m_born).count();
    std::ofstream out(m_path, std::ios::app);
    out << nlohmann::json{{"lifetime_s", life}, {"timed_s", sum}, {"ops", ops}}.dump() << "\n";
}

void op_timings::add(std::string_view name, double seconds) {
    if (m_path.empty()) return;
    auto it = m_totals.find(name);
    if (it == m_totals.end()) it = m_totals.emplace(std::string(name), total{}).first;
    ++it->second.count;
    it->second.seconds += seconds;
}

}  // namespace kloop::runner
