// kloop loop: the fault-injection seam (see fault_point.hpp).
#include "loop/fault_point.hpp"

#include <csignal>
#include <cstdlib>
#include <unistd.h>

namespace kloop::loop {

void fault_point(std::string_view name) {
    const char* wanted = std::getenv("KLOOP_FAULT_POINT");
    if (wanted == nullptr || name != wanted) return;
    ::kill(::getpid(), SIGKILL);
    ::pause();  // SIGKILL cannot be caught; never returns
}

}  // namespace kloop::loop
