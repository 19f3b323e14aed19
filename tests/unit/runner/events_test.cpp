// Unit under test: runner/events — the typed runner events, held to the schema both runners share
// (src/runner/event_schema.json; python/tests/test_event_schema.py holds the Python worker to the
// same file). The schema's kinds are the header's; an event with every field the schema lists is
// read; one without a required field, with a field of the wrong type, or with a field the schema
// does not have is refused, naming the field; what the runner writes passes the schema and reads
// back to itself.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/events.hpp"

using nlohmann::json;
namespace rn = kloop::runner;

namespace {

const json& schema() {
    static const json s = [] {
        std::ifstream in(std::string(KLOOP_TEST_SOURCE_DIR) + "/src/runner/event_schema.json");
        return json::parse(in);
    }();
    return s;
}

const json& kinds() { return schema().at("kinds"); }

const json& fields(const json& kind, const char* group) {
    static const json none = json::object();
    return kind.contains(group) ? kind.at(group) : none;
}

// A value of the schema's type (and one of another type).
json value_of(const std::string& type, const std::string& field) {
    if (field == "schema_version") return rn::k_events_schema_version;
    if (type == "integer") return 3;
    if (type == "number") return 0.25;
    if (type == "string") return "text";
    if (type == "boolean") return true;
    if (type == "array") return json::array();
    if (type == "object") return json::object();
    if (type == "numbers") return json::array({1e-3, 2e-3});
    if (type == "string_or_null") return "FASTER";
    ADD_FAILURE() << "the schema names a type the test does not know: " << type;
    return nullptr;
}

json wrong_value_of(const std::string& type) {
    if (type == "string" || type == "string_or_null") return 7;
    if (type == "numbers") return json::array({"x"});
    return "not a " + type;
}

// An event of `name` with its required fields, and optionally every other field the schema has.
json event_with(const std::string& name, bool every_field) {
    const json& k = kinds().at(name);
    json e = {{"event", name}};
    for (const char* group : {"required", "required_unless_error"})
        for (const auto& [f, t] : fields(k, group).items()) e[f] = value_of(t.get<std::string>(), f);
    if (every_field)
        for (const auto& [f, t] : fields(k, "optional").items()) e[f] = value_of(t.get<std::string>(), f);
    return e;
}

// What the schema says of one event: "" when it fits.
std::string schema_violation(const json& e) {
    const auto name = e.at("event").get<std::string>();
    if (!kinds().contains(name)) return "unknown kind " + name;
    const json& k = kinds().at(name);
    const bool failed = e.contains("error");
    std::map<std::string, std::string> types;
    for (const char* group : {"required", "required_unless_error", "optional"})
        for (const auto& [f, t] : fields(k, group).items()) types[f] = t.get<std::string>();
    for (const auto& [f, t] : fields(k, "required").items())
        if (!e.contains(f)) return "missing " + f;
    if (!failed)
        for (const auto& [f, t] : fields(k, "required_unless_error").items())
            if (!e.contains(f)) return "missing " + f;
    for (const auto& [f, v] : e.items()) {
        if (f == "event") continue;
        const auto it = types.find(f);
        if (it == types.end()) {
            if (k.value("open", false)) continue;
            return "unknown field " + f;
        }
        const auto& t = it->second;
        const bool ok = t == "integer"          ? v.is_number_integer()
                        : t == "number"         ? v.is_number()
                        : t == "string"         ? v.is_string()
                        : t == "boolean"        ? v.is_boolean()
                        : t == "array"          ? v.is_array()
                        : t == "object"         ? v.is_object()
                        : t == "string_or_null" ? (v.is_string() || v.is_null())
                        : t == "numbers"        ? v.is_array()
                                                : false;
        if (!ok) return f + " is not " + t;
        if (t == "numbers")
            for (const auto& x : v)
                if (!x.is_number()) return f + " is not " + t;
    }
    return {};
}

std::string refusal(const json& e) {
    try {
        (void)rn::event_from_json(e);
    } catch (const rn::event_error& x) {
        return x.what();
    }
    return {};
}

}  // namespace

TEST(EventsTest, TheSchemasKindsAreTheHeadersKinds) {
    EXPECT_EQ(schema().at("schema_version").get<int>(), rn::k_events_schema_version);
    std::set<std::string> in_schema, in_header;
    for (const auto& [name, k] : kinds().items()) in_schema.insert(name);
    for (const auto k : rn::all_event_kinds()) {
        in_header.insert(rn::to_string(k));
        EXPECT_EQ(rn::event_kind_from_string(rn::to_string(k)), k);
    }
    EXPECT_EQ(in_schema, in_header);
    EXPECT_FALSE(rn::event_kind_from_string("bench_results").has_value());
}

TEST(EventsTest, AnEventWithEveryFieldOfTheSchemaIsRead) {
    for (const auto& [name, k] : kinds().items()) {
        for (const bool every : {false, true}) {
            const json e = event_with(name, every);
            ASSERT_EQ(schema_violation(e), "") << e.dump();
            EXPECT_EQ(refusal(e), "") << e.dump();
            EXPECT_EQ(rn::to_string(rn::kind_of(rn::event_from_json(e))), name);
        }
    }
}

