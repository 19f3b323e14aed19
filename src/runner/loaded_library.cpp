// kloop runner: dlopen / dlsym wrapper.
#include "runner/loaded_library.hpp"

#include <dlfcn.h>

#include <stdexcept>

namespace kloop::runner {

loaded_library::loaded_library(const std::string& path) : m_path(path) {
    m_handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (m_handle == nullptr) {
        const char* why = ::dlerror();
        throw std::runtime_error("cannot load '" + path + "': " + (why ? why : "unknown error"));
    }
}

loaded_library::~loaded_library() {
    // Never dlclose: a candidate may have registered atexit handlers or threads that point into
    // its code; unloading it under them turns a clean exit into a crash.
}

entry_fn loaded_library::get_entry(const std::string& symbol) const {
    ::dlerror();
    void* sym = ::dlsym(m_handle, symbol.c_str());
    if (sym == nullptr)
        throw std::runtime_error("'" + m_path + "' does not export '" + symbol + "'");
    return reinterpret_cast<entry_fn>(sym);
}

}  // namespace kloop::runner
