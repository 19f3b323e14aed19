// kloop eval: judging one checked call.
#include "eval/call_judgement.hpp"

#include <nlohmann/json.hpp>

#include "check/tolerance_judge.hpp"

namespace kloop::eval {

namespace {

const runner::tensor_plan* find_tensor(const std::vector<runner::tensor_plan>& ts, const std::string& name) {
    for (const auto& t : ts)
        if (t.name == name) return &t;
    return nullptr;
}

void first_reason(call_judgement& j, const std::string& why) {
    j.pass = false;
    if (j.reason.empty()) j.reason = why;
}

}  // namespace

call_judgement judge_call(const runner::call_plan& plan, const nlohmann::json& r) {
    call_judgement j;
    j.pass = true;
    if (r.contains("reference_return_code") && r.at("reference_return_code").get<int>() != 0) {
        first_reason(j, "the reference returned " + std::to_string(r.at("reference_return_code").get<int>()) +
                            " (the reference, not the candidate, failed: check the spec)");
        return j;
    }
    if (!r.contains("return_code")) {
        first_reason(j, "no result for this call");
        return j;
    }
    if (r.contains("device_error")) {
        first_reason(j, "device error in the candidate: " + r.at("device_error").get<std::string>());
        return j;
    }
    if (const int rc = r.at("return_code").get<int>(); rc != 0)
        first_reason(j, "the candidate returned " + std::to_string(rc));

    for (const auto& v : r.value("red_zone_violations", nlohmann::json::array())) {
        j.red_zone_damage = true;
        const auto off = v.at("byte_offset").get<std::int64_t>();
        first_reason(j, "wrote outside '" + v.at("name").get<std::string>() + "' (red zone damaged at byte " +
                            std::to_string(off) + (off < 0 ? ", before the buffer)" : ", past the end)"));
    }
    for (const auto& c : r.value("changed_inputs", nlohmann::json::array())) {
        j.inputs_changed = true;
        const auto name = c.at("name").get<std::string>();
        const auto* t = find_tensor(plan.inputs, name);
        const auto idx = c.at("first_changed").get<std::int64_t>();
        first_reason(j, "modified input '" + name + "' (first changed element " +
                            (t ? check::format_index(check::unflatten(idx, t->shape)) : std::to_string(idx)) +
                            "); inputs must stay unchanged unless marked inout");
    }
    // A call's record covers every output of its plan (a guard-only record, made after an
    // unchecked timed call, covers red zones and inputs alone): a record without its
    // comparisons cannot pass.
    if (!r.value("guard_only", false)) {
        const auto outs = r.value("outputs", nlohmann::json::array());
        for (const auto& t : plan.outputs) {
            bool found = false;
            for (const auto& o : outs) found = found || (o.is_object() && o.value("name", std::string()) == t.name);
            if (!found) {
                first_reason(j, "the record of this call has no comparison for output '" + t.name + "'");
                return j;
            }
        }
    }
    for (const auto& o : r.value("outputs", nlohmann::json::array())) {
        output_report rep;
        rep.name = o.at("name").get<std::string>();
        rep.metrics = o.at("metrics").get<check::compare_metrics>();
        const auto* t = find_tensor(plan.outputs, rep.name);
        if (t == nullptr) continue;
        if (o.value("reference_nonfinite", std::int64_t{0}) > 0) {
            rep.pass = false;
            rep.reason = "the reference produced " + std::to_string(o.at("reference_nonfinite").get<std::int64_t>()) +
                         " non-finite values in '" + rep.name + "' (check the reference and the input initialisers)";
        } else {
            const auto verdict = check::judge(rep.metrics, t->tol, t->shape);
            rep.pass = verdict.pass;
            rep.reason = verdict.reason;
            if (!verdict.pass && rep.metrics.nan_count > 0) j.unwritten_outputs = true;
        }
        if (!rep.pass) first_reason(j, "output '" + rep.name + "': " + rep.reason);
        j.outputs.push_back(std::move(rep));
    }
    return j;
}

std::string describe_timed_check(const nlohmann::json& check) {
    const int sample = check.value("sample", 0);
    const std::string call = sample < 0 ? "warm-up call " + std::to_string(-1 - sample) : "timed call " + std::to_string(sample);
    if (check.value("guard_only", false)) return call + " (red zones and inputs)";
    if (check.value("final", false)) return call + " (the final check)";
    return call + " (compared with the reference)";
}

}  // namespace kloop::eval
