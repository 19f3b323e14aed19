// kloop runner: JSON-lines event file.
#include "runner/event_writer.hpp"

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace kloop::runner {

event_writer::event_writer(const std::string& path) {
    m_file = std::fopen(path.c_str(), "we");
    if (m_file == nullptr)
        throw std::runtime_error("cannot open events file '" + path + "': " + std::strerror(errno));
}

event_writer::~event_writer() {
    if (m_file != nullptr) std::fclose(m_file);
}

void event_writer::write(const event& e) {
    const std::string line = to_json(e).dump() + "\n";
    std::fwrite(line.data(), 1, line.size(), m_file);
    std::fflush(m_file);
}

}  // namespace kloop::runner
