// kloop runner (internal): checked calls and their raw facts.
#include "runner/call_checks.hpp"

#include <algorithm>

#include "check/comparison.hpp"
#include "core/thread_pool.hpp"
#include "runner/op_timings.hpp"

namespace kloop::runner {

using nlohmann::json;

json red_zone_json(const std::vector<red_zone_violation>& v) {
    json a = json::array();
    for (const auto& r : v) a.push_back({{"name", r.name}, {"byte_offset", r.byte_offset}});
    return a;
}

json changed_inputs_json(const std::vector<input_change>& v) {
    json a = json::array();
    for (const auto& c : v) a.push_back({{"name", c.name}, {"first_changed", c.first_changed}});
    return a;
}

json compare_json(const call_buffers& cand, const call_buffers& ref) {
    json outs = json::array();
    const auto& plan = cand.get_plan();
    for (std::size_t i = 0; i < plan.outputs.size(); ++i) {
        const auto& t = plan.outputs[i];
        const auto m = check::compare_outputs(t.type, cand.get_output(i).data(), ref.get_output(i).data(),
                                              t.numel(), t.tol);
        // The reference's own NaN/Inf count is m.ref_nonfinite: the comparison classifies every
        // reference element already (this used to be a second pass, reference against itself).
        outs.push_back({{"name", t.name}, {"metrics", m}, {"reference_nonfinite", m.ref_nonfinite}});
    }
    return outs;
}

json call_facts(const call_outcome& out, const call_buffers& cand, const call_buffers& ref, int ref_rc) {
    json j = {{"return_code", out.return_code},
              {"reference_return_code", ref_rc},
              {"changed_inputs", changed_inputs_json(cand.find_changed_inputs())},
              {"red_zone_violations", red_zone_json(cand.find_red_zone_violations())},
              {"outputs", compare_json(cand, ref)}};
    if (!out.device_error.empty()) j["device_error"] = out.device_error;
    if (!out.census.is_null()) j["census"] = out.census;  // kernels CUPTI saw (check/census_rules.hpp)
    return j;
}

bool outputs_bitwise_equal(const call_buffers& a, const call_buffers& b) {
    for (std::size_t i = 0; i < a.get_plan().outputs.size(); ++i) {
        const std::size_t bytes = a.get_output(i).bytes();
        if (parallel_first_difference(a.get_output(i).data(), b.get_output(i).data(), bytes) != bytes) return false;
    }
    return true;
}

call_outcome run_checked(executor_base& exec, entry_fn f, call_buffers& buf) {
    buf.prepare();
    const auto out = exec.invoke(f, buf.get_args());
    if (out.device_error.empty()) buf.collect();
    return out;
}

call_preparation::call_preparation(const bench_item& b, const call_plan& plan)
    : m_seed(derive_seed(b.seed, "prepare")),
      m_draw(derive_seed(b.seed, "check-draw")),
      m_check_every(b.check_every),
      m_tail_checks(b.tail_checks),
      m_perturb(b.perturb_elements) {
    for (const auto& t : plan.inputs) m_has_inout = m_has_inout || t.inout;
}

void call_preparation::before_call(call_buffers& set, const std::function<void()>& flush) {
    op_timings::scope timed(op_timings::process(), "phase:prepare");
    if (m_has_inout) set.restore_inout_inputs();
    set.prepare_call();
    if (flush) flush();
    set.perturb_inputs(derive_seed(m_seed, std::to_string(m_calls++)), m_perturb);
}

bool call_preparation::draw_checked(std::size_t sample) {
    // One draw per call whatever the outcome, so the stream does not depend on what was checked.
    const double u = static_cast<double>(m_draw.next_u64() >> 11) * 0x1.0p-53;
    if (m_check_every <= 0) return false;
    const double p = std::min(1.0 / m_check_every, static_cast<double>(m_tail_checks) / static_cast<double>(sample + 1));
    return u < p;
}

json guard_facts(const call_outcome& out, call_buffers& set) {
    op_timings::scope timed(op_timings::process(), "phase:guards");
    set.collect_guards();
    const auto red = set.find_red_zone_violations();
    const auto changed = set.guards_cover_inputs() ? set.find_changed_inputs() : std::vector<input_change>{};
    if (red.empty() && changed.empty()) return nullptr;
    return {{"return_code", out.return_code},
            {"guard_only", true},
            {"changed_inputs", changed_inputs_json(changed)},
            {"red_zone_violations", red_zone_json(red)},
            {"outputs", json::array()}};
}

json checked_facts(const call_outcome& out, call_buffers& set, call_buffers& ref, const executors& ex, entry_fn reference) {
    op_timings::scope timed(op_timings::process(), "phase:checked_call");
    int ref_rc = 0;
    if (set.can_check_on_device_with(ref)) {
        // Both sides on one device: only the outputs cross to the host (call_buffers).
        set.collect_for_check();
        op_timings::scope timed_reference(op_timings::process(), "phase:reference");
        ref.take_inputs_on_device(set);
        const auto r = ex.reference.invoke(reference, ref.get_args());
        if (r.device_error.empty()) ref.collect_outputs();
        ref_rc = r.device_error.empty() ? r.return_code : -1;
    } else {
        set.collect();
        ref.copy_inputs_from(set);
        op_timings::scope timed_reference(op_timings::process(), "phase:reference");
        ref_rc = run_reference(ex.reference, reference, ref);
    }
    op_timings::scope timed_compare(op_timings::process(), "phase:compare");
    return call_facts(out, set, ref, ref_rc);
}

int run_reference(executor_base& exec, entry_fn f, call_buffers& ref) {
    ref.poison_outputs();
    const auto out = run_checked(exec, f, ref);
    return out.device_error.empty() ? out.return_code : -1;
}

}  // namespace kloop::runner
