// kloop runner: the events a runner writes and the orchestrator reads (see events.hpp).
#include "runner/events.hpp"

#include <array>
#include <cstdint>
#include <set>
#include <utility>

#include <fmt/format.h>

namespace kloop::runner {

using nlohmann::json;

namespace {

constexpr std::array<std::pair<event_kind, const char*>, 13> k_names = {{
    {event_kind::start, "start"},
    {event_kind::case_start, "case_start"},
    {event_kind::stage, "stage"},
    {event_kind::progress, "progress"},
    {event_kind::case_result, "case_result"},
    {event_kind::bench_start, "bench_start"},
    {event_kind::bench_result, "bench_result"},
    {event_kind::ab_start, "ab_start"},
    {event_kind::ab_result, "ab_result"},
    {event_kind::profile_start, "profile_start"},
    {event_kind::profile_result, "profile_result"},
    {event_kind::fatal, "fatal"},
    {event_kind::done, "done"},
}};

// Reads the fields of one event, each checked for its type; a wrong one names kind and field.
class reader {
public:
    reader(const json& j, event_kind kind) : m_j(j), m_kind(kind) {}

    [[nodiscard]] bool has(const char* field) const {
        m_known.insert(field);
        return m_j.contains(field) && !m_j.at(field).is_null();
    }

    // A field no reader asked for is one the schema does not have (event_schema.json): refused,
    // so that a writer's drift shows at once.
    void refuse_unknown_fields() const {
        for (const auto& [key, value] : m_j.items())
            if (key != "event" && m_known.count(key) == 0)
                throw event_error(fmt::format("a {} event has a field kloop does not know: '{}'", to_string(m_kind), key));
    }

    template <class T>
    [[nodiscard]] T get(const char* field) const {
        m_known.insert(field);
        if (!m_j.contains(field)) fail(field, "is missing");
        return as<T>(field);
    }

    // Required unless the event reports a failed call ("error"): event_schema.json's
    // "required_unless_error".
    template <class T>
    [[nodiscard]] T need(const char* field) const {
        return has("error") ? get_or<T>(field, T{}) : get<T>(field);
    }

    template <class T>
    [[nodiscard]] T get_or(const char* field, T fallback) const {
        return has(field) ? as<T>(field) : std::move(fallback);
    }

    template <class T>
    [[nodiscard]] std::optional<T> maybe(const char* field) const {
        if (!has(field)) return std::nullopt;
        return as<T>(field);
    }

    [[noreturn]] void fail(const char* field, const char* what) const {
        throw event_error(fmt::format("a {} event's '{}' {}", to_string(m_kind), field, what));
    }

private:
    template <class T>
    [[nodiscard]] T as(const char* field) const {
        const json& v = m_j.at(field);
        if constexpr (std::is_same_v<T, bool>) {
            if (!v.is_boolean()) fail(field, "is not true or false");
            return v.get<bool>();
        } else if constexpr (std::is_same_v<T, std::uint64_t>) {
            if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<std::int64_t>() >= 0))
                fail(field, "is not a non-negative integer");
            return v.get<std::uint64_t>();
        } else if constexpr (std::is_integral_v<T>) {
            if (!v.is_number_integer()) fail(field, "is not an integer");
            return v.get<T>();
        } else if constexpr (std::is_same_v<T, double>) {
            if (!v.is_number()) fail(field, "is not a number");
            return v.get<double>();
        } else if constexpr (std::is_same_v<T, std::string>) {
            if (!v.is_string()) fail(field, "is not a string");
            return v.get<std::string>();
        } else if constexpr (std::is_same_v<T, std::vector<double>>) {
            if (!v.is_array()) fail(field, "is not an array of numbers");
            for (const auto& x : v)
                if (!x.is_number()) fail(field, "is not an array of numbers");
            return v.get<std::vector<double>>();
        } else {
            static_assert(std::is_same_v<T, json>);
            return v;
        }
    }

