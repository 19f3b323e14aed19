// kloop cli: the kloop(1) man page, generated from the command line's model.
//
// Responsibility: turn a cli_model (cli/cli_model.hpp, the walk of the CLI11 application that
// --help prints) into roff for man(7): NAME, SYNOPSIS, DESCRIPTION, OPTIONS, one subsection per
// verb with its positionals and options (value type, default, choices as --help states them),
// EXIT STATUS from --help's footer, ENVIRONMENT (the location overrides of docs/install.md) and
// FILES (the installed layout, platform::layout()). Text is escaped for roff: backslashes, a
// leading '.' or '\'', '-' in option names, and every non-ASCII character as \[uXXXX], so groff
// needs no preprocessor. `kloop --generate-man` prints it; the build installs share/man/man1/kloop.1.
#pragma once

#include <string>
#include <string_view>

#include "cli/cli_model.hpp"

namespace kloop::cli {

// The page; version goes into the header's centre footer ("kloop 0.1.0"). No date: the same
// sources give the same page.
[[nodiscard]] std::string man_page(const cli_model& m, std::string_view version);

// s as roff text: \ as \e, non-ASCII (UTF-8) as \[uXXXX], a leading . or ' guarded with \&.
// With option_name, '-' becomes \- (a real minus, so the name can be copied from the page).
[[nodiscard]] std::string roff_escape(std::string_view s, bool option_name = false);

}  // namespace kloop::cli
