// kloop platform: whole-file reads, atomic writes, scoped temporary directories.
#include "platform/file_io.hpp"

#include <cerrno>
#include <cstdlib>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/detail/unique_fd.hpp"
#include "platform/stale_scratch.hpp"

namespace kloop::platform {

using detail::errno_message;
using detail::unique_fd;

namespace fs = std::filesystem;

std::string read_file(const fs::path& path) {
    // O_NONBLOCK: opening a FIFO with no writer must not hang kloop; it is refused below.
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
    if (!fd.is_open()) throw usage_error(fmt::format("cannot open file '{}': {}", path.string(), errno_message(errno)));
    std::string out;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0)
        throw usage_error(fmt::format("cannot read file '{}': {}", path.string(), errno_message(errno)));
    if (!S_ISREG(st.st_mode))  // a FIFO, a device (/dev/zero), a socket, a directory
        throw usage_error(fmt::format("cannot read file '{}': not a regular file", path.string()));
    if (st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
    char buf[65536];
    for (;;) {
        ssize_t n = ::read(fd.get(), buf, sizeof buf);
        if (n > 0) {
            out.append(buf, static_cast<std::size_t>(n));
        } else if (n == 0) {
            break;
        } else if (errno != EINTR) {
            throw usage_error(fmt::format("cannot read file '{}': {}", path.string(), errno_message(errno)));
        }
    }
    return out;
}

void ensure_directory(const fs::path& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    if (fs::is_directory(dir, ec)) return;
    // Tell "something in the way" apart from a failed create (nvbench's ensure_output_directory).
    for (fs::path p = dir; !p.empty(); p = p.parent_path()) {
        std::error_code ec2;
        auto st = fs::status(p, ec2);
        if (fs::exists(st)) {
            if (!fs::is_directory(st))
                throw usage_error(fmt::format("cannot create directory '{}': '{}' exists and is not a directory",
                                              dir.string(), p.string()));
            break;
        }
        if (p == p.parent_path()) break;
    }
    fs::create_directories(dir, ec);
    if (ec) throw usage_error(fmt::format("cannot create directory '{}': {}", dir.string(), ec.message()));
}

void write_file_atomic(const fs::path& path, std::string_view content) {
    if (path.empty() || !path.has_filename())
        throw usage_error(fmt::format("cannot write file '{}': not a file path", path.string()));
    const fs::path dir = path.has_parent_path() ? path.parent_path() : fs::path(".");
    ensure_directory(dir);

    // Temp file beside the target so that rename() stays within one filesystem.
    std::string tmpl = (dir / ("." + path.filename().string() + ".tmp-XXXXXX")).string();
    unique_fd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
    if (!fd.is_open())
        throw usage_error(fmt::format("cannot write file '{}': cannot create a temporary file in '{}': {}",
                                      path.string(), dir.string(), errno_message(errno)));
    const std::string tmp_path = tmpl;
    auto fail = [&](const std::string& what, int err) {
        fd.reset();
        ::unlink(tmp_path.c_str());
        throw usage_error(fmt::format("cannot write file '{}': {}: {}", path.string(), what, errno_message(err)));
    };

    const char* p = content.data();
    std::size_t left = content.size();
    while (left > 0) {
        ssize_t n = ::write(fd.get(), p, left);
        if (n < 0) {
            if (errno == EINTR) continue;
            fail("write failed", errno);
        }
        p += n;
        left -= static_cast<std::size_t>(n);
    }
    mode_t mode = 0644;
    struct stat st {};
    if (::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode)) mode = st.st_mode & 07777;
    if (::fchmod(fd.get(), mode) != 0) fail("chmod failed", errno);
    if (::fsync(fd.get()) != 0) fail("fsync failed", errno);
    if (::close(fd.release()) != 0) fail("close failed", errno);
    if (::rename(tmp_path.c_str(), path.c_str()) != 0) fail("rename failed", errno);
    // Make the rename itself durable; failure here loses nothing already visible.
    unique_fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dfd.is_open()) ::fsync(dfd.get());
}

scoped_temp_dir::scoped_temp_dir(std::string_view prefix) {
    std::error_code ec;
    fs::path base = fs::temp_directory_path(ec);
    if (ec) base = "/tmp";
    std::string tmpl = (base / (std::string(prefix) + "-XXXXXX")).string();
    if (::mkdtemp(tmpl.data()) == nullptr)
        throw usage_error(fmt::format("cannot create a temporary directory in '{}': {}", base.string(),
                                      errno_message(errno)));
    m_path = tmpl;
    m_claim = claim_scratch_dir(m_path);
}

scoped_temp_dir::~scoped_temp_dir() { remove_now(); }

void scoped_temp_dir::keep() {
    m_keep = true;
    release_scratch_claim(m_path, m_claim);
    m_claim = -1;
}

scoped_temp_dir::scoped_temp_dir(scoped_temp_dir&& other) noexcept
    : m_path(std::move(other.m_path)), m_keep(other.m_keep), m_claim(other.m_claim) {
    other.m_path.clear();
    other.m_claim = -1;
}

scoped_temp_dir& scoped_temp_dir::operator=(scoped_temp_dir&& other) noexcept {
    if (this != &other) {
        remove_now();
        m_path = std::move(other.m_path);
        m_keep = other.m_keep;
        m_claim = other.m_claim;
        other.m_path.clear();
        other.m_claim = -1;
    }
    return *this;
}

void scoped_temp_dir::remove_now() noexcept {
    if (m_path.empty() || m_keep) return;
    std::error_code ec;
    fs::remove_all(m_path, ec);  // best effort: a destructor must not throw
    release_scratch_claim(m_path, m_claim);  // after the directory: a sweep never sees it unclaimed
    m_claim = -1;
    m_path.clear();
}

}  // namespace kloop::platform
