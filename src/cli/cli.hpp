// kloop cli: the command-line front end, as a library function so tests can drive it.
//
// Responsibility: build the CLI11 application from the table of verbs (cli/commands.cpp), parse
// argv into each verb's config struct, run the verb, and map every outcome to kloop's
// documented exit codes (core/error.hpp). Catches once, here; prints "kloop: error: …". Also
// prints the shell completions and the man page generated from that same application.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "cli/cli_model.hpp"

namespace kloop::cli {

// Runs kloop with the given arguments (argv[0] excluded); writes to out/err. Returns the exit code.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The full --help text (also the source of docs/cli.md's synopsis).
[[nodiscard]] std::string help_text();

// The command line as data: the application run() parses, walked (cli/cli_model.hpp). The
// source of the shell completions and the man page, which run() prints for the command lines
// `--generate-completion bash|zsh` and `--generate-man` (not in --help: the build runs them and
// installs what they print; docs/install.md).
[[nodiscard]] cli_model describe_command_line();

}  // namespace kloop::cli