    const json& m_j;
    event_kind m_kind;
    mutable std::set<std::string> m_known;
};

json array_or_empty(const reader& r, const char* field) {
    if (!r.has(field)) return json::array();
    auto v = r.get<json>(field);
    if (!v.is_array()) r.fail(field, "is not an array");
    return v;
}

json object_or_null(const reader& r, const char* field) {
    if (!r.has(field)) return nullptr;
    auto v = r.get<json>(field);
    if (!v.is_object()) r.fail(field, "is not an object");
    return v;
}

std::optional<call_failure> failure_of(const reader& r, bool with_side) {
    call_failure f;
    const bool failed = r.has("error");
    f.where = r.get_or<std::string>("error", "");
    f.sample = r.get_or<int>("sample", 0);
    f.return_code = r.get_or<int>("return_code", 0);
    f.device_error = r.get_or<std::string>("device_error", "");
    f.exception = object_or_null(r, "exception");
    if (with_side) f.side = r.get_or<std::string>("side", "");
    if (!failed) return std::nullopt;
    return f;
}

void put_failure(json& j, const call_failure& f, bool with_side) {
    j["error"] = f.where;
    j["sample"] = f.sample;
    j["return_code"] = f.return_code;
    if (!f.device_error.empty()) j["device_error"] = f.device_error;
    if (!f.exception.is_null()) j["exception"] = f.exception;
    if (with_side && !f.side.empty()) j["side"] = f.side;
}

json with_kind(event_kind k) { return json{{"event", to_string(k)}}; }

json write(const start_event& e) {
    json j = with_kind(event_kind::start);
    j["pid"] = e.pid;
    j["abi"] = e.abi;
    j["schema_version"] = e.schema_version;
    j["phase"] = e.phase;
    if (!e.reference_device.is_null()) j["reference_device"] = e.reference_device;
    if (!e.candidate_device.is_null()) j["candidate_device"] = e.candidate_device;
    if (!e.worker.is_null()) j["worker"] = e.worker;
    return j;
}

json write(const item_start_event& e) {
    json j = with_kind(e.kind);
    j["id"] = e.id;
    return j;
}

json write(const stage_event& e) {
    json j = with_kind(event_kind::stage);
    j["id"] = e.id;
    j["stage"] = e.stage;
    return j;
}

json write(const progress_event& e) {
    json j = with_kind(event_kind::progress);
    j["id"] = e.id;
    j["samples"] = e.samples;
    j["time_s"] = e.time_s;
    if (e.rel_stdev) j["rel_stdev"] = *e.rel_stdev;
    if (e.target_rel_stdev) j["target_rel_stdev"] = *e.target_rel_stdev;
    return j;
}

json write(const case_result_event& e) {
    json j = e.facts.is_object() ? e.facts : json::object();
    j["event"] = to_string(event_kind::case_result);
    j["id"] = e.id;
    return j;
}

json write(const bench_result_event& e) {
    json j = with_kind(event_kind::bench_result);
    j["id"] = e.id;
    if (e.failure) {
        put_failure(j, *e.failure, false);
        return j;
    }
    j["samples_s"] = e.samples_s;
    j["warmup_calls"] = e.warmup_calls;
    j["warmup_s"] = e.warmup_s;
    j["stop_reason"] = e.stop_reason;
    j["input_sets"] = e.input_sets;
    j["flush_bytes"] = e.flush_bytes;
    j["checks"] = e.checks;
    j["checked_calls"] = e.checked_calls;
    j["discarded_samples"] = e.discarded_samples;
    if (!e.sample_info.empty()) j["sample_info"] = e.sample_info;
    if (e.graph_replay_s_per_call) j["graph_replay_s_per_call"] = *e.graph_replay_s_per_call;
    if (!e.graph_replay_samples_s_per_call.empty())
        j["graph_replay_samples_s_per_call"] = e.graph_replay_samples_s_per_call;
    if (e.graph_calls) j["graph_calls"] = *e.graph_calls;
    if (e.graph_kernel_nodes) j["graph_kernel_nodes"] = *e.graph_kernel_nodes;
    if (e.graph_replays) j["graph_replays"] = *e.graph_replays;
    if (!e.graph_replay_error.empty()) j["graph_replay_error"] = e.graph_replay_error;
    if (!e.numeric_flags_changed.is_null()) j["numeric_flags_changed"] = e.numeric_flags_changed;
    return j;
}

