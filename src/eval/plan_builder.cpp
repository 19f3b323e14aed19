// kloop eval: spec + options -> runner jobs.
#include "eval/plan_builder.hpp"

#include <algorithm>
#include <random>

#include "core/error.hpp"
#include "core/rng.hpp"
#include "eval/keyword_filter.hpp"

namespace kloop::eval {

namespace {

runner::tensor_plan resolve_tensor(const spec::tensor_spec& t, const spec::dim_env& dims) {
    runner::tensor_plan p;
    p.name = t.name;
    p.type = t.type;
    for (const auto& e : t.shape) p.shape.push_back(e.eval(dims));
    p.init = t.init.text;
    p.inout = t.inout;
    p.tol = t.tol;
    return p;
}

runner::call_plan resolve_call(const spec::mode_spec& m, const std::string& shape, const spec::dim_env& dims) {
    runner::call_plan c;
    c.mode = m.name;
    c.shape = shape;
    c.entry = m.entry;
    c.reference_entry = m.reference_entry.empty() ? m.entry : m.reference_entry;
    c.dims = dims;
    for (const auto& t : m.inputs) c.inputs.push_back(resolve_tensor(t, dims));
    for (const auto& t : m.outputs) c.outputs.push_back(resolve_tensor(t, dims));
    c.params = m.params;
    return c;
}

runner::call_plan resolve_call(const spec::mode_spec& m, const spec::shape_spec& sh) {
    return resolve_call(m, sh.name, sh.dims);
}

std::vector<const spec::mode_spec*> selected_modes(const spec::op_spec& s, const evaluation_options& o) {
    std::vector<const spec::mode_spec*> out;
    if (o.modes.empty()) {
        for (const auto& m : s.modes) out.push_back(&m);
        return out;
    }
    for (const auto& name : o.modes) {
        const auto* m = s.find_mode(name);
        if (m == nullptr) {
            std::string known;
            for (const auto& x : s.modes) known += (known.empty() ? "" : ", ") + x.name;
            throw usage_error("option --mode '" + name + "': the spec has no such mode (modes: " + known + ")");
        }
        out.push_back(m);
    }
    return out;
}

// The bench shapes the options select; every name given must be a bench shape of the spec.
std::vector<const spec::shape_spec*> selected_bench_shapes(const spec::op_spec& s, const evaluation_options& o) {
    std::vector<const spec::shape_spec*> out;
    for (const auto& name : o.bench_shapes) {
        const auto* sh = s.find_shape(name);
        if (sh == nullptr || !sh->bench) {
            std::string known;
            for (const auto& x : s.shapes)
                if (x.bench) known += (known.empty() ? "" : ", ") + x.name;
            throw usage_error("option --shape '" + name + "': the spec has no such bench shape (bench shapes: " + known + ")");
        }
    }
    for (const auto& sh : s.shapes) {
        if (!sh.bench) continue;
        if (!o.bench_shapes.empty() &&
            std::find(o.bench_shapes.begin(), o.bench_shapes.end(), sh.name) == o.bench_shapes.end())
            continue;
        out.push_back(&sh);
    }
    return out;
}

}  // namespace

std::vector<std::uint64_t> gate_seeds(const spec::op_spec& s, int trials, std::uint64_t drawn) {
    std::vector<std::uint64_t> seeds;
    for (int t = 0; t < trials; ++t) {
        if (t < 2) seeds.push_back(s.fixed_seeds[t]);
        else seeds.push_back(drawn + static_cast<std::uint64_t>(t - 2));
    }
    return seeds;
}

call_cost spec_cost(const spec::op_spec& s, const runner::call_plan& plan) {
    call_cost c;
    if (const auto* m = s.find_mode(plan.mode)) {
        if (m->flops) c.flops = static_cast<double>(m->flops->eval(plan.dims));
        if (m->bytes) c.bytes = static_cast<double>(m->bytes->eval(plan.dims));
    }
    return c;
}

std::uint64_t draw_seed() {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}

std::uint64_t held_out_seed(const std::vector<std::uint64_t>& seeds) {
    const std::uint64_t base = seeds.size() > 2 ? seeds[2] : seeds.empty() ? 0 : seeds.back();
    return derive_seed(base, "held-out");
}

std::vector<spec::held_out_shape> draw_gate_held_out(const spec::op_spec& s, const evaluation_options& o,
                                                     const std::vector<std::uint64_t>& seeds) {
    return spec::draw_held_out(s, held_out_seed(seeds), o.held_out);
}

std::string distribution_case_name(const std::string& shape, const std::string& input, const std::string& init_text) {
    return shape + "[" + input + "=" + init_text + "]";
}

std::vector<held_out_call> held_out_calls(const runner::job& gate_job) {
    std::vector<held_out_call> out;
    for (const auto& c : gate_job.calls) {
        if (c.shape.rfind(spec::held_out_prefix, 0) != 0 || c.shape.find('[') != std::string::npos) continue;
        held_out_call h;
        h.mode = c.mode;
        h.shape = c.shape;
        for (const auto& [k, v] : c.dims) h.dims.emplace_back(k, v);
        for (const auto& p : c.params) h.params.push_back({p.name, p.value, p.is_integer});
        out.push_back(std::move(h));
    }
    return out;
}

runner::job build_gate_job(const spec::op_spec& s, const evaluation_options& o,
                           const std::vector<std::uint64_t>& seeds) {
    runner::job j;
    j.phase = runner::job_phase::gate;
    std::optional<keyword_filter> filter;
    if (!o.gate_k.empty()) filter = keyword_filter::parse(o.gate_k);
    const auto held_out = draw_gate_held_out(s, o, seeds);
    int id = 0;
    // A call of a listed distribution runs once per trial seed; a call of a further (adversarial)
    // distribution only with the last seed, the one drawn at check time: it is there to try
    // other magnitudes, which one fresh draw of a whole tensor does, at a third of the cost.
    auto add_cases = [&](runner::call_plan call, bool every_seed) {
        j.calls.push_back(std::move(call));
        const int index = static_cast<int>(j.calls.size()) - 1;
        for (std::size_t t = every_seed ? 0 : seeds.size() - 1; t < seeds.size(); ++t)
            j.gate.push_back({id++, index, static_cast<int>(t), seeds[t]});
    };
    for (const auto* m : selected_modes(s, o)) {
        // One shape: the call with every input's first distribution, then one call per further
        // distribution of an input. A held-out shape runs its base call with the drawn seed only:
        // what it holds out is the shape (and the params), drawn from that seed; the listed
        // shapes try every seed's values.
        auto add_shape = [&](const std::string& name, const spec::dim_env& dims, const std::vector<spec::param_spec>& params,
                             bool every_seed) {
            auto base = resolve_call(*m, name, dims);
            base.params = params;
            add_cases(base, every_seed);
            for (std::size_t i = 0; i < m->inputs.size(); ++i)
                for (const auto& init : m->inputs[i].adversarial) {
                    auto call = base;
                    call.shape = distribution_case_name(name, m->inputs[i].name, init.text);
                    call.inputs[i].init = init.text;
                    add_cases(std::move(call), false);
                }
        };
        for (const auto& sh : s.shapes) {
            if (!sh.gate) continue;
            if (filter && !filter->matches(sh.name)) continue;
            add_shape(sh.name, sh.dims, m->params, true);
        }
        for (const auto& h : held_out) {
            if (filter && !filter->matches(h.name)) continue;
            add_shape(h.name, h.dims, h.params.at(m->name), false);
        }
    }
    if (j.gate.empty())
        throw usage_error("option --gate-k '" + o.gate_k + "': selects no gate shape");
    return j;
}

rotation_plan plan_rotation(std::uint64_t set_bytes, std::uint64_t evict_bytes, int fixed_sets,
                            std::uint64_t memory_budget) {
    rotation_plan r;
    set_bytes = std::max<std::uint64_t>(set_bytes, 1);
    if (fixed_sets > 0) {
        r.input_sets = fixed_sets;
    } else {
        std::uint64_t sets = (evict_bytes + set_bytes - 1) / set_bytes + 1;
        sets = std::min<std::uint64_t>(sets, 64);
        sets = std::min<std::uint64_t>(sets, memory_budget / set_bytes);
        r.input_sets = static_cast<int>(std::max<std::uint64_t>(sets, 2));
    }
    const std::uint64_t covered = static_cast<std::uint64_t>(r.input_sets - 1) * set_bytes;
    r.flush_bytes = covered >= evict_bytes ? 0 : evict_bytes - covered;
    return r;
}

runner::job build_bench_job(const spec::op_spec& s, const evaluation_options& o, std::uint64_t seed,
                            std::uint64_t evict_bytes) {
    runner::job j;
    j.phase = runner::job_phase::bench;
    j.evict_bytes = evict_bytes;
    int id = 0;
    const auto shapes = selected_bench_shapes(s, o);
    for (const auto* m : selected_modes(s, o)) {
        for (const auto* sh : shapes) {
            j.calls.push_back(resolve_call(*m, *sh));
            runner::bench_item b;
            b.id = id++;
            b.call = static_cast<int>(j.calls.size()) - 1;
            b.seed = seed;
            std::uint64_t set_bytes = 0;
            for (const auto* ts : {&j.calls.back().inputs, &j.calls.back().outputs})
                for (const auto& t : *ts) set_bytes += static_cast<std::uint64_t>(t.numel()) * size_bytes(t.type);
            const auto rot = plan_rotation(set_bytes, evict_bytes, o.input_sets);
            b.input_sets = rot.input_sets;
            b.flush_bytes = rot.flush_bytes;
            b.check_every = o.check_every;
            b.tail_checks = o.tail_checks;
            b.stop = o.stop;
            j.bench.push_back(b);
        }
    }
    return j;
}

}  // namespace kloop::eval
