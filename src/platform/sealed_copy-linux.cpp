// kloop platform: sealed memfd copies (Linux memfd_create + F_ADD_SEALS).
#include "platform/sealed_copy.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "platform/detail/unique_fd.hpp"
#include "platform/sha256.hpp"

namespace kloop::platform {

sealed_copy make_sealed_copy(const std::filesystem::path& file) {
    auto fail = [&](const std::string& what) -> std::runtime_error {
        return std::runtime_error("cannot copy '" + file.string() + "': " + what + ": " +
                                  detail::errno_message(errno));
    };
    detail::unique_fd in(::open(file.c_str(), O_RDONLY | O_CLOEXEC));
    if (!in.is_open()) throw fail("open");
    detail::unique_fd mem(::memfd_create("kloop-library", MFD_CLOEXEC | MFD_ALLOW_SEALING));
    if (!mem.is_open()) throw fail("memfd_create");
    sha256_hasher h;
    std::vector<char> buf(1 << 20);
    for (;;) {
        const ssize_t n = ::read(in.get(), buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) throw fail("read");
        if (n == 0) break;
        h.update(std::string_view(buf.data(), static_cast<std::size_t>(n)));
        for (ssize_t done = 0; done < n;) {
            const ssize_t w = ::write(mem.get(), buf.data() + done, static_cast<std::size_t>(n - done));
            if (w < 0 && errno == EINTR) continue;
            if (w < 0) throw fail("write");
            done += w;
        }
    }
    if (::fcntl(mem.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
        throw fail("seal");
    return {mem.release(), h.hex_digest()};
}

}  // namespace kloop::platform
