// kloop loop: the search of `kloop tune` (see tune_search.hpp).
#include "loop/tune_search.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kloop::loop {

namespace {

// One search: the points so far, the incumbent, what was tried and which builds were seen.
class search_state {
public:
    search_state(const std::vector<tunable>& tunables, const tune_search_options& options, tune_evaluator& evaluator,
                 const std::function<void(const tune_point&)>& on_point, tune_result& result)
        : m_tunables(tunables), m_budget(options.budget), m_evaluator(evaluator), m_on_point(on_point), m_result(result) {}

    void start(const tune_config& config) {
        const auto built = m_evaluator.build(config, 0);
        if (!built.ok)
            throw build_error(fmt::format("the candidate with its declared values ({}) does not build: {}",
                                          describe_config(m_tunables, config), built.reason));
        m_incumbent = config;
        m_identities[built.identity] = 0;
        m_tried[config] = 0;
        tune_point p;
        p.config = config;
        p.label = describe_config(m_tunables, config);
        p.status = tune_point_status::start;
        p.reason = "the declared values";
        p.became_incumbent = true;
        publish(std::move(p));
    }

    [[nodiscard]] bool tried(const tune_config& config) const { return m_tried.count(config) != 0; }
    [[nodiscard]] int budget_left() const { return m_budget - static_cast<int>(m_result.points.size()); }
    [[nodiscard]] std::size_t lanes() const { return std::max<std::size_t>(1, m_evaluator.lanes()); }
    [[nodiscard]] const tune_config& incumbent() const { return m_incumbent; }

    // Builds the batch's points (lane i: configs[i]), marks duplicates in batch order, races the
    // rest against the incumbent side by side, then moves the incumbent to the FASTER point with
    // the largest speedup. True when it moved. Nothing of a batch is published before all of it
    // is decided; an exception (an interruption) loses the batch in flight.
    bool visit(const std::vector<tune_config>& configs) {
        const std::size_t n = configs.size();
        for (std::size_t i = 0; i < n; ++i) m_tried[configs[i]] = static_cast<int>(m_result.points.size() + i);
        std::vector<point_build> builds(n);
        m_evaluator.in_parallel(n, [&](std::size_t i) { builds[i] = m_evaluator.build(configs[i], i); });

        std::vector<tune_point> points(n);
        std::vector<std::size_t> to_race;
        const std::string incumbent = describe_config(m_tunables, m_incumbent);
        for (std::size_t i = 0; i < n; ++i) {
            auto& p = points[i];
            p.index = static_cast<int>(m_result.points.size() + i);
            p.config = configs[i];
            p.label = describe_config(m_tunables, configs[i]);
            p.incumbent = incumbent;
            if (!builds[i].ok) {
                p.status = tune_point_status::build_failed;
                p.reason = builds[i].reason;
            } else if (auto seen = m_identities.find(builds[i].identity); seen != m_identities.end()) {
                p.status = tune_point_status::duplicate;
                const int twin = seen->second;
                const std::string twin_label = twin < static_cast<int>(m_result.points.size())
                                                   ? m_result.points[static_cast<std::size_t>(twin)].label
                                                   : points[static_cast<std::size_t>(twin) - m_result.points.size()].label;
                p.reason = fmt::format("its build is byte-identical to #{} ({}): not raced", twin, twin_label);
            } else {
                m_identities[builds[i].identity] = p.index;
                to_race.push_back(i);
            }
        }
        std::vector<std::pair<tune_config, std::size_t>> batch;
        for (const std::size_t i : to_race) batch.emplace_back(configs[i], i);
        auto outcomes = m_evaluator.race_batch(m_incumbent, batch);
        if (outcomes.size() != batch.size()) throw std::logic_error("race_batch: one outcome per point");
        std::vector<race_outcome> races(n);
        for (std::size_t j = 0; j < to_race.size(); ++j) races[to_race[j]] = std::move(outcomes[j]);

        const bool against_start = m_incumbent == m_result.start;
        std::optional<std::size_t> best;
        for (const std::size_t i : to_race) {
            auto& p = points[i];
            p.status = races[i].status;
            p.reason = races[i].reason;
            p.verdict = races[i].overall;
            p.device = races[i].device;
            if (against_start && races[i].overall) m_vs_start[configs[i]] = *races[i].overall;
            if (p.status == tune_point_status::faster && p.verdict &&
                (!best || p.verdict->speedup > points[*best].verdict->speedup))
                best = i;
        }
        for (const std::size_t i : to_race)
            if (best && i != *best && points[i].status == tune_point_status::faster)
                points[i].reason = fmt::format("FASTER, but #{} ({}) of the same batch was faster still ({:.3f}x against "
                                               "{:.3f}x): not the incumbent",
                                               points[*best].index, points[*best].label, points[*best].verdict->speedup,
                                               points[i].verdict->speedup);
        if (best) {
            points[*best].became_incumbent = true;
            m_incumbent = configs[*best];
        }
        for (auto& p : points) publish(std::move(p));
        return best.has_value();
    }

    [[nodiscard]] std::optional<measure::ab_result> measured_vs_start(const tune_config& config) const {
        if (auto it = m_vs_start.find(config); it != m_vs_start.end()) return it->second;
        return std::nullopt;
    }

private:
    void publish(tune_point p) {
        m_result.points.push_back(std::move(p));
        if (m_on_point) m_on_point(m_result.points.back());
    }

