// kloop platform: SHA-256 of bytes and files (OpenSSL libcrypto's EVP interface).
//
// Responsibility: content hashes for frozen files, the build cache key and dependency
// checks. Digests are lower-case hex, 64 characters.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>

namespace kloop::platform {

[[nodiscard]] std::string sha256_hex(std::string_view data);

// Streams the file in chunks. Throws kloop::usage_error naming the path and the reason.
[[nodiscard]] std::string sha256_file(const std::filesystem::path& path);

// Incremental hashing (addition beyond the brief), for keys made of several parts.
class sha256_hasher {
public:
    sha256_hasher();
    ~sha256_hasher();
    sha256_hasher(const sha256_hasher&) = delete;
    sha256_hasher& operator=(const sha256_hasher&) = delete;

    sha256_hasher& update(std::string_view data);
    // Adds the length first, so that ("ab","c") and ("a","bc") hash differently.
    sha256_hasher& update_field(std::string_view data);
    // The digest of everything so far; the hasher is reset afterwards.
    [[nodiscard]] std::string hex_digest();

private:
    struct impl;
    std::unique_ptr<impl> m_impl;
};

}  // namespace kloop::platform
