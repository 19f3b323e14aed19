// kloop runner: the JSON-lines channel from the runner back to the orchestrator.
//
// Responsibility: append one JSON object per line to the events file and flush it at once, so
// that when a candidate kills the runner the orchestrator still has every event written before
// the crash (and knows which call was in flight). Candidates' own stdout/stderr never mix in:
// the channel is a separate file. What it writes is an event of runner/events.hpp, nothing else.
#pragma once

#include <cstdio>
#include <string>

#include "runner/events.hpp"

namespace kloop::runner {

class event_writer {
public:
    explicit event_writer(const std::string& path);  // throws std::runtime_error
    ~event_writer();
    event_writer(const event_writer&) = delete;
    event_writer& operator=(const event_writer&) = delete;

    void write(const event& e);

private:
    std::FILE* m_file = nullptr;
};

}  // namespace kloop::runner
