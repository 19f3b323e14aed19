// kloop backend/blackbox: reusing a green gate on byte-identical inputs (see gate_reuse.hpp).
#include "backend/blackbox/gate_reuse.hpp"

#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/utc_time.hpp"

namespace kloop::backend::blackbox {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr int gate_reuse_schema = 1;

void add_field(std::string& out, std::string_view s) {
    out += std::to_string(s.size());
    out += ':';
    out += s;
    out += ';';
}

}  // namespace

std::string gate_key(const gate_inputs& in) {
    std::string s;
    add_field(s, "kloop-blackbox-gate-v1");
    add_field(s, in.tree);
    add_field(s, std::to_string(in.argv.size()));
    for (const auto& a : in.argv) add_field(s, a);
    add_field(s, in.cwd);
    add_field(s, std::to_string(in.env.size()));
    for (const auto& [k, v] : in.env) {
        add_field(s, k);
        add_field(s, v);
    }
    add_field(s, in.interpreter);
    add_field(s, fmt::format("{}", in.timeout_s));
    return platform::sha256_hex(s);
}

void store_green_gate(const fs::path& dir, const std::string& key, const eval::repository_gate_run& gate) {
    if (!gate.green || gate.partial) throw std::logic_error("store_green_gate: only a green, full gate is reused");
    const auto& s = gate.summary;
    const json j = {{"schema", gate_reuse_schema},
                    {"key", key},
                    {"ran_at", platform::utc_now_iso8601()},
                    {"wall_s", gate.reused ? gate.reused->wall_s : gate.run.wall_s},
                    {"ended", gate.run.ended},
                    {"summary",
                     {{"line", s.line},
                      {"passed", s.passed},
                      {"skipped", s.skipped},
                      {"xfailed", s.xfailed},
                      {"xpassed", s.xpassed},
                      {"deselected", s.deselected},
                      {"warnings", s.warnings},
                      {"duration_s", s.duration_s ? json(*s.duration_s) : json(nullptr)}}}};
    platform::write_file_atomic(dir / (key + ".json"), j.dump(2) + "\n");
}

std::optional<eval::repository_gate_run> load_green_gate(const fs::path& dir, const std::string& key) {
    std::ifstream in(dir / (key + ".json"));
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    const json j = json::parse(ss.str(), nullptr, false);
    if (j.is_discarded() || !j.is_object() || j.value("schema", 0) != gate_reuse_schema || j.value("key", "") != key)
        return std::nullopt;
    try {
        eval::repository_gate_run g;
        const json& s = j.at("summary");
        g.summary.found = true;
        g.summary.line = s.at("line").get<std::string>();
        g.summary.passed = s.at("passed").get<int>();
        g.summary.skipped = s.at("skipped").get<int>();
        g.summary.xfailed = s.at("xfailed").get<int>();
        g.summary.xpassed = s.at("xpassed").get<int>();
        g.summary.deselected = s.at("deselected").get<int>();
        g.summary.warnings = s.at("warnings").get<int>();
        if (s.at("duration_s").is_number()) g.summary.duration_s = s.at("duration_s").get<double>();
        if (g.summary.passed < 1) return std::nullopt;
        g.reused = eval::reused_gate{key, j.at("ran_at").get<std::string>(), j.at("wall_s").get<double>()};
        g.green = true;
        g.run.started = true;
        g.run.exit_code = 0;
        g.run.ended = "reused: green on the same inputs at " + g.reused->ran_at + " (" + j.at("ended").get<std::string>() + ")";
        return g;
    } catch (const json::exception&) {
        return std::nullopt;
    }
}

}  // namespace kloop::backend::blackbox
