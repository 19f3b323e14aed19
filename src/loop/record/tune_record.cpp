// kloop loop/record: a tune's record (see tune_record.hpp).
#include "loop/record/tune_record.hpp"

namespace kloop::loop {

std::string to_string(tune_point_status s) {
    switch (s) {
        case tune_point_status::start: return "start";
        case tune_point_status::faster: return "faster";
        case tune_point_status::not_faster: return "not_faster";
        case tune_point_status::red: return "red";
        case tune_point_status::build_failed: return "build_failed";
        case tune_point_status::duplicate: return "duplicate";
    }
    return "unknown";
}

}  // namespace kloop::loop
