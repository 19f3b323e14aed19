// kloop: the orchestrator's executable. Everything lives in the library; see cli/cli.hpp.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
    return kloop::cli::run(std::vector<std::string>(argv + 1, argv + argc), std::cout, std::cerr);
}
