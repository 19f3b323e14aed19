// kloop platform: locations of kloop's cache, home, bundled data, ABI header and tools (see paths.hpp).
#include "platform/paths.hpp"

#include <algorithm>
#include <cstdlib>
#include <pwd.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <fmt/format.h>

#include "core/error.hpp"
#include "kloop/install_layout.hpp"

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

const installed_layout& layout() {
    static const installed_layout l{install_layout::bin_to_prefix, install_layout::includedir,
                                    fs::path(install_layout::datadir) / "kloop",
                                    fs::path(install_layout::libexecdir) / "kloop"};
    return l;
}

std::vector<fs::path> prefix_roots(const fs::path& exe_dir) {
    std::vector<fs::path> roots;
    auto add = [&](const fs::path& p) {
        fs::path n = p.lexically_normal();
        if (!n.has_filename() && n.has_relative_path()) n = n.parent_path();  // "/opt/kloop/" -> "/opt/kloop"
        if (std::find(roots.begin(), roots.end(), n) == roots.end()) roots.push_back(n);
    };
    add(exe_dir / layout().bin_to_prefix);
    for (const char* up : {"..", "../..", "../../.."}) add(exe_dir / up);
    return roots;
}

std::optional<fs::path> find_data_dir(const fs::path& exe_dir) {
    std::error_code ec;
    for (const auto& root : prefix_roots(exe_dir))
        if (fs::path d = root / layout().data_dir; fs::is_directory(d, ec)) return d;
    return std::nullopt;
}

std::optional<fs::path> find_abi_include_dir(const fs::path& exe_dir) {
    for (const auto& root : prefix_roots(exe_dir)) {
        if (fs::path d = root / layout().include_dir; has_abi_header(d)) {
            std::error_code ec;
            fs::path real = fs::canonical(d, ec);
            return ec ? d : real;
        }
    }
    return std::nullopt;
}

fs::path find_tool(const fs::path& exe_dir, std::string_view name) {
    const fs::path tool_dir = (exe_dir / layout().bin_to_prefix / layout().tool_dir).lexically_normal();
    const fs::path installed = tool_dir / std::string(name);
    const fs::path beside = exe_dir / std::string(name);
    std::error_code ec;
    if (fs::exists(installed, ec)) return installed;
    if (fs::exists(beside, ec)) return beside;
    return fs::is_directory(tool_dir, ec) ? installed : beside;
}

namespace {

// " 'a' 'b'" for an error message.
std::string quoted_list(const std::vector<fs::path>& paths) {
    std::string where;
    for (const auto& p : paths) where += fmt::format(" '{}'", p.string());
    return where.empty() ? std::string(" no directory") : where;
}

}  // namespace

fs::path data_dir() {
    if (std::string d = env("KLOOP_DATA_DIR"); !d.empty()) {
        std::error_code ec;
        if (fs::is_directory(d, ec)) return fs::absolute(d).lexically_normal();
        throw usage_error(fmt::format(
            "KLOOP_DATA_DIR '{}' is not a directory; point it at kloop's data directory (<prefix>/{}, holding "
            "python/, calibrate/ and examples/)",
            d, layout().data_dir.string()));
    }
    const fs::path exe_dir = self_exe_path().parent_path();
    if (auto d = find_data_dir(exe_dir)) return *d;
    std::vector<fs::path> tried;
    for (const auto& root : prefix_roots(exe_dir)) tried.push_back(root / layout().data_dir);
    throw usage_error(fmt::format(
        "cannot find kloop's data directory (looked in{}); set KLOOP_DATA_DIR to the directory that holds "
        "python/, calibrate/ and examples/ (<prefix>/{} of an install)",
        quoted_list(tried), layout().data_dir.string()));
}

fs::path abi_include_dir() {
    if (std::string d = env("KLOOP_INCLUDE_DIR"); !d.empty()) {
        if (has_abi_header(d)) return d;
        throw usage_error(fmt::format(
            "KLOOP_INCLUDE_DIR '{}' does not contain kloop/kernel.h; point it at the directory that holds kloop/",
            d));
    }
    const fs::path exe_dir = self_exe_path().parent_path();
    if (auto d = find_abi_include_dir(exe_dir)) return *d;
    std::vector<fs::path> tried;
    for (const auto& root : prefix_roots(exe_dir)) tried.push_back(root / layout().include_dir);
    throw usage_error(fmt::format(
        "cannot find the candidate ABI header kloop/kernel.h (looked in{}); set KLOOP_INCLUDE_DIR to the "
        "directory that contains kloop/kernel.h",
        quoted_list(tried)));
}

fs::path sibling_tool(std::string_view name) {
    if (name == "kloop-runner") {
        if (std::string r = env("KLOOP_RUNNER"); !r.empty()) return r;
    }
    return find_tool(self_exe_path().parent_path(), name);
}

}  // namespace kloop::platform
