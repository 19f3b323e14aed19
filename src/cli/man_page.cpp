// kloop cli: the kloop(1) man page (see man_page.hpp).
#include "cli/man_page.hpp"

#include <cctype>
#include <cstdint>

#include <fmt/format.h>

#include "platform/paths.hpp"

namespace kloop::cli {

namespace {

// The location overrides (platform/paths.hpp, backend/python/python_worker.hpp,
// docs/install.md), in the order docs/install.md lists them.
struct env_entry {
    const char* name;
    const char* meaning;
};
constexpr env_entry environment[] = {
    {"KLOOP_HOME", "Where kloop keeps its data: the build cache, the strategy memory, calibrations "
                   "(default: $XDG_DATA_HOME/kloop, else ~/.local/share/kloop; the cache under "
                   "$XDG_CACHE_HOME/kloop, else ~/.cache/kloop)."},
    {"KLOOP_DATA_DIR", "kloop's bundled files: python/ (the Python worker), calibrate/ and examples/ "
                       "(default: share/kloop of the installed prefix, found from the kloop executable)."},
    {"KLOOP_INCLUDE_DIR", "The directory holding kloop/kernel.h, the candidate ABI (default: include/ of the "
                          "installed prefix)."},
    {"KLOOP_RUNNER", "The kloop-runner binary (default: libexec/kloop/kloop-runner of the installed prefix)."},
    {"KLOOP_PYTHON_DIR", "The directory holding the Python worker kloop_worker/ (default: python/ of the data "
                         "directory)."},
    {"KLOOP_PYTHON", "The Python interpreter for Python candidates (wins over the op's [python] interpreter)."},
    {"KLOOP_MEMORY_DB", "The strategy memory's SQLite file (default: $KLOOP_HOME/memory.sqlite)."},
    {"KLOOP_NCU", "The Nsight Compute command line tool (default: ncu found on PATH or in the CUDA toolkit)."},
};

// "--timeout" -> \fB\-\-timeout\fR; names joined with ", ".
std::string bold_names(const std::vector<std::string>& names) {
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + ("\\fB" + roff_escape(n, true) + "\\fR");
    return out;
}

// The type's word and what follows it: "FLOAT:FLOAT in (0 - 1000000]" -> {"FLOAT", "FLOAT in (0 - 1000000]"}.
std::pair<std::string, std::string> split_type(const std::string& type) {
    const auto colon = type.find(':');
    if (colon == std::string::npos) return {type, ""};
    return {type.substr(0, colon), type.substr(colon + 1)};
}

void option_item(std::string& s, const option_model& o) {
    s += ".TP\n";
    if (o.positional.empty()) {
        s += bold_names(o.names);
    } else {
        s += "\\fI" + roff_escape(o.positional) + "\\fR";
    }
    const auto [word, constraint] = split_type(o.type);
    if (o.takes_value && o.positional.empty()) s += " \\fI" + roff_escape(word.empty() ? "VALUE" : word) + "\\fR";
    if (o.repeatable) s += " ...";
    s += "\n" + roff_escape(o.description);
    std::vector<std::string> notes;
    if (o.required) notes.push_back("required");
    if (!constraint.empty()) notes.push_back(constraint);
    if (!o.default_value.empty()) notes.push_back("default: " + o.default_value);
    if (!notes.empty()) {
        std::string joined;
        for (const auto& n : notes) joined += (joined.empty() ? "" : "; ") + n;
        s += " (" + roff_escape(joined) + ")";
    }
    s += "\n";
}

std::string verb_synopsis(const std::string& program, const verb_model& v) {
    std::string s = "\\fB" + roff_escape(program) + " " + roff_escape(v.name) + "\\fR [\\fIOPTIONS\\fR]";
    for (const auto& p : v.positionals) {
        const std::string name = "\\fI" + roff_escape(p.positional) + "\\fR" + (p.repeatable ? " ..." : "");
        s += " " + (p.required ? name : "[" + name + "]");
    }
    return s;
}

// "kloop: the disciplined ..." -> "the disciplined ...": NAME's one-line summary.
std::string summary_of(const cli_model& m) {
    const std::string prefix = m.name + ": ";
    return m.description.rfind(prefix, 0) == 0 ? m.description.substr(prefix.size()) : m.description;
}

}  // namespace

std::string roff_escape(std::string_view s, bool option_name) {
    std::string out;
    bool line_start = true;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const auto c = static_cast<unsigned char>(s[i]);
        if (line_start && (c == '.' || c == '\'')) out += "\\&";
        line_start = false;
        if (c == '\\') {
            out += "\\e";
        } else if (c == '-' && option_name) {
            out += "\\-";
        } else if (c == '\n') {
            out += '\n';
            line_start = true;
        } else if (c < 0x80) {
            out += static_cast<char>(c);
        } else {
            // One UTF-8 sequence -> \[uXXXX]; a malformed byte becomes U+FFFD.
            std::uint32_t cp = 0xFFFD;
            std::size_t extra = 0;
            if ((c & 0xE0) == 0xC0) cp = c & 0x1F, extra = 1;
            else if ((c & 0xF0) == 0xE0) cp = c & 0x0F, extra = 2;
            else if ((c & 0xF8) == 0xF0) cp = c & 0x07, extra = 3;
            bool ok = extra > 0 && i + extra < s.size();
            for (std::size_t k = 1; ok && k <= extra; ++k) {
                const auto cc = static_cast<unsigned char>(s[i + k]);
                if ((cc & 0xC0) != 0x80) ok = false;
                else cp = (cp << 6) | (cc & 0x3F);
            }
            if (ok) i += extra;
            else cp = 0xFFFD;
            out += fmt::format("\\[u{:04X}]", cp);
        }
    }
    return out;
}

