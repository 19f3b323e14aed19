// kloop platform: locations of kloop's data, cache, ABI header and sibling tools.
#include "platform/paths.hpp"

#include <cstdlib>
#include <pwd.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"

namespace kloop::platform {

namespace fs = std::filesystem;

namespace {

// The value of an environment variable, empty when unset.
std::string env(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// An XDG base directory variable: only absolute values count.
fs::path xdg(const char* name) {
    fs::path p = env(name);
    return p.is_absolute() ? p : fs::path();
}

fs::path home_dir() {
    std::string home = env("HOME");
    if (!home.empty()) return home;
    std::vector<char> buf(16384);
    struct passwd pw {};
    struct passwd* result = nullptr;
    if (::getpwuid_r(::getuid(), &pw, buf.data(), buf.size(), &result) == 0 && result != nullptr &&
        result->pw_dir != nullptr && result->pw_dir[0] != '\0')
        return result->pw_dir;
    throw usage_error("cannot find a home directory: HOME is not set; set KLOOP_HOME to where kloop may keep its data");
}

bool has_abi_header(const fs::path& dir) {
    std::error_code ec;
    return fs::is_regular_file(dir / "kloop" / "kernel.h", ec);
}

}  // namespace

fs::path self_exe_path() {
    std::error_code ec;
    fs::path p = fs::read_symlink("/proc/self/exe", ec);
    if (ec) throw usage_error(fmt::format("cannot resolve the running executable '/proc/self/exe': {}", ec.message()));
    return p;
}

fs::path kloop_home() {
    if (std::string h = env("KLOOP_HOME"); !h.empty()) return h;
    if (fs::path x = xdg("XDG_DATA_HOME"); !x.empty()) return x / "kloop";
    return home_dir() / ".local" / "share" / "kloop";
}

fs::path cache_dir() {
    if (std::string h = env("KLOOP_HOME"); !h.empty()) return fs::path(h) / "cache";
    if (fs::path x = xdg("XDG_CACHE_HOME"); !x.empty()) return x / "kloop";
    return home_dir() / ".cache" / "kloop";
}

fs::path abi_include_dir() {
    if (std::string d = env("KLOOP_INCLUDE_DIR"); !d.empty()) {
        if (has_abi_header(d)) return d;
        throw usage_error(fmt::format(
            "KLOOP_INCLUDE_DIR '{}' does not contain kloop/kernel.h; point it at the directory that holds kloop/",
            d));
    }
#ifdef KLOOP_SOURCE_DIR
    if (fs::path src = fs::path(KLOOP_SOURCE_DIR) / "include"; has_abi_header(src)) return src;
#endif
    std::vector<fs::path> tried;
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        fs::path dir = exe.parent_path();
        for (const char* rel : {"../include", "../../include", "../../../include"}) {
            fs::path cand = (dir / rel).lexically_normal();
            if (has_abi_header(cand)) return cand;
            tried.push_back(cand);
        }
    }
    std::string where;
    for (const auto& t : tried) where += fmt::format(" '{}'", t.string());
    throw usage_error(fmt::format(
        "cannot find the candidate ABI header kloop/kernel.h (looked in{}); set KLOOP_INCLUDE_DIR to the "
        "directory that contains kloop/kernel.h",
        where.empty() ? std::string(" no directory") : where));
}

fs::path sibling_tool(std::string_view name) {
    if (name == "kloop-runner") {
        if (std::string r = env("KLOOP_RUNNER"); !r.empty()) return r;
    }
    return self_exe_path().parent_path() / std::string(name);
}

}  // namespace kloop::platform