TEST(EventsTest, AMissingRequiredFieldIsRefusedByName) {
    for (const auto& [name, k] : kinds().items()) {
        for (const auto& [f, t] : fields(k, "required").items()) {
            json e = event_with(name, false);
            e.erase(f);
            EXPECT_NE(refusal(e).find("'" + f + "' is missing"), std::string::npos) << name << " without " << f;
        }
        for (const auto& [f, t] : fields(k, "required_unless_error").items()) {
            json e = event_with(name, false);
            e.erase(f);
            EXPECT_NE(refusal(e).find("'" + f + "' is missing"), std::string::npos) << name << " without " << f;
            e["error"] = "sample";  // a failed call ends the item before it has them
            EXPECT_EQ(refusal(e), "") << e.dump();
        }
    }
}

TEST(EventsTest, AFieldOfTheWrongTypeIsRefusedByName) {
    for (const auto& [name, k] : kinds().items()) {
        if (k.value("open", false)) continue;  // a call's facts are judged by eval/call_judgement
        for (const char* group : {"required", "required_unless_error", "optional"})
            for (const auto& [f, t] : fields(k, group).items()) {
                json e = event_with(name, true);
                e[f] = wrong_value_of(t.get<std::string>());
                EXPECT_NE(refusal(e).find("'" + f + "'"), std::string::npos) << name << "." << f << " = " << e[f];
            }
    }
}

TEST(EventsTest, AFieldTheSchemaDoesNotHaveIsRefused) {
    for (const auto& [name, k] : kinds().items()) {
        json e = event_with(name, true);
        e["samples"] = json::array();  // a writer's typo
        if (k.value("open", false)) {
            EXPECT_EQ(refusal(e), "") << name;
        } else {
            EXPECT_NE(refusal(e).find("'samples'"), std::string::npos) << name;
        }
    }
    EXPECT_NE(refusal({{"event", "bench_results"}, {"id", 1}}).find("unknown kind"), std::string::npos);
    EXPECT_NE(refusal(json::array()).find("not a JSON object"), std::string::npos);
}

TEST(EventsTest, AStartOfAnotherSchemaVersionIsRefused) {
    json e = event_with("start", false);
    e["schema_version"] = rn::k_events_schema_version + 1;
    EXPECT_NE(refusal(e).find("schema"), std::string::npos);
}

TEST(EventsTest, WhatTheRunnerWritesFitsTheSchemaAndReadsBack) {
    rn::start_event start;
    start.pid = 42;
    start.abi = 1;
    start.phase = "ab";
    start.candidate_device = {{"device", "cpu"}, {"isolation", {{"process", "separate"}}}};
    rn::bench_result_event bench;
    bench.id = 3;
    bench.samples_s = {1e-3, 1.1e-3};
    bench.warmup_calls = 4;
    bench.stop_reason = "time_cap";
    bench.input_sets = 12;
    bench.flush_bytes = 1 << 20;
    bench.checks = json::array({{{"sample", 1}, {"return_code", 0}}});
    bench.sample_info = json::array({{{"window_s", 1.2e-3}}, {{"window_s", 1.3e-3}}});
    bench.graph_replay_s_per_call = 9e-4;
    bench.graph_calls = 8;
    rn::bench_result_event bench_failed;
    bench_failed.id = 4;
    bench_failed.failure = rn::call_failure{"sample", 7, 3, "an illegal memory access", {}, {}};
    rn::ab_result_event ab;
    ab.id = 5;
    ab.base_samples_s = {2e-3};
    ab.candidate_samples_s = {1e-3};
    ab.base_stop_reason = ab.candidate_stop_reason = "converged";
    ab.stop = "early_verdict";
    ab.early_verdict = "FASTER";
    ab.base_windows_s = {2.1e-3};
    ab.candidate_windows_s = {1.1e-3};
    ab.base_sample_info = json::array({{{"sm_clock_mhz", 1980}}});
    ab.candidate_sample_info = json::array({{{"sm_clock_mhz", 1755}, {"reasons", "sw_power_cap"}}});
    ab.base_checked_calls = 1;
    rn::ab_result_event ab_failed;
    ab_failed.id = 6;
    ab_failed.failure = rn::call_failure{
        "warmup", 0, 0, {}, {{"type", "ZeroDivisionError"}, {"message", "division by zero"}}, "base"};
    rn::profile_result_event profile;
    profile.id = 7;
    profile.wall_s = 0.5;
    const std::vector<rn::event> written = {
        start,
        rn::item_start_event{rn::event_kind::bench_start, 3},
        rn::stage_event{3, "timing"},
        rn::case_result_event{1, {{"return_code", 0}, {"call_s", 1e-3}, {"deterministic", true}}},
        bench,
        bench_failed,
        ab,
        ab_failed,
        profile,
        rn::fatal_event{"the candidate host died", true},
        rn::done_event{},
    };
    for (const auto& e : written) {
        const json j = rn::to_json(e);
        EXPECT_EQ(schema_violation(j), "") << j.dump();
        EXPECT_EQ(rn::to_json(rn::event_from_json(j)), j);
    }
    EXPECT_EQ(rn::describe_call_failure("the candidate", *bench_failed.failure),
              "the candidate returned 3 at sample call 7 (device error: an illegal memory access)");
    EXPECT_EQ(rn::describe_call_failure("the base", *ab_failed.failure),
              "the base raised ZeroDivisionError: division by zero at warmup call 0");
    EXPECT_EQ(rn::item_of(written[4]), 3);
    EXPECT_FALSE(rn::item_of(written[0]).has_value());
}
