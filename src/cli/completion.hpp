// kloop cli: bash and zsh completion scripts, generated from the command line's model.
//
// Responsibility: turn a cli_model (cli/cli_model.hpp, the walk of the CLI11 application) into a
// completion script, so every verb and every option --help lists completes, and nothing else:
//   - the first word: the verbs (with their descriptions in zsh) or the top level's options;
//   - after a verb: its options; an option's value: its choices (a set validator), nothing for
//     a number, else file names; a positional: file names.
// `kloop --generate-completion bash|zsh` prints them; the build installs them as
// share/bash-completion/completions/kloop and share/zsh/site-functions/_kloop (docs/install.md).
#pragma once

#include <string>

#include "cli/cli_model.hpp"

namespace kloop::cli {

// A script for bash-completion (sourced; defines _kloop and `complete -F _kloop kloop`).
[[nodiscard]] std::string bash_completion(const cli_model& m);

// A zsh completion function file (#compdef kloop; _arguments and _describe).
[[nodiscard]] std::string zsh_completion(const cli_model& m);

}  // namespace kloop::cli
