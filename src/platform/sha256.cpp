// kloop platform: SHA-256 through OpenSSL's EVP interface.
#include "platform/sha256.hpp"

#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>
#include <openssl/evp.h>

#include "core/error.hpp"
#include "platform/detail/unique_fd.hpp"

namespace kloop::platform {

using detail::errno_message;
using detail::unique_fd;

struct sha256_hasher::impl {
    EVP_MD_CTX* ctx = nullptr;
    impl() : ctx(EVP_MD_CTX_new()) {
        if (ctx == nullptr) throw internal_error("sha256: EVP_MD_CTX_new failed");
        init();
    }
    ~impl() { EVP_MD_CTX_free(ctx); }
    impl(const impl&) = delete;
    impl& operator=(const impl&) = delete;
    void init() {
        if (EVP_DigestInit_ex(ctx, EVP_sha256(), nullptr) != 1)
            throw internal_error("sha256: EVP_DigestInit_ex failed");
    }
};

sha256_hasher::sha256_hasher() : m_impl(std::make_unique<impl>()) {}
sha256_hasher::~sha256_hasher() = default;

sha256_hasher& sha256_hasher::update(std::string_view data) {
    if (!data.empty() && EVP_DigestUpdate(m_impl->ctx, data.data(), data.size()) != 1)
        throw internal_error("sha256: EVP_DigestUpdate failed");
    return *this;
}

sha256_hasher& sha256_hasher::update_field(std::string_view data) {
    std::uint64_t n = data.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(n >> (8 * i));
    update(std::string_view(reinterpret_cast<const char*>(len), sizeof len));
    return update(data);
}

std::string sha256_hasher::hex_digest() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    if (EVP_DigestFinal_ex(m_impl->ctx, md, &len) != 1) throw internal_error("sha256: EVP_DigestFinal_ex failed");
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        out.push_back(hex[md[i] >> 4]);
        out.push_back(hex[md[i] & 0xF]);
    }
    m_impl->init();
    return out;
}

std::string sha256_hex(std::string_view data) {
    sha256_hasher h;
    h.update(data);
    return h.hex_digest();
}

std::string sha256_file(const std::filesystem::path& path) {
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.is_open()) throw usage_error(fmt::format("cannot open file '{}': {}", path.string(), errno_message(errno)));
    sha256_hasher h;
    char buf[1 << 16];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n > 0) {
            h.update(std::string_view(buf, static_cast<std::size_t>(n)));
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            throw usage_error(fmt::format("cannot read file '{}': {}", path.string(), errno_message(errno)));
        }
    }
    return h.hex_digest();
}

}  // namespace kloop::platform
