// kloop-runner: the child process that loads CPU candidates. Thin; see runner/runner_main.hpp.
#include "runner/host_executor.hpp"
#include "runner/runner_main.hpp"

int main(int argc, char** argv) {
    return kloop::runner::runner_main(argc, argv, [](const std::string& device) -> std::unique_ptr<kloop::runner::executor_base> {
        if (device == "cpu") return std::make_unique<kloop::runner::host_executor>();
        return nullptr;
    });
}
