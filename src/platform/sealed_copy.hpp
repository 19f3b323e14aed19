// kloop platform: an immutable in-memory copy of a file, verified by its hash.
//
// Responsibility: the way a library reaches a process that loads it: the bytes are copied into
// a memfd, sealed (no write, grow, shrink or further seals) and hashed; the caller compares the
// hash with the one recorded when the library was built and passes the descriptor on. Whatever
// happens to the file afterwards (another process rewriting the build cache), the loaded bytes
// are the verified ones; dlopen reads them through /proc/self/fd/N.
#pragma once

#include <filesystem>
#include <string>

namespace kloop::platform {

struct sealed_copy {
    int fd = -1;            // the sealed memfd (close-on-exec); the caller owns it
    std::string sha256;     // of the copied bytes, lower-case hex
};

// Throws std::runtime_error naming the file when it cannot be read or copied.
[[nodiscard]] sealed_copy make_sealed_copy(const std::filesystem::path& file);

}  // namespace kloop::platform
