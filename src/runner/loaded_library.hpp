// kloop runner: a candidate or reference shared object loaded with dlopen.
//
// Responsibility: open a library (RTLD_NOW | RTLD_LOCAL, so an unresolved symbol fails here and
// not in the middle of a timed call) and resolve entry points of the ABI's signature. Failures
// throw std::runtime_error with dlerror()'s text; the runner reports them as the candidate's
// rejection.
#pragma once

#include <string>

#include "runner/executor.hpp"

namespace kloop::runner {

class loaded_library {
public:
    explicit loaded_library(const std::string& path);
    ~loaded_library();
    loaded_library(const loaded_library&) = delete;
    loaded_library& operator=(const loaded_library&) = delete;

    // Throws std::runtime_error naming the symbol and the library when it is missing.
    [[nodiscard]] entry_fn get_entry(const std::string& symbol) const;
    [[nodiscard]] const std::string& get_path() const noexcept { return m_path; }

private:
    std::string m_path;
    void* m_handle = nullptr;
};

}  // namespace kloop::runner
