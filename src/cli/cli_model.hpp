// kloop cli: the command line as plain data, for the generated shell completions and man page.
//
// Responsibility: walk the CLI11 application cli.cpp builds from the table of verbs — its
// options, every verb and each verb's options and positionals, with their help text, value type,
// default and choices — into a model the generators (cli/completion.hpp, cli/man_page.hpp) read.
// The walk is the one source: what `--help` prints is what the completions offer and what the
// man page says. Options in no group (CLI11's way to hide one from --help) are left out too.
#pragma once

#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kloop::cli {

struct option_model {
    std::vector<std::string> names;    // "-h", "--help"; empty for a positional
    std::string positional;            // the positional's name ("op-dir"); empty for an option
    std::string description;
    std::string type;                  // CLI11's type text as --help shows it: "TEXT", "UINT:UINT in [1 - 4096]"
    std::string default_value;         // "" when none
    std::vector<std::string> choices;  // from a set validator ("{targeted,full,source}"), else empty
    bool takes_value = false;          // false: a flag
    bool repeatable = false;           // may be given more than once (each adds a value)
    bool required = false;

    // The value is a number (INT, UINT, FLOAT): nothing to complete.
    [[nodiscard]] bool is_numeric() const;
};

struct verb_model {
    std::string name;
    std::string description;
    std::vector<option_model> options;      // in --help's order; positionals excluded
    std::vector<option_model> positionals;  // in order
};

struct cli_model {
    std::string name;  // "kloop"
    std::string description;
    std::string footer;                 // the exit-code table --help ends with
    std::vector<option_model> options;  // the top level's own
    std::vector<verb_model> verbs;      // in the table's order
};

// The model of an application and its subcommands (one level: kloop's verbs).
[[nodiscard]] cli_model describe(const CLI::App& app);

// The exit codes in a --help footer: each "  <code>  <meaning>" line, in order.
struct exit_code_line {
    std::string code;
    std::string meaning;
};
[[nodiscard]] std::vector<exit_code_line> exit_codes_of(const std::string& footer);

}  // namespace kloop::cli
