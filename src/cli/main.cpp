// kloop: the orchestrator's executable. Everything lives in the library; see cli/cli.hpp.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"
#include "platform/confinement.hpp"

int main(int argc, char** argv) {
    // Candidates run with the user's id: none may ptrace kloop or write its memory.
    (void)kloop::platform::make_undumpable();
    return kloop::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
