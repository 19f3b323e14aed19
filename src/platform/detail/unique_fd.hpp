// kloop platform (detail): an owning file descriptor and the OS-error wording shared by the
// platform sources. Not part of the public platform API.
#pragma once

#include <cerrno>
#include <string>
#include <system_error>
#include <unistd.h>

namespace kloop::platform::detail {

// Closes its descriptor on destruction; move-only.
class unique_fd {
public:
    unique_fd() = default;
    explicit unique_fd(int fd) noexcept : m_fd(fd) {}
    unique_fd(const unique_fd&) = delete;
    unique_fd& operator=(const unique_fd&) = delete;
    unique_fd(unique_fd&& other) noexcept : m_fd(other.release()) {}
    unique_fd& operator=(unique_fd&& other) noexcept {
        if (this != &other) reset(other.release());
        return *this;
    }
    ~unique_fd() { reset(); }

    [[nodiscard]] int get() const noexcept { return m_fd; }
    [[nodiscard]] bool is_open() const noexcept { return m_fd >= 0; }
    int release() noexcept {
        int fd = m_fd;
        m_fd = -1;
        return fd;
    }
    void reset(int fd = -1) noexcept {
        if (m_fd >= 0) ::close(m_fd);
        m_fd = fd;
    }

private:
    int m_fd = -1;
};

// "No such file or directory" for ENOENT; thread-safe unlike strerror().
inline std::string errno_message(int err) { return std::generic_category().message(err); }

}  // namespace kloop::platform::detail
