// kloop loop: the fault-injection seam for crash-safety tests.
//
// Responsibility: let a test kill kloop at a named point of a multi-step write (iterate, init,
// report) without a debugger. fault_point("x") sends SIGKILL to the own process when the
// environment variable KLOOP_FAULT_POINT equals "x" (to its whole process group when
// KLOOP_FAULT_GROUP=1: the test runs kloop as a group leader); otherwise it does nothing. The points are
// listed in docs/loop.md ("Crash safety"); tests/integration/loop_test.cpp kills at each one and
// checks that the next command sees a consistent workspace.
#pragma once

#include <string_view>

namespace kloop::loop {

void fault_point(std::string_view name);

}  // namespace kloop::loop
