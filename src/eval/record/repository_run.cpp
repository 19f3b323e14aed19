// kloop eval/record: a repository run's record (see repository_run.hpp).
#include "eval/record/repository_run.hpp"

namespace kloop::eval {

std::string pytest_summary::describe() const {
    if (!found) return "no pytest summary line";
    std::string out;
    auto add = [&](int n, const char* one, const char* many) {
        if (n == 0) return;
        out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + (n == 1 ? one : many);
    };
    add(failed, "failed", "failed");
    add(passed, "passed", "passed");
    add(skipped, "skipped", "skipped");
    add(deselected, "deselected", "deselected");
    add(xfailed, "xfailed", "xfailed");
    add(xpassed, "xpassed", "xpassed");
    add(warnings, "warning", "warnings");
    add(errors, "error", "errors");
    add(rerun, "rerun", "rerun");
    for (const auto& [word, n] : other) add(n, word.c_str(), word.c_str());
    if (no_tests_ran) out = out.empty() ? "no tests ran" : "no tests ran, " + out;
    return out.empty() ? "no counts" : out;
}

}  // namespace kloop::eval
