// kloop runner: JSON (de)serialisation of the runner job.
#include "runner/job.hpp"

#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kloop::runner {

using nlohmann::json;

std::int64_t tensor_plan::numel() const {
    std::int64_t n = 1;
    for (auto d : shape) n *= d;
    return n;
}

std::string to_string(job_phase p) {
    switch (p) {
        case job_phase::gate: return "gate";
        case job_phase::bench: return "bench";
        case job_phase::ab: return "ab";
        case job_phase::profile: return "profile";
    }
    return "?";
}

job_phase job_phase_from_string(const std::string& s) {
    if (s == "gate") return job_phase::gate;
    if (s == "bench") return job_phase::bench;
    if (s == "ab") return job_phase::ab;
    if (s == "profile") return job_phase::profile;
    throw std::runtime_error("job: bad phase '" + s + "'");
}

namespace {

json tolerance_json(const spec::tolerance& t) {
    json j = json::object();
    if (t.atol) j["atol"] = *t.atol;
    if (t.rtol) j["rtol"] = *t.rtol;
    if (t.rel_rms) j["rel_rms"] = *t.rel_rms;
    return j;
}

spec::tolerance tolerance_from(const json& j) {
    spec::tolerance t;
    if (j.contains("atol")) t.atol = j.at("atol").get<double>();
    if (j.contains("rtol")) t.rtol = j.at("rtol").get<double>();
    if (j.contains("rel_rms")) t.rel_rms = j.at("rel_rms").get<double>();
    return t;
}

json tensor_json(const tensor_plan& t) {
    return json{{"name", t.name},   {"dtype", std::string(to_string(t.type))},
                {"shape", t.shape}, {"init", t.init},
                {"inout", t.inout}, {"tolerance", tolerance_json(t.tol)}};
}

tensor_plan tensor_from(const json& j) {
    tensor_plan t;
    t.name = j.at("name").get<std::string>();
    auto dt = dtype_from_string(j.at("dtype").get<std::string>());
    if (!dt) throw std::runtime_error("job: unknown dtype '" + j.at("dtype").get<std::string>() + "'");
    t.type = *dt;
    t.shape = j.at("shape").get<std::vector<std::int64_t>>();
    t.init = j.value("init", "");
    t.inout = j.value("inout", false);
    t.tol = tolerance_from(j.value("tolerance", json::object()));
    return t;
}

}  // namespace

json early_verdict_json(const measure::early_verdict_config& e) {
    return json{{"min_effect", e.min_effect}, {"confidence", e.confidence}, {"first_look", e.first_look},
                {"max_looks", e.max_looks}, {"min_time_s", e.min_time_s}};
}

namespace {

json stop_json(const measure::stopping_config& c) {
    return json{{"min_samples", c.min_samples},
                {"min_time_s", c.min_time_s},
                {"target_rel_stdev", c.target_rel_stdev},
                {"max_time_s", c.max_time_s},
                {"max_samples", c.max_samples},
                {"plateau_window", c.plateau_window},
                {"plateau_max_drift", c.plateau_max_drift}};
}

measure::stopping_config stop_from(const json& j) {
    measure::stopping_config c;
    c.min_samples = j.at("min_samples").get<std::size_t>();
    c.min_time_s = j.at("min_time_s").get<double>();
    c.target_rel_stdev = j.at("target_rel_stdev").get<double>();
    c.max_time_s = j.at("max_time_s").get<double>();
    c.max_samples = j.at("max_samples").get<std::size_t>();
    c.plateau_window = j.value("plateau_window", c.plateau_window);
    c.plateau_max_drift = j.value("plateau_max_drift", c.plateau_max_drift);
    return c;
}

}  // namespace

void to_json(json& j, const job& x) {
    json calls = json::array();
    for (const auto& c : x.calls) {
        json ins = json::array(), outs = json::array(), params = json::array();
        for (const auto& t : c.inputs) ins.push_back(tensor_json(t));
        for (const auto& t : c.outputs) outs.push_back(tensor_json(t));
        for (const auto& p : c.params)
            params.push_back({{"name", p.name}, {"value", p.value}, {"is_integer", p.is_integer}});
        json dims = json::object();
        for (const auto& [k, v] : c.dims) dims[k] = v;
        calls.push_back({{"mode", c.mode},
                         {"shape", c.shape},
                         {"entry", c.entry},
                         {"reference_entry", c.reference_entry},
                         {"dims", dims},
                         {"inputs", ins},
                         {"outputs", outs},
                         {"params", params}});
    }
    json gate = json::array();
    for (const auto& g : x.gate)
        gate.push_back({{"id", g.id}, {"call", g.call}, {"trial", g.trial}, {"seed", g.seed}});
    json bench = json::array();
    for (const auto& b : x.bench) {
        bench.push_back({{"id", b.id},
                         {"call", b.call},
                         {"seed", b.seed},
                         {"input_sets", b.input_sets},
                         {"flush_bytes", b.flush_bytes},
                         {"check_every", b.check_every},
                         {"tail_checks", b.tail_checks},
                         {"perturb_elements", b.perturb_elements},
                         {"warmup_min_calls", b.warmup_min_calls},
                         {"warmup_min_s", b.warmup_min_s},
                         {"timer_min_windows", b.timer_min_windows},
                         {"stop", stop_json(b.stop)}});
        if (const auto& e = b.early_verdict; e.enabled) bench.back()["early_verdict"] = early_verdict_json(e);
    }
    j = json{{"schema_version", x.schema_version},
             {"phase", to_string(x.phase)},
             {"candidate_lib", x.candidate_lib},
             {"reference_lib", x.reference_lib},
             {"base_lib", x.base_lib},
             {"candidate_sha256", x.candidate_sha256},
             {"reference_sha256", x.reference_sha256},
             {"base_sha256", x.base_sha256},
             {"candidate_device", x.candidate_device},
             {"reference_device", x.reference_device},
             {"evict_bytes", x.evict_bytes},
             {"calls", calls},
             {"gate", gate},
             {"bench", bench}};
}