std::string man_page(const cli_model& m, std::string_view version) {
    const std::string prog = roff_escape(m.name);
    std::string s;
    s += ".\\\" " + m.name + "(1). Generated by `" + m.name + " --generate-man` from its command line; do not edit.\n";
    std::string title = m.name;  // the page's title in capitals, as man(7) has it
    for (auto& c : title) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    s += fmt::format(".TH {} 1 \"\" \"{} {}\" \"User Commands\"\n", roff_escape(title), prog, roff_escape(version));

    s += ".SH NAME\n" + prog + " \\- " + roff_escape(summary_of(m)) + "\n";

    s += ".SH SYNOPSIS\n";
    s += "\\fB" + prog + "\\fR [\\fIOPTIONS\\fR]\n.br\n";
    s += "\\fB" + prog + "\\fR \\fIVERB\\fR [\\fIOPTIONS\\fR] [\\fIARGUMENTS\\fR]\n";

    s += ".SH DESCRIPTION\n";
    s += prog + " runs " + roff_escape(summary_of(m)) +
         ": a frozen correctness contract, a gate every candidate passes, statistically sound timing, "
         "and one record per iteration.\n";
    s += ".PP\nEach verb has its own options; \\fB" + prog + " \\fIVERB\\fB \\-\\-help\\fR prints them, as "
         "the section \\fBVERBS\\fR below does.\n";

    s += ".SH OPTIONS\n";
    for (const auto& o : m.options) option_item(s, o);

    s += ".SH VERBS\n";
    for (const auto& v : m.verbs) {
        s += ".SS " + roff_escape(v.name) + "\n";
        s += verb_synopsis(m.name, v) + "\n.PP\n" + roff_escape(v.description) + "\n";
        for (const auto& p : v.positionals) option_item(s, p);
        for (const auto& o : v.options) option_item(s, o);
    }

    const auto codes = exit_codes_of(m.footer);
    if (!codes.empty()) {
        s += ".SH \"EXIT STATUS\"\n";
        for (const auto& c : codes) s += ".TP\n.B " + roff_escape(c.code) + "\n" + roff_escape(c.meaning) + "\n";
    }

    s += ".SH ENVIRONMENT\n";
    for (const auto& e : environment) s += ".TP\n.B " + roff_escape(e.name) + "\n" + roff_escape(e.meaning) + "\n";

    const auto& l = platform::layout();
    s += ".SH FILES\n";
    s += ".TP\n.I <prefix>/" + roff_escape(l.tool_dir.string()) + "/\nkloop\\-runner and kloop\\-runner\\-cuda, the " +
         "checker processes " + prog + " starts.\n";
    s += ".TP\n.I <prefix>/" + roff_escape(l.include_dir.string()) + "/kloop/kernel.h\nThe ABI a candidate implements.\n";
    s += ".TP\n.I <prefix>/" + roff_escape(l.data_dir.string()) + "/\nThe Python worker (python/), the calibration op " +
         "(calibrate/) and the examples (examples/; \\fB" + prog + " demo\\fR copies examples/rmsnorm).\n";
    s += ".TP\n.I <prefix>/share/doc/kloop/\nThe documentation: README.md, DESIGN.md and docs/ (docs/cli.md: every "
         "verb and option; docs/install.md: the layout and the overrides).\n";
    return s;
}

}  // namespace kloop::cli
