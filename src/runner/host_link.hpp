// kloop runner: the message link between the checker and the candidate host.
//
// Responsibility: one SOCK_SEQPACKET socket (message boundaries kept by the kernel), each
// message a JSON object, optionally carrying file descriptors (SCM_RIGHTS: the shared buffers'
// memfds, the sealed copy of a library). Requests go checker → host, each answered by exactly
// one reply; nothing else travels on it. A link that breaks (the host died, a torn or oversized
// message) throws link_error: the checker reports the host's death as the candidate's failure.
#pragma once

#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::runner {

struct link_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class host_link {
public:
    static constexpr std::size_t k_max_message_bytes = 4 << 20;

    // Takes ownership of `fd` (one end of a socketpair(AF_UNIX, SOCK_SEQPACKET)).
    explicit host_link(int fd);
    ~host_link();
    host_link(const host_link&) = delete;
    host_link& operator=(const host_link&) = delete;

    // Sends one message with the given descriptors (not closed here).
    void send(const nlohmann::json& message, const std::vector<int>& fds = {});
    // Receives one message; the descriptors it carried go to `fds` (owned by the caller), or are
    // closed when `fds` is null. Throws link_error at end of stream or on a malformed message.
    nlohmann::json receive(std::vector<int>* fds = nullptr);

    [[nodiscard]] int get_fd() const noexcept { return m_fd; }

private:
    int m_fd = -1;
    std::vector<char> m_buffer;
};

// A connected pair (checker end, host end), both close-on-exec.
struct link_pair {
    int checker = -1;
    int host = -1;
};
[[nodiscard]] link_pair make_link_pair();

}  // namespace kloop::runner
