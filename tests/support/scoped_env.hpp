// Test helper: set (or unset) an environment variable for one scope, restoring the old value after.
#pragma once

#include <cstdlib>
#include <optional>
#include <string>

namespace kloop::testing {

class scoped_env {
public:
    scoped_env(const char* name, std::optional<std::string> value) : m_name(name) {
        if (const char* old = std::getenv(name)) m_old = old;
        if (value) ::setenv(name, value->c_str(), 1);
        else ::unsetenv(name);
    }
    ~scoped_env() {
        if (m_old) ::setenv(m_name.c_str(), m_old->c_str(), 1);
        else ::unsetenv(m_name.c_str());
    }
    scoped_env(const scoped_env&) = delete;
    scoped_env& operator=(const scoped_env&) = delete;

private:
    std::string m_name;
    std::optional<std::string> m_old;
};

}  // namespace kloop::testing
