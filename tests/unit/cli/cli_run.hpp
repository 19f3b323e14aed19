// Test helper: `kloop ARGS…` through cli::run in this process, its exit code and stderr. Parsing
// fails before any work, so the op directory and candidate named need not exist.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

namespace kloop::testing {

struct cli_result {
    int code;
    std::string err;
};

inline cli_result run_cli(std::vector<std::string> args) {
    std::ostringstream out, err;
    const int code = kloop::cli::run(args, out, err);
    return {code, err.str()};
}

}  // namespace kloop::testing
