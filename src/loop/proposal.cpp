// kloop loop: optimization_proposal.md parsing (see proposal.hpp).
#include "loop/proposal.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "core/text.hpp"

namespace kloop::loop {

namespace {

// "Direction: x", "**Direction:** x", "- Direction: x" → "x" when the label matches.
bool labelled(const std::string& line, const std::string& label, std::string& value) {
    std::string l = trimmed(line);
    while (!l.empty() && (l[0] == '-' || l[0] == '*' || l[0] == ' ')) l.erase(0, 1);
    std::string low = lower(l);
    if (low.rfind(label, 0) != 0) return false;
    std::string rest = l.substr(label.size());
    std::size_t i = 0;
    while (i < rest.size() && (rest[i] == '*' || rest[i] == ' ')) ++i;
    if (i >= rest.size() || rest[i] != ':') return false;
    rest = rest.substr(i + 1);
    while (!rest.empty() && rest[0] == '*') rest.erase(0, 1);
    value = trimmed(rest);
    return true;
}

// "- item", "* item", "+ item" → "item"; other lines as they are (trimmed).
std::string bullet_item(const std::string& t) {
    if (!t.empty() && (t[0] == '-' || t[0] == '*' || t[0] == '+')) return trimmed(t.substr(1));
    return t;
}

}  // namespace

proposal parse_proposal(const std::string& text, const std::string& file) {
    proposal p;
    p.text = text;
    std::istringstream in(text);
    std::string line;
    std::string section;  // lower-case heading text of the current "##" section
    std::string* collecting = nullptr;
    bool saw_tags_heading = false;
    int line_number = 0;
    auto add_prediction = [&](const std::string& claim) { p.predictions.push_back(parse_prediction(claim, file, line_number)); };
    while (std::getline(in, line)) {
        ++line_number;
        const std::string t = trimmed(line);
        if (t.rfind("#", 0) == 0) {
            section = lower(trimmed(t.substr(t.find_first_not_of('#'))));
            collecting = nullptr;
            if (section == "direction") collecting = &p.direction;
            else if (section == "expected" || section.rfind("expected", 0) == 0) collecting = &p.expected;
            else if (section == "blocked override" || section == "blocked-override") collecting = &p.blocked_override;
            if (section == "strategy tags") saw_tags_heading = true;
            continue;
        }
        std::string value;
        // Anywhere in the file, in any section (the tags' included).
        if (labelled(line, "predictions", value) || labelled(line, "prediction", value)) {
            add_prediction(value);
            continue;
        }
        if (p.blocked_override.empty() &&
            (labelled(line, "blocked-override", value) || labelled(line, "blocked override", value))) {
            p.blocked_override = value;
            continue;
        }
        if (section == "prediction" || section == "predictions") {
            if (!t.empty()) add_prediction(bullet_item(t));
            continue;
        }
        if (section == "strategy tags") {
            if (t.empty()) continue;
            std::stringstream parts(bullet_item(t));
            std::string tag;
            while (std::getline(parts, tag, ',')) {
                tag = trimmed(tag);
                tag.erase(std::remove(tag.begin(), tag.end(), '`'), tag.end());
                if (!tag.empty()) p.tags.push_back(tag);
            }
            continue;
        }
        if (p.direction.empty() && labelled(line, "direction", value)) {
            p.direction = value;
            continue;
        }
        if (p.expected.empty() && labelled(line, "expected", value)) {
            p.expected = value;
            continue;
        }
        if (collecting != nullptr && !t.empty()) *collecting += (collecting->empty() ? "" : " ") + t;
    }
    std::vector<std::string> missing;
    if (p.direction.empty()) missing.push_back("'Direction: <the one change>'");
    if (p.expected.empty()) missing.push_back("'Expected: <which shapes move, by how much>'");
    if (!saw_tags_heading) missing.push_back("a '## Strategy tags' section");
    else if (p.tags.empty()) missing.push_back("at least one tag under '## Strategy tags'");
    if (!missing.empty()) {
        std::string list;
        for (const auto& m : missing) list += (list.empty() ? "" : ", ") + m;
        throw usage_error(fmt::format("proposal '{}' lacks {}; see docs/loop.md (\"The proposal\")", file, list));
    }
    return p;
}

proposal read_proposal(const std::filesystem::path& file) { return parse_proposal(platform::read_file(file), file.string()); }

}  // namespace kloop::loop