json write(const ab_result_event& e) {
    json j = with_kind(event_kind::ab_result);
    j["id"] = e.id;
    j["base_samples_s"] = e.base_samples_s;
    j["candidate_samples_s"] = e.candidate_samples_s;
    if (e.failure) {
        put_failure(j, *e.failure, true);
        return j;
    }
    j["order"] = e.order;
    j["base_checks"] = e.base_checks;
    j["candidate_checks"] = e.candidate_checks;
    j["base_stop_reason"] = e.base_stop_reason;
    j["candidate_stop_reason"] = e.candidate_stop_reason;
    j["stop"] = e.stop;
    j["base_warmup_calls"] = e.base_warmup_calls;
    j["candidate_warmup_calls"] = e.candidate_warmup_calls;
    j["input_sets"] = e.input_sets;
    j["flush_bytes"] = e.flush_bytes;
    j["base_discarded_samples"] = e.base_discarded_samples;
    j["candidate_discarded_samples"] = e.candidate_discarded_samples;
    j["early_verdict"] = e.early_verdict ? json(*e.early_verdict) : json(nullptr);
    if (!e.base_windows_s.empty() || !e.candidate_windows_s.empty()) {
        j["base_windows_s"] = e.base_windows_s;
        j["candidate_windows_s"] = e.candidate_windows_s;
    }
    if (!e.base_sample_info.empty()) j["base_sample_info"] = e.base_sample_info;
    if (!e.candidate_sample_info.empty()) j["candidate_sample_info"] = e.candidate_sample_info;
    if (!e.calibration_overheads_s.empty()) j["calibration_overheads_s"] = e.calibration_overheads_s;
    if (e.base_checked_calls) j["base_checked_calls"] = *e.base_checked_calls;
    if (e.candidate_checked_calls) j["candidate_checked_calls"] = *e.candidate_checked_calls;
    if (!e.numeric_flags_changed.is_null()) j["numeric_flags_changed"] = e.numeric_flags_changed;
    return j;
}

json write(const profile_result_event& e) {
    json j = with_kind(event_kind::profile_result);
    j["id"] = e.id;
    if (e.failure) {
        put_failure(j, *e.failure, false);
        return j;
    }
    j["wall_s"] = e.wall_s;
    j["warmup_calls"] = e.warmup_calls;
    return j;
}

json write(const fatal_event& e) {
    json j = with_kind(event_kind::fatal);
    j["message"] = e.message;
    if (e.candidate_died) j["candidate_died"] = true;
    return j;
}

json write(const done_event&) { return with_kind(event_kind::done); }

start_event read_start(const reader& r) {
    start_event e;
    e.pid = r.get<long>("pid");
    e.abi = r.get<int>("abi");
    e.schema_version = r.get<int>("schema_version");
    if (e.schema_version != k_events_schema_version)
        throw event_error(fmt::format("the runner writes events of schema {}; this kloop reads schema {} "
                                      "(a runner from another kloop version?)",
                                      e.schema_version, k_events_schema_version));
    e.phase = r.get<std::string>("phase");
    e.reference_device = object_or_null(r, "reference_device");
    e.candidate_device = object_or_null(r, "candidate_device");
    e.worker = object_or_null(r, "worker");
    return e;
}

