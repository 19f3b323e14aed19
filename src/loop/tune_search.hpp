// kloop loop: the search of `kloop tune` over a candidate's tunables.
//
// Responsibility: which configurations are evaluated, in which order, and which one ends as the
// incumbent — host logic only; building, gating and racing are the evaluator's (the real one is
// loop/tune's, over eval::compare_candidates; the tests use a fake). The start (the declared
// values) is the first incumbent, and its build is the first identity seen. Each later point is
// built; a point whose build is byte-identical to one already seen is skipped (duplicate); a build
// that fails, or a gate that is red, marks the point and the search goes on; otherwise the point
// is raced against the incumbent, and only a FASTER verdict makes it the incumbent.
//   exhaustive  every point of the space in odometer order (the last tunable varies fastest), the
//               start first; chosen by default when the space has at most `budget` points. Given
//               explicitly on a larger space, the first `budget` points.
//   coordinate  coordinate descent from the start: for each tunable in turn, try each of its
//               other values with the others held at the incumbent (a configuration tried once is
//               not tried again); a round of all tunables that moves nothing ends the search.
// Lanes: an evaluator with N > 1 lanes (device slots: platform/device_pool) races up to N points
// at once, all against the same incumbent — a batch: the exhaustive search's next N points, the
// coordinate search's next N values of the tunable in turn. A batch's points are built first
// (lane i holds the batch's i-th point), their duplicates marked in batch order, the rest raced
// side by side; the incumbent then moves to the FASTER point with the largest speedup, and a
// FASTER point that was not the largest says so. With one lane every batch is one point: the
// search is the sequential one, race for race.
// The budget counts the configurations visited, the start included (duplicates, red points and
// failed builds too). After the search, when the best was not raced against the start itself,
// one more race (best vs start) measures the interval the end iteration's proposal predicts;
// it is outside the budget. An interruption (kloop::error, exit_code::interrupted) ends the
// search with the points so far and `interrupted` set; the start failing to build throws.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "loop/record/tune_record.hpp"
#include "loop/tunables.hpp"
#include "measure/ab_comparison.hpp"

namespace kloop::loop {

enum class search_kind { automatic, exhaustive, coordinate };
[[nodiscard]] std::string to_string(search_kind k);
[[nodiscard]] search_kind search_kind_from_string(const std::string& s);  // throws kloop::usage_error

struct tune_search_options {
    search_kind kind = search_kind::automatic;
    int budget = 24;
};

// A configuration's build: the identity of what would run (the library's SHA-256, or the
// snapshot's for backends that build no library), or why it did not build.
struct point_build {
    bool ok = false;
    std::string identity;
    std::string reason;
};

// A race of a candidate configuration against the incumbent: both gated, timed interleaved.
struct race_outcome {
    tune_point_status status = tune_point_status::not_faster;  // faster | not_faster | red | build_failed
    std::string reason;
    std::optional<measure::ab_result> overall;
    std::string device;  // the slot it ran on (a GPU's UUID); "" unbound
};

// `lane` (< lanes()) names where the configuration is written and built: one lane per point of a
// batch, so that points raced at once never share a source file.
class tune_evaluator {
public:
    virtual ~tune_evaluator() = default;
    // How many races may run at once.
    [[nodiscard]] virtual std::size_t lanes() const { return 1; }
    // job(i) for every i in [0, n), n <= lanes(), each at once with the others where lanes allow;
    // returns when all are done, rethrowing the first exception one threw. Default: in order.
    virtual void in_parallel(std::size_t n, const std::function<void(std::size_t)>& job) {
        for (std::size_t i = 0; i < n; ++i) job(i);
    }
    [[nodiscard]] virtual point_build build(const tune_config& config, std::size_t lane) = 0;
    [[nodiscard]] virtual race_outcome race(const tune_config& incumbent, const tune_config& candidate, std::size_t lane) = 0;
    // A batch's races against one incumbent, each point with its lane; the outcomes in order.
    // Default: race() of each, in_parallel. An engine that submits a batch at once (Slurm's job
    // array) overrides it.
    [[nodiscard]] virtual std::vector<race_outcome> race_batch(const tune_config& incumbent,
                                                               const std::vector<std::pair<tune_config, std::size_t>>& points) {
        std::vector<race_outcome> out(points.size());
        in_parallel(points.size(), [&](std::size_t j) { out[j] = race(incumbent, points[j].first, points[j].second); });
        return out;
    }
};

// Points in the space: the product of the value-set sizes.
[[nodiscard]] std::size_t space_size(const std::vector<tunable>& tunables);

// Runs the search; `on_point` sees each point once it is decided (to record and show it).
[[nodiscard]] tune_result run_tune_search(const std::vector<tunable>& tunables, const tune_search_options& options,
                                          tune_evaluator& evaluator,
                                          const std::function<void(const tune_point&)>& on_point = {});

}  // namespace kloop::loop
