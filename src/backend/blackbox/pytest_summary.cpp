// kloop backend/blackbox: pytest's summary line → counts (see pytest_summary.hpp).
#include "backend/blackbox/pytest_summary.hpp"

#include <cctype>
#include <regex>

#include "core/text.hpp"

namespace kloop::backend::blackbox {

namespace {

// Strips the "=====" borders of the default verbosity (and the spaces inside them).
std::string_view strip_borders(std::string_view s) {
    s = trim(s);
    while (!s.empty() && s.front() == '=') s.remove_prefix(1);
    while (!s.empty() && s.back() == '=') s.remove_suffix(1);
    return trim(s);
}

bool add_count(pytest_summary& s, int n, const std::string& word) {
    if (word == "passed") s.passed += n;
    else if (word == "failed") s.failed += n;
    else if (word == "error" || word == "errors") s.errors += n;
    else if (word == "skipped") s.skipped += n;
    else if (word == "xfailed") s.xfailed += n;
    else if (word == "xpassed") s.xpassed += n;
    else if (word == "deselected") s.deselected += n;
    else if (word == "warning" || word == "warnings") s.warnings += n;
    else if (word == "rerun" || word == "reruns") s.rerun += n;
    else s.other[word] += n;
    return true;
}

}  // namespace

std::string strip_ansi(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size(); ++i) {
        if (text[i] != '\x1b') {
            out.push_back(text[i]);
            continue;
        }
        if (i + 1 < text.size() && text[i + 1] == '[') {  // CSI: parameters, then a final byte @..~
            std::size_t j = i + 2;
            while (j < text.size() && !(text[j] >= '@' && text[j] <= '~')) ++j;
            i = j;  // the loop's ++i skips the final byte
        } else if (i + 1 < text.size() && std::string_view("()*+-./").find(text[i + 1]) != std::string_view::npos) {
            i += 2;  // charset designation: ESC ( B
        } else {
            ++i;  // two-byte escape
        }
    }
    return out;
}

std::optional<pytest_summary> parse_summary_line(std::string_view raw) {
    static const std::regex tail(R"(^(.+?) in ([0-9]+(?:\.[0-9]+)?) ?(?:s|seconds)(?: \([0-9:.]+\))?$)");
    static const std::regex item(R"(^([0-9]+) ([a-z_]+)$)");
    const std::string line(strip_borders(raw));
    std::smatch m;
    if (!std::regex_match(line, m, tail)) return std::nullopt;
    pytest_summary s;
    s.line = line;
    const std::string counts = m[1].str();
    try {
        s.duration_s = std::stod(m[2].str());
    } catch (const std::exception&) {
        return std::nullopt;
    }
    std::size_t start = 0;
    bool any = false;
    while (start <= counts.size()) {
        const std::size_t comma = counts.find(", ", start);
        const std::string part(trim(std::string_view(counts).substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
        std::smatch im;
        if (part == "no tests ran") {
            s.no_tests_ran = true;
        } else if (std::regex_match(part, im, item)) {
            int n = 0;
            try {
                n = std::stoi(im[1].str());
            } catch (const std::exception&) {
                return std::nullopt;
            }
            add_count(s, n, im[2].str());
        } else {
            return std::nullopt;
        }
        any = true;
        if (comma == std::string::npos) break;
        start = comma + 2;
    }
    if (!any) return std::nullopt;
    s.found = true;
    return s;
}

pytest_summary parse_pytest_output(std::string_view output) {
    const std::string clean = strip_ansi(output);
    const auto lines = split_lines(clean);
    pytest_summary s;
    std::size_t at = lines.size();
    for (std::size_t i = lines.size(); i-- > 0;)
        if (auto parsed = parse_summary_line(lines[i])) {
            s = std::move(*parsed);
            at = i;
            break;
        }
    // The short test summary sits just above the final line; a candidate's captured output sits
    // above that, so only lines before the summary (or all, when there is none) are read.
    for (std::size_t i = 0; i < at && i < lines.size(); ++i) {
        const std::string_view l = trim(lines[i]);
        std::string kind;
        if (l.rfind("FAILED ", 0) == 0) kind = "FAILED";
        else if (l.rfind("ERROR ", 0) == 0) kind = "ERROR";
        else continue;
        std::string_view rest = trim(l.substr(kind.size() + 1));
        if (rest.empty()) continue;
        ++s.failures_total;
        if (s.failures.size() >= max_reported_failures) continue;
        reported_failure f;
        f.kind = kind;
        const std::size_t dash = rest.find(" - ");
        f.node_id = std::string(trim(rest.substr(0, dash)));
        if (dash != std::string_view::npos) f.message = std::string(trim(rest.substr(dash + 3)));
        s.failures.push_back(std::move(f));
    }
    return s;
}

std::string describe_pytest_exit(int exit_code) {
    switch (exit_code) {
        case 0: return "exit 0 (all selected tests passed)";
        case 1: return "exit 1 (tests failed)";
        case 2: return "exit 2 (pytest was interrupted)";
        case 3: return "exit 3 (pytest internal error)";
        case 4: return "exit 4 (pytest usage error)";
        case 5: return "exit 5 (no tests collected)";
        default: return "exit " + std::to_string(exit_code);
    }
}

}  // namespace kloop::backend::blackbox
