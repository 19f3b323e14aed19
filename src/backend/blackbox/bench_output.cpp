// kloop backend/blackbox: a black-box bench's output, read back (see bench_output.hpp).
#include "backend/blackbox/bench_output.hpp"

#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kloop::backend::blackbox {

using nlohmann::json;

std::optional<json> last_json_line(const std::string& text, std::initializer_list<const char*> keys) {
    std::size_t end = text.size();
    while (end > 0) {
        std::size_t start = text.rfind('\n', end - 1);
        start = start == std::string::npos ? 0 : start + 1;
        std::string line = text.substr(start, end - start);
        end = start == 0 ? 0 : start - 1;
        while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos || line[first] != '{') continue;
        auto j = json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object()) continue;
        for (const char* k : keys)
            if (j.contains(k)) return j;
    }
    return std::nullopt;
}

namespace {

std::vector<bench_output_shape> parse_shapes(const json& doc, const std::vector<spec::blackbox_bench_shape>& expected) {
    const json& shapes = doc.at("shapes");
    if (!shapes.is_array()) throw std::invalid_argument("bench output: \"shapes\" must be an array");
    std::vector<bench_output_shape> out;
    for (std::size_t i = 0; i < shapes.size(); ++i) {
        const json& s = shapes[i];
        const std::string at = fmt::format("bench output: shapes[{}]", i);
        if (!s.is_object() || !s.contains("name") || !s.at("name").is_string())
            throw std::invalid_argument(at + ": must be an object with a string \"name\"");
        bench_output_shape b;
        b.name = s.at("name").get<std::string>();
        b.mode = s.contains("mode") && s.at("mode").is_string() ? s.at("mode").get<std::string>() : "bench";
        const std::string key = b.mode + "/" + b.name;
        const bool known = std::any_of(expected.begin(), expected.end(), [&](const auto& e) { return e.get_key() == key; });
        if (!known) {
            std::string names;
            for (const auto& e : expected) names += (names.empty() ? "" : ", ") + e.get_key();
            throw std::invalid_argument(at + ": shape '" + key + "' is not in the spec's [bench] shapes (" + names + ")");
        }
        if (std::any_of(out.begin(), out.end(), [&](const auto& o) { return o.mode + "/" + o.name == key; }))
            throw std::invalid_argument(at + ": shape '" + key + "' is reported twice");
        if (!s.contains("samples_ms") || !s.at("samples_ms").is_array() || s.at("samples_ms").empty())
            throw std::invalid_argument(at + " ('" + key + "'): \"samples_ms\" must be a non-empty array of times in ms");
        for (const auto& v : s.at("samples_ms")) {
            if (!v.is_number() || !std::isfinite(v.get<double>()) || !(v.get<double>() > 0))
                throw std::invalid_argument(at + " ('" + key + "'): every sample must be a finite time > 0 ms, got " + v.dump());
            b.samples_s.push_back(v.get<double>() * 1e-3);
        }
        for (const char* k : {"flops", "bytes"})
            if (s.contains(k)) {
                if (!s.at(k).is_number() || !(s.at(k).get<double>() >= 0))
                    throw std::invalid_argument(at + " ('" + key + "'): \"" + k + "\" must be a number >= 0");
                (std::string(k) == "flops" ? b.flops : b.bytes) = s.at(k).get<double>();
            }
        // Informational (the bench's own account of its stopping): kept short, never required.
        if (s.contains("stop") && s.at("stop").is_string()) b.stop = s.at("stop").get<std::string>().substr(0, 64);
        if (s.contains("early_verdict") && s.at("early_verdict").is_string()) {
            const auto v = s.at("early_verdict").get<std::string>();
            if (v == "FASTER" || v == "SLOWER" || v == "SAME") b.early_verdict = v;
        }
        out.push_back(std::move(b));
    }
    for (const auto& e : expected)
        if (std::none_of(out.begin(), out.end(), [&](const auto& o) { return o.mode + "/" + o.name == e.get_key(); }))
            throw std::invalid_argument("bench output: shape '" + e.get_key() +
                                        "' is missing (a shape that fails must not drop out of the table)");
    return out;
}

}  // namespace

std::vector<bench_output_shape> parse_bench_output(const std::string& text,
                                                   const std::vector<spec::blackbox_bench_shape>& expected) {
    const auto doc = last_json_line(text, {"shapes"});
    if (!doc)
        throw std::invalid_argument(
            "the bench command printed no JSON line with \"shapes\" on stdout (expected {\"shapes\": [{\"name\": ..., "
            "\"samples_ms\": [...]}]} on one line)");
    return parse_shapes(*doc, expected);
}

sides_output parse_sides_output(const std::string& text, const std::vector<std::string>& side_names,
                                const std::vector<spec::blackbox_bench_shape>& expected) {
    const auto doc = last_json_line(text, {"sides", "fallback", "error"});
    if (!doc)
        throw std::invalid_argument(
            "the bench printed no JSON line with \"sides\" (or \"fallback\" or \"error\") on stdout, though KLOOP_BENCH_SIDES "
            "named both sides (docs/blackbox.md, \"One process, two sides\")");
    sides_output out;
    auto text_of = [&](const char* key) {
        const json& v = doc->at(key);
        return v.is_string() ? v.get<std::string>() : v.dump();
    };
    if (doc->contains("error")) {
        out.what = sides_output::kind::error;
        out.message = text_of("error");
        out.void_run = doc->value("void", false) == true;
        return out;
    }
    if (doc->contains("fallback")) {
        out.what = sides_output::kind::fallback;
        out.message = text_of("fallback");
        return out;
    }
    const json& sides = doc->at("sides");
    if (!sides.is_object()) throw std::invalid_argument("bench output: \"sides\" must be an object of side name -> {\"shapes\": [...]}");
    for (const auto& name : side_names) {
        if (!sides.contains(name) || !sides.at(name).is_object() || !sides.at(name).contains("shapes"))
            throw std::invalid_argument("bench output: side '" + name + "' is missing from \"sides\" (or has no \"shapes\")");
        try {
            out.shapes[name] = parse_shapes(sides.at(name), expected);
        } catch (const std::invalid_argument& e) {
            throw std::invalid_argument("side '" + name + "': " + e.what());
        }
    }
    out.what = sides_output::kind::sides;
    out.method = doc->contains("method") && doc->at("method").is_string() ? doc->at("method").get<std::string>() : "";
    out.order = doc->contains("order") && doc->at("order").is_string() ? doc->at("order").get<std::string>() : "";
    if (doc->contains("idle_threads") && doc->at("idle_threads").is_array())
        for (const json& note : doc->at("idle_threads"))
            if (note.is_object() && note.contains("threads") && note.at("threads").is_string())
                out.idle_threads += (out.idle_threads.empty() ? "" : "; ") + note.at("threads").get<std::string>() + " (" +
                                    (note.contains("during") && note.at("during").is_string() ? note.at("during").get<std::string>() : "?") +
                                    ")";
    return out;
}

}  // namespace kloop::backend::blackbox
