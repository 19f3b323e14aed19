// kloop eval: names of the evaluation enums.
#include "eval/record/evaluation.hpp"

namespace kloop::eval {

std::string to_string(disposition d) {
    switch (d) {
        case disposition::passed: return "passed";
        case disposition::gate_failed: return "gate_failed";
        case disposition::build_failed: return "build_failed";
    }
    return "?";
}

std::string to_string(check_status s) {
    switch (s) {
        case check_status::pass: return "pass";
        case check_status::warn: return "warn";
        case check_status::fail: return "fail";
        case check_status::skipped: return "skipped";
    }
    return "?";
}

}  // namespace kloop::eval
