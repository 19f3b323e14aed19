// kloop cli: the command-line front end, as a library function so tests can drive it.
//
// Responsibility: build the CLI11 application from the table of verbs (cli/commands.cpp), parse
// argv into each verb's config struct, run the verb, and map every outcome to kloop's
// documented exit codes (core/error.hpp). Catches once, here; prints "kloop: error: …".
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

namespace kloop::cli {

// Runs kloop with the given arguments (argv[0] excluded); writes to out/err. Returns the exit code.
int run(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

// The full --help text (also the source of docs/cli.md's synopsis).
[[nodiscard]] std::string help_text();

}  // namespace kloop::cli