    const std::vector<tunable>& m_tunables;
    int m_budget;
    tune_evaluator& m_evaluator;
    const std::function<void(const tune_point&)>& m_on_point;
    tune_result& m_result;
    tune_config m_incumbent;
    std::map<tune_config, int> m_tried;
    std::map<std::string, int> m_identities;
    std::map<tune_config, measure::ab_result> m_vs_start;
};

// The next configuration in odometer order (the last tunable fastest); false after the last.
bool next_config(const std::vector<tunable>& tunables, std::vector<std::size_t>& digits) {
    for (std::size_t k = digits.size(); k-- > 0;) {
        if (++digits[k] < tunables[k].values.size()) return true;
        digits[k] = 0;
    }
    return false;
}

void search_exhaustive(const std::vector<tunable>& tunables, search_state& s, tune_result& result) {
    std::vector<std::size_t> digits(tunables.size(), 0);
    std::vector<tune_config> batch;
    bool more = true;
    while (more) {
        tune_config config;
        for (std::size_t k = 0; k < tunables.size(); ++k) config.push_back(tunables[k].values[digits[k]]);
        more = next_config(tunables, digits);
        if (!s.tried(config)) {
            if (s.budget_left() - static_cast<int>(batch.size()) <= 0) {
                if (!batch.empty()) (void)s.visit(batch);
                result.stop_reason = fmt::format("the budget ({} points) is spent", result.budget);
                return;
            }
            batch.push_back(std::move(config));
        }
        if (batch.size() == s.lanes() || (!more && !batch.empty())) {
            (void)s.visit(batch);
            batch.clear();
        }
    }
    result.stop_reason = "every point of the space was visited";
}

void search_coordinate(const std::vector<tunable>& tunables, search_state& s, tune_result& result) {
    for (int round = 1;; ++round) {
        bool moved = false;
        for (std::size_t k = 0; k < tunables.size(); ++k) {
            // The tunable's other values with the others held at the incumbent, a batch at a time
            // (the incumbent may move between batches).
            for (std::size_t v = 0; v < tunables[k].values.size();) {
                std::vector<tune_config> batch;
                for (; v < tunables[k].values.size() && batch.size() < s.lanes(); ++v) {
                    tune_config config = s.incumbent();
                    config[k] = tunables[k].values[v];
                    if (s.tried(config)) continue;
                    if (s.budget_left() - static_cast<int>(batch.size()) <= 0) {
                        if (!batch.empty()) (void)s.visit(batch);
                        result.stop_reason = fmt::format("the budget ({} points) is spent in round {}", result.budget, round);
                        return;
                    }
                    batch.push_back(std::move(config));
                }
                if (!batch.empty()) moved = s.visit(batch) || moved;
            }
        }
        if (!moved) {
            result.stop_reason = fmt::format("round {} moved nothing", round);
            return;
        }
    }
}

bool is_interruption(const error& e) { return e.get_code() == exit_code::interrupted; }

}  // namespace

std::string to_string(search_kind k) {
    switch (k) {
        case search_kind::automatic: return "auto";
        case search_kind::exhaustive: return "exhaustive";
        case search_kind::coordinate: return "coordinate";
    }
    return "auto";
}

search_kind search_kind_from_string(const std::string& s) {
    if (s == "auto") return search_kind::automatic;
    if (s == "exhaustive") return search_kind::exhaustive;
    if (s == "coordinate") return search_kind::coordinate;
    throw usage_error("--search '" + s + "': expected auto, exhaustive or coordinate");
}

std::size_t space_size(const std::vector<tunable>& tunables) {
    std::size_t n = 1;
    for (const auto& t : tunables) n *= t.values.size();
    return n;
}

tune_result run_tune_search(const std::vector<tunable>& tunables, const tune_search_options& options,
                            tune_evaluator& evaluator, const std::function<void(const tune_point&)>& on_point) {
    if (tunables.empty()) throw usage_error("the candidate declares no tunables (a `kloop:tune` marker)");
    if (options.budget < 1) throw usage_error("--budget must be at least 1");
    tune_result result;
    for (const auto& t : tunables) result.names.push_back(t.name);
    result.space_size = space_size(tunables);
    result.budget = options.budget;
    search_kind kind = options.kind;
    if (kind == search_kind::automatic)
        kind = result.space_size <= static_cast<std::size_t>(options.budget) ? search_kind::exhaustive
                                                                             : search_kind::coordinate;
    result.search = to_string(kind);
    result.start = declared_config(tunables);
    result.start_label = describe_config(tunables, result.start);

    search_state s(tunables, options, evaluator, on_point, result);
    s.start(result.start);
    try {
        if (kind == search_kind::exhaustive) search_exhaustive(tunables, s, result);
        else search_coordinate(tunables, s, result);
    } catch (const error& e) {
        if (!is_interruption(e)) throw;
        result.interrupted = true;
        result.stop_reason = "interrupted";
    }
    result.best = s.incumbent();
    result.best_label = describe_config(tunables, result.best);
    if (result.best != result.start && !result.interrupted) {
        result.best_vs_start = s.measured_vs_start(result.best);
        if (!result.best_vs_start) {
            try {
                const auto confirm = evaluator.race(result.start, result.best, 0);
                result.best_vs_start = confirm.overall;
            } catch (const error& e) {
                if (!is_interruption(e)) throw;
                result.interrupted = true;
                result.stop_reason = "interrupted";
            }
        }
    }
    return result;
}

}  // namespace kloop::loop
