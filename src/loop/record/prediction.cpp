// kloop loop/record: prediction claims, parsed and scored (see prediction.hpp).
#include "loop/record/prediction.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/json_number.hpp"
#include "core/text.hpp"
#include "loop/record/iteration_record.hpp"
#include "loop/record/profile_facts.hpp"

namespace kloop::loop {

using nlohmann::json;

namespace {

constexpr std::string_view grammar =
    "one claim per `Prediction: <claim>` line or per bullet under `## Prediction`, a claim being "
    "`speedup A-B` (the overall geomean speedup vs the current best; also `A..B`, `>=A`, `<=B`), "
    "`MODE/SHAPE speedup A-B` (one bench shape), `no change` or `MODE/SHAPE no change` (the verdict is SAME), "
    "or `profile METRIC A-B` (a fact of the candidate's profile)";

void replace_all(std::string& s, std::string_view from, std::string_view to) {
    for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
}

// Lower case, the Unicode comparison signs and dashes spelled in ASCII, `no-change` as two words,
// runs of blanks as one space.
std::string normalised(const std::string& claim) {
    std::string s = lower(trimmed(claim));
    replace_all(s, "\u2265", ">=");
    replace_all(s, "\u2264", "<=");
    replace_all(s, "\u2013", "-");
    replace_all(s, "\u2014", "-");
    s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
    replace_all(s, "no-change", "no change");
    std::string out;
    for (char c : s) {
        if (c == '\t') c = ' ';
        if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
        out += c;
    }
    return trimmed(out);
}

std::optional<double> number_in(std::string t) {
    if (!t.empty() && t.front() == 'x') t.erase(0, 1);
    if (!t.empty() && (t.back() == 'x' || t.back() == '%')) t.pop_back();
    if (t.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(t.c_str(), &end);
    if (end != t.c_str() + t.size() || !std::isfinite(v) || v < 0) return std::nullopt;
    return v;
}

struct range {
    std::optional<double> low, high;
};

// "1.1-1.3", "1.1..1.3", ">=1.1", "<=0.9" (blanks already gone); an error text on failure.
std::optional<range> range_in(const std::string& t, std::string& why) {
    range r;
    if (t.rfind(">=", 0) == 0 || t.rfind("<=", 0) == 0) {
        const auto v = number_in(t.substr(2));
        if (!v) {
            why = "'" + t.substr(2) + "' is not a non-negative number";
            return std::nullopt;
        }
        (t[0] == '>' ? r.low : r.high) = v;
        return r;
    }
    std::size_t sep = t.find("..");
    std::size_t skip = 2;
    if (sep == std::string::npos) {
        sep = t.find('-', 1);
        skip = 1;
    }
    if (sep == std::string::npos) {
        why = "no range: write A-B, A..B, >=A or <=B";
        return std::nullopt;
    }
    r.low = number_in(t.substr(0, sep));
    r.high = number_in(t.substr(sep + skip));
    if (!r.low || !r.high) {
        why = "the bounds of '" + t + "' are not non-negative numbers";
        return std::nullopt;
    }
    if (*r.low > *r.high) {
        why = fmt::format("the range '{}' is empty: {} > {}", t, *r.low, *r.high);
        return std::nullopt;
    }
    return r;
}

bool is_scope(const std::string& s) {
    const auto slash = s.find('/');
    return slash != std::string::npos && slash > 0 && slash + 1 < s.size() && s.find('/', slash + 1) == std::string::npos &&
           s.find(' ') == std::string::npos;
}

bool within(const prediction& p, double v) { return (!p.low || v >= *p.low) && (!p.high || v <= *p.high); }

prediction_score scored(const prediction& p, double measured) {
    prediction_score s;
    s.measured = measured;
    if (within(p, measured)) {
        s.outcome = prediction_outcome::hit;
        s.off_by = 1.0;
        return s;
    }
    s.outcome = prediction_outcome::miss;
    const double bound = p.high && measured > *p.high ? *p.high : p.low.value_or(0);
    if (bound > 0) s.off_by = measured / bound;
    return s;
}

prediction_score unscored(std::string reason) {
    prediction_score s;
    s.reason = std::move(reason);
    return s;
}

std::string not_timed_reason(const iteration_record& r) {
    if (r.status == iteration_status::rejected) return "rejected before timing (" + to_string(r.rejection) + ")";
    return "not timed";
}

// The A/B result of the claim's scope, or the reason there is none.
std::optional<measure::ab_result> measured_verdict(const prediction& p, const iteration_record& r, std::string& why) {
    if (p.scope.empty()) {
        if (!r.overall) why = not_timed_reason(r);
        return r.overall;
    }
    for (const auto& c : r.ab)
        if (c.mode + "/" + c.shape == p.scope) {
            if (!c.verdict) why = "not timed: " + (c.error.empty() ? not_timed_reason(r) : c.error);
            return c.verdict;
        }
    if (r.ab.empty()) {
        why = not_timed_reason(r);
        return std::nullopt;
    }
    std::vector<std::string> shapes;
    for (const auto& c : r.ab) shapes.push_back(c.mode + "/" + c.shape);
    why = fmt::format("no such shape: {} (the A/B timed {})", p.scope, fmt::join(shapes, ", "));
    return std::nullopt;
}

json optional_number(const std::optional<double>& v) { return v ? json_number(*v) : json(nullptr); }
std::optional<double> optional_from(const json& j, const char* key) {
    if (!j.contains(key) || j.at(key).is_null()) return std::nullopt;
    return number_from_json(j.at(key));
}

}  // namespace

std::string to_string(prediction_kind k) {
    switch (k) {
        case prediction_kind::speedup: return "speedup";
        case prediction_kind::no_change: return "no change";
        case prediction_kind::profile: return "profile";
    }
    return "speedup";
}

std::string to_string(prediction_outcome o) {
    switch (o) {
        case prediction_outcome::hit: return "hit";
        case prediction_outcome::miss: return "miss";
        case prediction_outcome::unscored: return "unscored";
    }
    return "unscored";
}

std::string_view prediction_grammar() { return grammar; }

prediction parse_prediction(const std::string& claim, const std::string& file, int line) {
    auto refuse = [&](const std::string& why) {
        return usage_error(fmt::format("proposal '{}' line {}: malformed prediction '{}': {}. Write {}", file, line, trimmed(claim),
                                       why, grammar));
    };
    prediction p;
    p.text = trimmed(claim);
    p.line = line;
    std::string s = normalised(claim);
    auto range_of = [&](const std::string& text) {
        std::string t = text;
        t.erase(std::remove(t.begin(), t.end(), ' '), t.end());
        std::string why;
        const auto r = range_in(t, why);
        if (!r) throw refuse(why);
        p.low = r->low;
        p.high = r->high;
    };
    constexpr std::string_view no_change = "no change";
    if (s.size() >= no_change.size() && s.compare(s.size() - no_change.size(), no_change.size(), no_change) == 0) {
        p.kind = prediction_kind::no_change;
        p.scope = trimmed(s.substr(0, s.size() - no_change.size()));
        if (!p.scope.empty() && !is_scope(p.scope)) throw refuse("'" + p.scope + "' is not MODE/SHAPE");
        return p;
    }
    if (s.rfind("profile ", 0) == 0) {
        p.kind = prediction_kind::profile;
        std::string rest = trimmed(s.substr(8));
        const auto blank = rest.find(' ');
        if (blank == std::string::npos) throw refuse("no range after the metric");
        p.metric = rest.substr(0, blank);
        const auto& known = profile_fact_names();
        if (std::find(known.begin(), known.end(), p.metric) == known.end())
            throw usage_error(fmt::format("proposal '{}' line {}: unknown profile metric '{}' in prediction '{}'; the known "
                                          "metrics are {}",
                                          file, line, p.metric, p.text, fmt::join(known, ", ")));
        range_of(rest.substr(blank + 1));
        return p;
    }
    p.kind = prediction_kind::speedup;
    std::string rest = s;
    if (const auto blank = s.find(' '); blank != std::string::npos && s.rfind("speedup", 0) != 0) {
        p.scope = s.substr(0, blank);
        if (!is_scope(p.scope)) throw refuse("'" + p.scope + "' is not MODE/SHAPE, `speedup`, `profile` or `no change`");
        rest = trimmed(s.substr(blank + 1));
    }
    if (rest.rfind("speedup", 0) != 0) throw refuse("expected `speedup` or `no change`");
    range_of(trimmed(rest.substr(7)));
    if ((p.low && !(*p.low > 0)) || (p.high && !(*p.high > 0))) throw refuse("a speedup bound must be above 0");
    return p;
}

prediction_score score_prediction(const prediction& p, const iteration_record& r) {
    if (p.kind == prediction_kind::profile) {
        if (const auto it = r.profile_facts.find(p.metric); it != r.profile_facts.end()) return scored(p, it->second);
        if (r.profile_facts.empty()) return unscored("no profile (" + r.profile_status + ": " + r.profile_note + ")");
        return unscored("the profile has no " + p.metric);
    }
    std::string why;
    const auto v = measured_verdict(p, r, why);
    if (!v) return unscored(why);
    if (p.kind == prediction_kind::speedup) return scored(p, v->speedup);
    prediction_score s;
    s.measured = v->speedup;
    const bool same = v->verdict == measure::ab_verdict::same;
    s.outcome = same ? prediction_outcome::hit : prediction_outcome::miss;
    s.off_by = same ? 1.0 : v->speedup;
    return s;
}

void score_predictions(iteration_record& r) {
    for (auto& p : r.predictions) p.score = score_prediction(p.claim, r);
}

std::string predictions_brief(const std::vector<scored_prediction>& ps) {
    if (ps.empty()) return "";
    int hits = 0, scored_n = 0;
    for (const auto& p : ps) {
        if (p.score.outcome == prediction_outcome::unscored) continue;
        ++scored_n;
        if (p.score.outcome == prediction_outcome::hit) ++hits;
    }
    const int unscored_n = static_cast<int>(ps.size()) - scored_n;
    std::string out = fmt::format("pred {}/{} hit", hits, scored_n);
    if (unscored_n > 0) out += fmt::format(", {} unscored", unscored_n);
    return out;
}

json to_json(const scored_prediction& p) {
    return {{"text", p.claim.text},
            {"line", p.claim.line},
            {"kind", to_string(p.claim.kind)},
            {"scope", p.claim.scope},
            {"metric", p.claim.metric},
            {"low", optional_number(p.claim.low)},
            {"high", optional_number(p.claim.high)},
            {"outcome", to_string(p.score.outcome)},
            {"measured", optional_number(p.score.measured)},
            {"off_by", optional_number(p.score.off_by)},
            {"reason", p.score.reason}};
}

scored_prediction scored_prediction_from_json(const json& j) {
    scored_prediction p;
    p.claim.text = j.at("text");
    p.claim.line = j.value("line", 0);
    const std::string kind = j.at("kind");
    p.claim.kind = kind == "profile" ? prediction_kind::profile : kind == "no change" ? prediction_kind::no_change : prediction_kind::speedup;
    p.claim.scope = j.value("scope", std::string());
    p.claim.metric = j.value("metric", std::string());
    p.claim.low = optional_from(j, "low");
    p.claim.high = optional_from(j, "high");
    const std::string outcome = j.at("outcome");
    p.score.outcome = outcome == "hit" ? prediction_outcome::hit : outcome == "miss" ? prediction_outcome::miss : prediction_outcome::unscored;
    p.score.measured = optional_from(j, "measured");
    p.score.off_by = optional_from(j, "off_by");
    p.score.reason = j.value("reason", std::string());
    return p;
}

}  // namespace kloop::loop
