// kloop core: error message formatting.
#include "core/error.hpp"

namespace kloop {

namespace {
std::string format_spec_error(const std::string& file, int line, const std::string& field,
                              const std::string& why) {
    std::string where = file;
    if (line > 0) where += ":" + std::to_string(line);
    return where + ": field '" + field + "': " + why;
}
}  // namespace

spec_error::spec_error(std::string file, int line, std::string field, const std::string& why)
    : error(exit_code::usage_error, format_spec_error(file, line, field, why)),
      m_file(std::move(file)),
      m_line(line),
      m_field(std::move(field)) {}

}  // namespace kloop
