// Test helper for tests/unit/loop: synthetic iteration records and A/B results.
#pragma once

#include <string>
#include <vector>

#include "eval/ab_evaluation.hpp"
#include "loop/record/iteration_record.hpp"

namespace kloop::loop::testing {

inline measure::sample_summary summary_ms(double median_ms, double mean_ms = -1) {
    measure::sample_summary s;
    s.n = 20;
    s.median = median_ms / 1e3;
    s.mean = (mean_ms < 0 ? median_ms : mean_ms) / 1e3;
    s.stdev = s.median * 0.01;
    s.min = s.median * 0.98;
    s.max = s.median * 1.05;
    s.p10 = s.median * 0.99;
    s.p90 = s.median * 1.02;
    return s;
}

// A record with two bench shapes whose medians are `ms_a` and `ms_b`.
inline iteration_record record(int n, iteration_status st, double ms_a = 1.0, double ms_b = 2.0, double mean_scale = 1.0) {
    iteration_record r;
    r.number = n;
    r.status = st;
    r.gate_pass = st != iteration_status::rejected;
    r.bench_ok = st != iteration_status::rejected;
    if (r.bench_ok) {
        r.bench.push_back({"fwd", "a", summary_ms(ms_a, ms_a * mean_scale)});
        r.bench.push_back({"fwd", "b", summary_ms(ms_b, ms_b * mean_scale)});
    }
    if (st == iteration_status::rejected) r.rejection = rejection_kind::gate;
    r.direction = "change " + std::to_string(n);
    r.expected = "faster";
    r.tags = {"tag" + std::to_string(n)};
    r.fingerprint = "fp" + std::to_string(n);
    r.vs_best = n == 0 ? -1 : 0;
    return r;
}

inline eval::evaluation passed_evaluation() {
    eval::evaluation e;
    e.status = eval::disposition::passed;
    e.gate.pass = true;
    e.candidate_build.ok = true;
    return e;
}

inline eval::ab_evaluation ab_with(measure::ab_verdict v, double speedup, double lo, double hi) {
    eval::ab_evaluation ab{};
    ab.base = passed_evaluation();
    ab.candidate = passed_evaluation();
    ab.ok = true;
    eval::ab_shape_result s;
    s.mode = "fwd";
    s.shape = "a";
    s.ok = true;
    s.base_s = summary_ms(1.0);
    s.candidate_s = summary_ms(1.0 / speedup);
    s.verdict = measure::ab_result{speedup, lo, hi, v};
    ab.shapes.push_back(s);
    ab.overall = measure::ab_result{speedup, lo, hi, v};
    return ab;
}

}  // namespace kloop::loop::testing