bench_result_event read_bench(const reader& r) {
    bench_result_event e;
    e.id = r.get<int>("id");
    e.failure = failure_of(r, false);
    e.samples_s = r.need<std::vector<double>>("samples_s");
    e.warmup_calls = r.need<int>("warmup_calls");
    e.warmup_s = r.get_or<double>("warmup_s", 0.0);
    e.stop_reason = r.need<std::string>("stop_reason");
    e.input_sets = r.need<int>("input_sets");
    e.flush_bytes = r.need<std::uint64_t>("flush_bytes");
    e.checks = array_or_empty(r, "checks");
    e.checked_calls = r.get_or<int>("checked_calls", 0);
    e.discarded_samples = r.get_or<int>("discarded_samples", 0);
    e.sample_info = array_or_empty(r, "sample_info");
    e.graph_replay_s_per_call = r.maybe<double>("graph_replay_s_per_call");
    e.graph_replay_samples_s_per_call = r.get_or<std::vector<double>>("graph_replay_samples_s_per_call", {});
    e.graph_calls = r.maybe<int>("graph_calls");
    e.graph_kernel_nodes = r.maybe<int>("graph_kernel_nodes");
    e.graph_replays = r.maybe<int>("graph_replays");
    e.graph_replay_error = r.get_or<std::string>("graph_replay_error", "");
    if (r.has("numeric_flags_changed")) e.numeric_flags_changed = array_or_empty(r, "numeric_flags_changed");
    return e;
}

ab_result_event read_ab(const reader& r) {
    ab_result_event e;
    e.id = r.get<int>("id");
    e.failure = failure_of(r, true);
    e.base_samples_s = r.need<std::vector<double>>("base_samples_s");
    e.candidate_samples_s = r.need<std::vector<double>>("candidate_samples_s");
    e.order = r.get_or<std::string>("order", "ABBA");
    e.base_checks = array_or_empty(r, "base_checks");
    e.candidate_checks = array_or_empty(r, "candidate_checks");
    e.base_stop_reason = r.need<std::string>("base_stop_reason");
    e.candidate_stop_reason = r.need<std::string>("candidate_stop_reason");
    e.stop = r.need<std::string>("stop");
    e.base_warmup_calls = r.get_or<int>("base_warmup_calls", 0);
    e.candidate_warmup_calls = r.get_or<int>("candidate_warmup_calls", 0);
    e.input_sets = r.need<int>("input_sets");
    e.flush_bytes = r.need<std::uint64_t>("flush_bytes");
    e.base_discarded_samples = r.get_or<int>("base_discarded_samples", 0);
    e.candidate_discarded_samples = r.get_or<int>("candidate_discarded_samples", 0);
    e.early_verdict = r.maybe<std::string>("early_verdict");
    e.base_windows_s = r.get_or<std::vector<double>>("base_windows_s", {});
    e.candidate_windows_s = r.get_or<std::vector<double>>("candidate_windows_s", {});
    e.base_sample_info = array_or_empty(r, "base_sample_info");
    e.candidate_sample_info = array_or_empty(r, "candidate_sample_info");
    e.calibration_overheads_s = r.get_or<std::vector<double>>("calibration_overheads_s", {});
    e.base_checked_calls = r.maybe<int>("base_checked_calls");
    e.candidate_checked_calls = r.maybe<int>("candidate_checked_calls");
    if (r.has("numeric_flags_changed")) e.numeric_flags_changed = array_or_empty(r, "numeric_flags_changed");
    return e;
}

profile_result_event read_profile(const reader& r) {
    profile_result_event e;
    e.id = r.get<int>("id");
    e.failure = failure_of(r, false);
    e.wall_s = r.need<double>("wall_s");
    e.warmup_calls = r.get_or<int>("warmup_calls", 0);
    return e;
}

