// kloop loop: tunables in a candidate's source (see tunables.hpp).
#include "loop/tunables.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <regex>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"

namespace kloop::loop {

namespace {

enum class language { c_like, python };

language language_of(const std::filesystem::path& file) {
    return file.extension() == ".py" ? language::python : language::c_like;
}

const std::regex& marker_regex(language lang) {
    static const std::regex c_marker(R"(//\s*kloop:tune(?![\w:-]))");
    static const std::regex py_marker(R"(#\s*kloop:tune(?![\w:-]))");
    return lang == language::python ? py_marker : c_marker;
}

// A declaration whose value is `value` (the sub-match's position and length within the line).
struct declaration {
    std::string name;
    std::size_t value_pos = 0;
    std::size_t value_len = 0;
    std::string marker_tail;  // the text after `kloop:tune`
};

bool declares_compile_time_value(const std::string& specifiers) {
    static const std::regex word(R"((^|\s)(constexpr|const)(\s|$))");
    return std::regex_search(specifiers, word);
}

std::optional<declaration> match_declaration(const std::string& line, language lang) {
    std::smatch m;
    if (lang == language::python) {
        static const std::regex py(R"(^([A-Za-z_]\w*)(\s*(?::[^=#]*)?=\s*)(\S.*?)\s*#\s*kloop:tune(.*)$)");
        if (!std::regex_match(line, m, py)) return std::nullopt;
        return declaration{m[1].str(), static_cast<std::size_t>(m.position(3)), static_cast<std::size_t>(m.length(3)),
                           m[4].str()};
    }
    static const std::regex define(R"(^\s*#\s*define\s+([A-Za-z_]\w*)\s+(\S.*?)\s*//\s*kloop:tune(.*)$)");
    if (std::regex_match(line, m, define))
        return declaration{m[1].str(), static_cast<std::size_t>(m.position(2)), static_cast<std::size_t>(m.length(2)),
                           m[3].str()};
    static const std::regex constant(
        R"(^\s*((?:[A-Za-z_][\w:<>]*\s+)+)([A-Za-z_]\w*)\s*=\s*([^;\s][^;]*?)\s*;\s*//\s*kloop:tune(.*)$)");
    if (std::regex_match(line, m, constant) && declares_compile_time_value(m[1].str()))
        return declaration{m[2].str(), static_cast<std::size_t>(m.position(3)), static_cast<std::size_t>(m.length(3)),
                           m[4].str()};
    return std::nullopt;
}

bool is_literal(const std::string& v) {
    static const std::regex number(R"(^[-+]?(?:\d|\.\d)[0-9A-Za-z_.']*(?:[eE][-+]\d+[A-Za-z]*)?$)");
    return v == "true" || v == "false" || v == "True" || v == "False" || std::regex_match(v, number);
}

std::vector<std::string> split_values(const std::string& tail) {
    std::vector<std::string> out;
    std::string cur;
    for (char ch : tail + " ") {
        if (ch == ' ' || ch == '\t' || ch == ',') {
            if (!cur.empty()) out.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    return out;
}

std::string expected_forms(language lang) {
    return lang == language::python ? "`NAME = value  # kloop:tune v1 v2 ...` at module level"
                                    : "`#define NAME value // kloop:tune v1 v2 ...` or `constexpr int NAME = value; "
                                      "// kloop:tune v1 v2 ...`";
}

}  // namespace

std::vector<tunable> parse_tunables(const std::string& text, const std::filesystem::path& file) {
    const language lang = language_of(file);
    std::vector<tunable> out;
    std::map<std::string, int> declared_on;
    std::size_t start = 0;
    for (int line_no = 1; start < text.size(); ++line_no) {
        const std::size_t end = std::min(text.find('\n', start), text.size());
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        const std::size_t line_start = start;
        start = end + 1;
        if (!std::regex_search(line, marker_regex(lang))) continue;
        const auto where = fmt::format("{}:{}", file.string(), line_no);
        if (lang == language::python && !line.empty() && (line.front() == ' ' || line.front() == '\t'))
            throw usage_error(fmt::format("{}: a kloop:tune marker on an indented line: tunables are module-level "
                                          "assignments ({})",
                                          where, expected_forms(lang)));
        const auto decl = match_declaration(line, lang);
        if (!decl)
            throw usage_error(fmt::format("{}: a kloop:tune marker on a line that declares nothing (expected {})", where,
                                          expected_forms(lang)));
        tunable t;
        t.name = decl->name;
        t.line = line_no;
        t.value_offset = line_start + decl->value_pos;
        t.value_length = decl->value_len;
        t.value = text.substr(t.value_offset, t.value_length);
        t.values = split_values(decl->marker_tail);
        if (t.values.empty())
            throw usage_error(fmt::format("{}: the kloop:tune marker of {} lists no values (expected `kloop:tune v1 v2 "
                                          "...`)",
                                          where, t.name));
        for (std::size_t k = 0; k < t.values.size(); ++k) {
            if (!is_literal(t.values[k]))
                throw usage_error(fmt::format("{}: the kloop:tune marker of {} has '{}', which is not a numeric or "
                                              "boolean literal",
                                              where, t.name, t.values[k]));
            if (std::find(t.values.begin(), t.values.begin() + static_cast<long>(k), t.values[k]) !=
                t.values.begin() + static_cast<long>(k))
                throw usage_error(fmt::format("{}: the kloop:tune marker of {} lists {} twice", where, t.name, t.values[k]));
        }
        if (std::find(t.values.begin(), t.values.end(), t.value) == t.values.end())
            throw usage_error(fmt::format("{}: {} is declared as {}, which is not in its kloop:tune set ({}): the "
                                          "declared value is where the search starts",
                                          where, t.name, t.value, fmt::join(t.values, " ")));
        if (auto it = declared_on.find(t.name); it != declared_on.end())
            throw usage_error(fmt::format("{}: the tunable {} is already declared on line {}", where, t.name, it->second));
        declared_on[t.name] = line_no;
        out.push_back(std::move(t));
    }
    return out;
}

tune_config declared_config(const std::vector<tunable>& tunables) {
    tune_config c;
    for (const auto& t : tunables) c.push_back(t.value);
    return c;
}

std::string write_variant(const std::string& text, const std::vector<tunable>& tunables, const tune_config& config) {
    if (config.size() != tunables.size())
        throw internal_error(fmt::format("a configuration of {} values for {} tunables", config.size(), tunables.size()));
    std::string out = text;
    // From the last to the first, so each earlier offset still holds.
    for (std::size_t k = tunables.size(); k-- > 0;) out.replace(tunables[k].value_offset, tunables[k].value_length, config[k]);
    return out;
}

std::string describe_config(const std::vector<tunable>& tunables, const tune_config& config) {
    std::string s;
    for (std::size_t k = 0; k < tunables.size() && k < config.size(); ++k)
        s += (s.empty() ? "" : ", ") + tunables[k].name + "=" + config[k];
    return s;
}

std::string config_json(const std::vector<tunable>& tunables, const tune_config& config) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (std::size_t k = 0; k < tunables.size() && k < config.size(); ++k) j[tunables[k].name] = config[k];
    return j.dump();
}

}  // namespace kloop::loop