void from_json(const json& j, job& x) {
    x.schema_version = j.at("schema_version").get<int>();
    if (x.schema_version != job_schema_version)
        throw std::runtime_error("job: schema_version " + std::to_string(x.schema_version) +
                                 " is not supported (this runner reads " +
                                 std::to_string(job_schema_version) + ")");
    x.phase = job_phase_from_string(j.at("phase").get<std::string>());
    x.candidate_lib = j.at("candidate_lib").get<std::string>();
    x.reference_lib = j.at("reference_lib").get<std::string>();
    x.base_lib = j.value("base_lib", "");
    x.candidate_sha256 = j.value("candidate_sha256", "");
    x.reference_sha256 = j.value("reference_sha256", "");
    x.base_sha256 = j.value("base_sha256", "");
    if (x.phase == job_phase::ab && x.base_lib.empty()) throw std::runtime_error("job: phase 'ab' needs a base_lib");
    x.candidate_device = j.value("candidate_device", "cpu");
    x.reference_device = j.value("reference_device", "cpu");
    for (const auto* d : {&x.candidate_device, &x.reference_device})
        if (*d != "cpu" && *d != "cuda") throw std::runtime_error("job: unknown device '" + *d + "'");
    x.evict_bytes = j.value("evict_bytes", std::uint64_t{0});
    x.calls.clear();
    for (const auto& c : j.at("calls")) {
        call_plan p;
        p.mode = c.at("mode").get<std::string>();
        p.shape = c.at("shape").get<std::string>();
        p.entry = c.at("entry").get<std::string>();
        p.reference_entry = c.at("reference_entry").get<std::string>();
        for (const auto& [k, v] : c.at("dims").items()) p.dims[k] = v.get<std::int64_t>();
        for (const auto& t : c.at("inputs")) p.inputs.push_back(tensor_from(t));
        for (const auto& t : c.at("outputs")) p.outputs.push_back(tensor_from(t));
        for (const auto& q : c.at("params"))
            p.params.push_back({q.at("name").get<std::string>(), q.at("value").get<double>(),
                                q.at("is_integer").get<bool>(), std::nullopt});
        x.calls.push_back(std::move(p));
    }
    const auto n_calls = static_cast<int>(x.calls.size());
    auto check_call = [&](int call) {
        if (call < 0 || call >= n_calls) throw std::runtime_error("job: call index out of range");
    };
    x.gate.clear();
    for (const auto& g : j.at("gate")) {
        gate_case c{g.at("id").get<int>(), g.at("call").get<int>(), g.at("trial").get<int>(),
                    g.at("seed").get<std::uint64_t>()};
        check_call(c.call);
        x.gate.push_back(c);
    }
    x.bench.clear();
    for (const auto& b : j.at("bench")) {
        bench_item it;
        it.id = b.at("id").get<int>();
        it.call = b.at("call").get<int>();
        check_call(it.call);
        it.seed = b.at("seed").get<std::uint64_t>();
        it.input_sets = b.at("input_sets").get<int>();
        it.flush_bytes = b.at("flush_bytes").get<std::uint64_t>();
        it.check_every = b.at("check_every").get<int>();
        it.tail_checks = b.at("tail_checks").get<int>();
        it.perturb_elements = b.value("perturb_elements", 8);
        it.warmup_min_calls = b.at("warmup_min_calls").get<int>();
        it.warmup_min_s = b.at("warmup_min_s").get<double>();
        it.timer_min_windows = b.value("timer_min_windows", it.timer_min_windows);
        it.stop = stop_from(b.at("stop"));
        if (b.contains("early_verdict")) {
            const auto& e = b.at("early_verdict");
            it.early_verdict.enabled = true;
            it.early_verdict.min_effect = e.at("min_effect").get<double>();
            it.early_verdict.confidence = e.at("confidence").get<double>();
            it.early_verdict.first_look = e.at("first_look").get<int>();
            it.early_verdict.max_looks = e.at("max_looks").get<int>();
            it.early_verdict.min_time_s = e.at("min_time_s").get<double>();
        }
        x.bench.push_back(it);
    }
}

}  // namespace kloop::runner
