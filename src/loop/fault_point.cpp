// kloop loop: the fault-injection seam (see fault_point.hpp).
#include "loop/fault_point.hpp"

#include <csignal>
#include <cstdlib>
#include <string_view>
#include <unistd.h>

namespace kloop::loop {

void fault_point(std::string_view name) {
    const char* wanted = std::getenv("KLOOP_FAULT_POINT");
    if (wanted == nullptr || name != wanted) return;
    // KLOOP_FAULT_GROUP=1: the whole process group (0), as a terminal's or a job runner's kill does.
    const char* group = std::getenv("KLOOP_FAULT_GROUP");
    ::kill(group != nullptr && std::string_view(group) == "1" ? 0 : ::getpid(), SIGKILL);
    ::pause();  // SIGKILL cannot be caught; never returns
}

}  // namespace kloop::loop
