// kloop runner: SOCK_SEQPACKET messages with SCM_RIGHTS descriptors.
#include "runner/host_link.hpp"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace kloop::runner {

namespace {

constexpr std::size_t k_max_fds = 8;

}  // namespace

host_link::host_link(int fd) : m_fd(fd), m_buffer(k_max_message_bytes) {}

host_link::~host_link() {
    if (m_fd >= 0) ::close(m_fd);
}

void host_link::send(const nlohmann::json& message, const std::vector<int>& fds) {
    const std::string text = message.dump();
    if (text.size() > k_max_message_bytes) throw link_error("message too large for the host link");
    if (fds.size() > k_max_fds) throw link_error("too many descriptors in one message");
    iovec iov{const_cast<char*>(text.data()), text.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_max_fds)] = {};
    if (!fds.empty()) {
        msg.msg_control = control;
        msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
        cmsghdr* c = CMSG_FIRSTHDR(&msg);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
        std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
    }
    for (;;) {
        const ssize_t n = ::sendmsg(m_fd, &msg, MSG_NOSIGNAL);
        if (n >= 0) return;
        if (errno == EINTR) continue;
        throw link_error(std::string("host link: send failed: ") + std::strerror(errno));
    }
}

nlohmann::json host_link::receive(std::vector<int>* fds) {
    iovec iov{m_buffer.data(), m_buffer.size()};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * k_max_fds)] = {};
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = -1;
    for (;;) {
        n = ::recvmsg(m_fd, &msg, MSG_CMSG_CLOEXEC);
        if (n >= 0 || errno != EINTR) break;
    }
    if (n < 0) throw link_error(std::string("host link: receive failed: ") + std::strerror(errno));
    std::vector<int> got;
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
            for (std::size_t i = 0; i < count; ++i) {
                int fd = -1;
                std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
                got.push_back(fd);
            }
        }
    auto drop = [&] {
        for (int fd : got) ::close(fd);
    };
    if (n == 0) {
        drop();
        throw link_error("host link: the other end closed");
    }
    if ((msg.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0) {
        drop();
        throw link_error("host link: a truncated message");
    }
    auto j = nlohmann::json::parse(m_buffer.begin(), m_buffer.begin() + n, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        drop();
        throw link_error("host link: a malformed message");
    }
    if (fds != nullptr) *fds = std::move(got);
    else drop();
    return j;
}

link_pair make_link_pair() {
    int sv[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        throw std::runtime_error(std::string("socketpair: ") + std::strerror(errno));
    const int size = static_cast<int>(host_link::k_max_message_bytes);
    for (int fd : sv) {
        (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
        (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    }
    return {sv[0], sv[1]};
}

}  // namespace kloop::runner
