// kloop loop: the frozen contract (see contract.hpp).
#include "loop/record/contract.hpp"

#include <algorithm>
#include <chrono>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "spec/spec_loader.hpp"
#include "platform/utc_time.hpp"

namespace kloop::loop {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string relative_or_absolute(const fs::path& p, const fs::path& base) {
    auto rel = fs::path(p).lexically_relative(base);
    return rel.empty() ? p.string() : rel.string();
}

json opt_number(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }
std::optional<double> number_opt(const json& j, const char* key) {
    if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
    return j.at(key).get<double>();
}

// The body without contract_sha256, canonical (sorted keys, no spaces): what the hash covers.
// Paths relative to the workspace are left out, so moving the workspace keeps the hash.
// The baseline's identity. Its local files and the hash over all its sources are there when
// `kloop init` found them (contracts written before they were recorded hash as they did).
json baseline_json(const contract& c) {
    json b = {{"sha256", c.baseline_sha256}, {"git_commit", c.baseline_git_commit}, {"git_dirty", c.baseline_git_dirty}};
    if (!c.baseline_sources_sha256.empty()) {
        b["sources_sha256"] = c.baseline_sources_sha256;
        b["local_files"] = c.baseline_local_files;
    }
    return b;
}

json hashed_body(const contract& c) {
    json frozen = json::array();
    for (const auto& f : c.frozen) frozen.push_back({{"path", f.path}, {"sha256", f.sha256}});
    json shapes = json::array();
    for (const auto& s : c.shapes) shapes.push_back({{"name", s.name}, {"dims", s.dims}, {"gate", s.gate}, {"bench", s.bench}});
    json tols = json::array();
    for (const auto& t : c.tolerances)
        tols.push_back({{"mode", t.mode}, {"output", t.output}, {"atol", opt_number(t.atol)}, {"rtol", opt_number(t.rtol)},
                        {"rel_rms", opt_number(t.rel_rms)}});
    return {{"run_id", c.run_id},
            {"op", c.op},
            {"backend", c.backend},
            {"device", c.device},
            {"shape_set", c.shape_set},
            {"spec_file", c.spec_file},
            {"spec_text", c.spec_text},
            {"frozen", frozen},
            {"shapes", shapes},
            {"tolerances", tols},
            {"seed_policy",
             {{"fixed_seeds", {c.fixed_seeds[0], c.fixed_seeds[1]}},
              {"trials", c.trials},
              {"drawn_trials", c.trials - 2},
              {"note", "trials 0 and 1 use the fixed seeds; the others draw a seed at check time"}}},
            {"max_iterations", c.max_iterations},
            {"target_speedup", opt_number(c.target_speedup)},
            {"baseline", baseline_json(c)},
            {"created_at", c.created_at}};
}

std::string make_run_id(const spec::op_spec& spec) {
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    return platform::sha256_hasher()
        .update_field(spec.name)
        .update_field(std::to_string(now))
        .update_field(std::to_string(::getpid()))
        .update_field(spec.op_dir.string())
        .hex_digest()
        .substr(0, 16);
}

}  // namespace

std::string shape_set_id(const spec::op_spec& spec) {
    std::vector<std::string> parts;
    for (const auto& s : spec.shapes) {
        std::string p = s.name + "{";
        for (const auto& [k, v] : s.dims) p += k + "=" + std::to_string(v) + ",";
        p += std::string("}") + (s.gate ? "g" : "") + (s.bench ? "b" : "");
        parts.push_back(p);
    }
    std::sort(parts.begin(), parts.end());
    platform::sha256_hasher h;
    for (const auto& p : parts) h.update_field(p);
    return h.hex_digest().substr(0, 16);
}

contract make_contract(const contract_inputs& in) {
    if (in.max_iterations < 1)
        throw usage_error(fmt::format("option --max-iterations '{}': the iteration cap must be at least 1", in.max_iterations));
    if (in.target_speedup && !(*in.target_speedup > 1.0))
        throw usage_error(fmt::format("option --target-speedup '{}': must be greater than 1", *in.target_speedup));
    const auto& spec = in.spec;
    contract c;
    c.run_id = make_run_id(spec);
    c.op = spec.name;
    c.backend = spec::to_string(spec.backend);
    c.device = in.device;
    c.shape_set = shape_set_id(spec);
    c.op_dir = spec.op_dir;
    c.spec_file = relative_or_absolute(spec.spec_file, spec.op_dir);
    c.spec_text = platform::read_file(spec.spec_file);
    for (const auto& f : spec.frozen) c.frozen.push_back({relative_or_absolute(f, spec.op_dir), platform::sha256_file(f)});
    // op.toml is hashed as the text the contract keeps, whatever frozen says.
    const bool has_spec = std::any_of(c.frozen.begin(), c.frozen.end(), [&](const frozen_file& f) { return f.path == c.spec_file; });
    if (!has_spec) c.frozen.insert(c.frozen.begin(), {c.spec_file, platform::sha256_hex(c.spec_text)});
    for (const auto& s : spec.shapes) {
        contract_shape cs{s.name, {}, s.gate, s.bench};
        for (const auto& [k, v] : s.dims) cs.dims[k] = v;
        c.shapes.push_back(std::move(cs));
    }
    for (const auto& m : spec.modes)
        for (const auto& o : m.outputs) c.tolerances.push_back({m.name, o.name, o.tol.atol, o.tol.rtol, o.tol.rel_rms});
    c.fixed_seeds[0] = spec.fixed_seeds[0];
    c.fixed_seeds[1] = spec.fixed_seeds[1];
    c.max_iterations = in.max_iterations;
    c.target_speedup = in.target_speedup;
    c.candidate = fs::absolute(in.candidate).lexically_normal();
    c.baseline_sha256 = platform::sha256_file(in.candidate);
    c.baseline_git_commit = in.baseline_git_commit;
    c.baseline_git_dirty = in.baseline_git_dirty;
    c.created_at = platform::utc_now_iso8601();
    return c;
}