event read_kind(const reader& r, event_kind kind, const json& j) {
    switch (kind) {
        case event_kind::start: return read_start(r);
        case event_kind::case_start:
        case event_kind::bench_start:
        case event_kind::ab_start:
        case event_kind::profile_start: return item_start_event{kind, r.get<int>("id")};
        case event_kind::stage: return stage_event{r.get<int>("id"), r.get<std::string>("stage")};
        case event_kind::progress:
            return progress_event{r.get<int>("id"), r.get<int>("samples"), r.get<double>("time_s"),
                                  r.maybe<double>("rel_stdev"), r.maybe<double>("target_rel_stdev")};
        case event_kind::case_result: {
            case_result_event e{r.get<int>("id"), j};
            e.facts.erase("event");
            e.facts.erase("id");
            return e;
        }
        case event_kind::bench_result: return read_bench(r);
        case event_kind::ab_result: return read_ab(r);
        case event_kind::profile_result: return read_profile(r);
        case event_kind::fatal: return fatal_event{r.get<std::string>("message"), r.get_or<bool>("candidate_died", false)};
        case event_kind::done: return done_event{};
    }
    throw event_error("an event of unknown kind");
}

}  // namespace

std::string to_string(event_kind k) {
    for (const auto& [kind, name] : k_names)
        if (kind == k) return name;
    return "?";
}

std::optional<event_kind> event_kind_from_string(std::string_view s) {
    for (const auto& [kind, name] : k_names)
        if (s == name) return kind;
    return std::nullopt;
}

const std::vector<event_kind>& all_event_kinds() {
    static const std::vector<event_kind> kinds = [] {
        std::vector<event_kind> v;
        for (const auto& [kind, name] : k_names) v.push_back(kind);
        return v;
    }();
    return kinds;
}

event_kind kind_of(const event& e) {
    return std::visit(
        [](const auto& x) -> event_kind {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, start_event>) return event_kind::start;
            else if constexpr (std::is_same_v<T, item_start_event>) return x.kind;
            else if constexpr (std::is_same_v<T, stage_event>) return event_kind::stage;
            else if constexpr (std::is_same_v<T, progress_event>) return event_kind::progress;
            else if constexpr (std::is_same_v<T, case_result_event>) return event_kind::case_result;
            else if constexpr (std::is_same_v<T, bench_result_event>) return event_kind::bench_result;
            else if constexpr (std::is_same_v<T, ab_result_event>) return event_kind::ab_result;
            else if constexpr (std::is_same_v<T, profile_result_event>) return event_kind::profile_result;
            else if constexpr (std::is_same_v<T, fatal_event>) return event_kind::fatal;
            else return event_kind::done;
        },
        e);
}

std::optional<int> item_of(const event& e) {
    return std::visit(
        [](const auto& x) -> std::optional<int> {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, start_event> || std::is_same_v<T, fatal_event> ||
                          std::is_same_v<T, done_event>)
                return std::nullopt;
            else
                return x.id;
        },
        e);
}

std::string describe_call_failure(std::string_view who, const call_failure& f) {
    std::string s = !f.exception.is_object()
                        ? fmt::format("{} returned {}", who, f.return_code)
                        : fmt::format("{} raised {}: {}", who, f.exception.value("type", std::string("an exception")),
                                      f.exception.value("message", std::string()));
    s += fmt::format(" at {} call {}", f.where, f.sample);
    if (!f.device_error.empty()) s += " (device error: " + f.device_error + ")";
    return s;
}

json to_json(const event& e) {
    return std::visit([](const auto& x) { return write(x); }, e);
}

event event_from_json(const json& j) {
    if (!j.is_object()) throw event_error("an event that is not a JSON object");
    if (!j.contains("event") || !j.at("event").is_string()) throw event_error("an event without its kind ('event')");
    const auto name = j.at("event").get<std::string>();
    const auto kind = event_kind_from_string(name);
    if (!kind) throw event_error("an event of unknown kind '" + name + "'");
    const reader r(j, *kind);
    event e = read_kind(r, *kind, j);
    if (*kind != event_kind::case_result) r.refuse_unknown_fields();  // a call's facts are open
    return e;
}

}  // namespace kloop::runner