json to_json(const contract& c, const fs::path& workspace_root) {
    json j = hashed_body(c);
    j["contract_sha256"] = platform::sha256_hex(hashed_body(c).dump());
    j["op_dir"] = c.op_dir.string();
    j["op_dir_rel"] = relative_or_absolute(c.op_dir, workspace_root);
    j["candidate"] = c.candidate.string();
    j["candidate_rel"] = relative_or_absolute(c.candidate, workspace_root);
    return j;
}

contract contract_from_json(const json& j, const fs::path& workspace_root) {
    contract c;
    try {
        c.run_id = j.at("run_id");
        c.op = j.at("op");
        c.backend = j.at("backend");
        c.device = j.at("device");
        c.shape_set = j.at("shape_set");
        c.spec_file = j.at("spec_file");
        c.spec_text = j.at("spec_text");
        for (const auto& f : j.at("frozen")) c.frozen.push_back({f.at("path"), f.at("sha256")});
        for (const auto& s : j.at("shapes")) {
            contract_shape cs{s.at("name"), {}, s.at("gate"), s.at("bench")};
            for (const auto& [k, v] : s.at("dims").items()) cs.dims[k] = v.get<std::int64_t>();
            c.shapes.push_back(std::move(cs));
        }
        for (const auto& t : j.at("tolerances"))
            c.tolerances.push_back({t.at("mode"), t.at("output"), number_opt(t, "atol"), number_opt(t, "rtol"), number_opt(t, "rel_rms")});
        const auto& sp = j.at("seed_policy");
        c.fixed_seeds[0] = sp.at("fixed_seeds").at(0);
        c.fixed_seeds[1] = sp.at("fixed_seeds").at(1);
        c.trials = sp.at("trials");
        c.max_iterations = j.at("max_iterations");
        c.target_speedup = number_opt(j, "target_speedup");
        c.baseline_sha256 = j.at("baseline").at("sha256");
        c.baseline_git_commit = j.at("baseline").at("git_commit");
        c.baseline_git_dirty = j.at("baseline").at("git_dirty");
        c.baseline_sources_sha256 = j.at("baseline").value("sources_sha256", std::string());
        c.baseline_local_files = j.at("baseline").value("local_files", std::vector<std::string>{});
        c.created_at = j.at("created_at");
        // Prefer the path relative to the workspace (the pair moved together), else the absolute one.
        const fs::path rel_op = workspace_root / j.value("op_dir_rel", std::string());
        c.op_dir = j.contains("op_dir_rel") && fs::exists(rel_op) ? fs::weakly_canonical(rel_op) : fs::path(j.at("op_dir").get<std::string>());
        const fs::path rel_cand = workspace_root / j.value("candidate_rel", std::string());
        c.candidate = j.contains("candidate_rel") && fs::exists(rel_cand) ? fs::weakly_canonical(rel_cand)
                                                                           : fs::path(j.at("candidate").get<std::string>());
        const std::string want = j.at("contract_sha256");
        const std::string got = platform::sha256_hex(hashed_body(c).dump());
        if (want != got)
            throw contract_error(fmt::format("contract '{}' was edited after `kloop init`: recorded contract_sha256 {}, "
                                             "content now hashes to {}",
                                             (workspace_root / "contract.json").string(), want, got));
    } catch (const json::exception& e) {
        throw usage_error(fmt::format("contract '{}' is malformed: {}", (workspace_root / "contract.json").string(), e.what()));
    }
    return c;
}

void verify_contract(const contract& c) {
    for (const auto& f : c.frozen) {
        const fs::path p = c.op_dir / f.path;
        if (!fs::exists(p))
            throw contract_error(fmt::format("frozen file '{}' is missing: the contract holds sha256 {}; restore it "
                                             "(git checkout -- '{}')",
                                             p.string(), f.sha256, p.string()));
        const auto now = platform::sha256_file(p);
        if (now != f.sha256)
            throw contract_error(fmt::format("frozen file '{}' changed since `kloop init`: contract sha256 {}, now {}. "
                                             "Restore it (git checkout -- '{}'); a changed contract needs a new loop "
                                             "(`kloop init` in a new workspace)",
                                             p.string(), f.sha256, now, p.string()));
    }
}

spec::op_spec load_spec(const contract& c) {
    return spec::parse_op_spec(c.spec_text, c.op_dir / c.spec_file, c.op_dir);
}

}  // namespace kloop::loop
