// kloop backend: the shared build cache (see build_cache.hpp).
#include "backend/build_cache.hpp"

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"
#include "platform/utc_time.hpp"

namespace kloop::backend {

namespace fs = std::filesystem;
using json = nlohmann::json;
using platform::detail::errno_message;

namespace {

constexpr std::size_t k_max_diagnostics_bytes = 64 * 1024;

std::string first_line(const std::string& text) {
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        std::string line = text.substr(start, end - start);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!line.empty()) return line;
        start = end + 1;
    }
    return {};
}

}  // namespace

json build_record::to_json() const {
    json j{{"ok", ok},
           {"cache_hit", cache_hit},
           {"library_sha256", library_sha256},
           {"library", library.string()},
           {"key", key},
           {"argv", argv},
           {"compiler", compiler},
           {"compiler_version", compiler_version},
           {"diagnostics", diagnostics},
           {"wall_s", wall_s},
           {"compile_wall_s", compile_wall_s},
           {"entry_dir", entry_dir.string()}};
    if (!target.empty()) j["target"] = target;
    if (!ptxas.is_null()) j["ptxas"] = ptxas;
    return j;
}

std::string getenv_string(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

std::string trim_diagnostics(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    if (text.size() <= k_max_diagnostics_bytes) return text;
    const std::size_t head = k_max_diagnostics_bytes * 3 / 4;
    const std::size_t tail = k_max_diagnostics_bytes / 8;
    std::size_t omitted = text.size() - head - tail;
    return text.substr(0, head) + fmt::format("\n... [{} bytes omitted] ...\n", omitted) +
           text.substr(text.size() - tail);
}

compiler_identity identify_compiler(const std::string& name, std::string_view what, std::string_view hint) {
    compiler_identity id;
    if (name.find('/') != std::string::npos) {
        id.invoked = fs::absolute(name).lexically_normal().string();
    } else {
        std::string path = getenv_string("PATH");
        std::size_t start = 0;
        while (start <= path.size() && id.invoked.empty()) {
            std::size_t end = path.find(':', start);
            if (end == std::string::npos) end = path.size();
            std::string dir = path.substr(start, end - start);
            if (dir.empty()) dir = ".";
            fs::path cand = fs::path(dir) / name;
            struct stat st {};
            if (::stat(cand.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(cand.c_str(), X_OK) == 0)
                id.invoked = fs::absolute(cand).lexically_normal().string();
            start = end + 1;
        }
    }
    struct stat st {};
    if (id.invoked.empty() || ::stat(id.invoked.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
        throw usage_error(fmt::format("cannot find the {} '{}'{}; {}", what, name,
                                      name.find('/') == std::string::npos ? " on PATH" : "", hint));
    std::error_code ec;
    fs::path canon = fs::canonical(id.invoked, ec);
    id.resolved = ec ? id.invoked : canon.string();
    struct stat rst {};
    if (::stat(id.resolved.c_str(), &rst) != 0) rst = st;
    id.fingerprint = fmt::format("{}|{}|{}|{}.{:09}", id.invoked, id.resolved, static_cast<long long>(rst.st_size),
                                 static_cast<long long>(rst.st_mtim.tv_sec), static_cast<long>(rst.st_mtim.tv_nsec));
    return id;
}

std::vector<std::string> parse_depfile(const std::string& text) {
    std::vector<std::string> deps;
    // The target is ours (the temporary library path), so the first ':' followed by blank ends it.
    std::size_t pos = 0;
    for (;;) {
        pos = text.find(':', pos);
        if (pos == std::string::npos) return deps;
        if (pos + 1 >= text.size() || text[pos + 1] == ' ' || text[pos + 1] == '\t' || text[pos + 1] == '\n' ||
            text[pos + 1] == '\r' || text[pos + 1] == '\\')
            break;
        ++pos;
    }
    std::string cur;
    auto flush = [&] {
        if (!cur.empty()) deps.push_back(cur);
        cur.clear();
    };
    for (std::size_t i = pos + 1; i < text.size(); ++i) {
        char c = text[i];
        if (c == '\\' && i + 1 < text.size()) {
            char n = text[i + 1];
            if (n == '\n') { flush(); ++i; continue; }
            if (n == '\r' && i + 2 < text.size() && text[i + 2] == '\n') { flush(); i += 2; continue; }
            if (n == ' ' || n == '#' || n == '\\') { cur.push_back(n); ++i; continue; }
            cur.push_back(c);
            continue;
        }
        if (c == '$' && i + 1 < text.size() && text[i + 1] == '$') { cur.push_back('$'); ++i; continue; }
        if (c == '\n') {
            flush();
            // A new, unescaped line after the first rule: another rule (-MP phony targets); stop.
            break;
        }
        if (c == ' ' || c == '\t' || c == '\r') { flush(); continue; }
        cur.push_back(c);
    }
    flush();
    return deps;
}


std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return fmt::format("{}-{}", static_cast<long>(::getpid()), counter.fetch_add(1));
}

std::string compiler_version_cache::get(platform::command_runner_base& runner, const compiler_identity& id,
                                        std::vector<std::string> args, line_picker pick) {
    if (auto it = m_versions.find(id.fingerprint); it != m_versions.end()) return it->second;
    platform::process_request q;
    q.argv = {id.invoked};
    q.argv.insert(q.argv.end(), args.begin(), args.end());
    q.timeout_s = 30;
    q.env_overrides = {{"LC_ALL", "C"}};
    auto res = runner.run(q);
    std::string version;
    if (res.succeeded()) version = pick != nullptr ? pick(res.stdout_text) : first_line(res.stdout_text);
    if (version.empty()) version = fmt::format("unknown ({} {}: {})", id.invoked, args.empty() ? "" : args.front(), res.describe());
    m_versions.emplace(id.fingerprint, version);
    return version;
}

cache_entry::cache_entry(const fs::path& cache_root, std::string key)
    : m_dir(cache_root / "build" / key), m_key(std::move(key)) {}

std::optional<json> cache_entry::find_hit() const {
    try {
        std::error_code ec;
        if (!fs::is_regular_file(m_dir / "meta.json", ec) || !fs::is_regular_file(get_library(), ec))
            return std::nullopt;
        json meta = json::parse(platform::read_file(m_dir / "meta.json"));
        json deps = json::parse(platform::read_file(m_dir / "deps.json"));
        if (meta.value("schema_version", 0) != build_cache_schema_version || meta.value("key", std::string()) != m_key)
            return std::nullopt;
        const auto lib_sha = meta.value("library_sha256", std::string());
        if (lib_sha.empty() || platform::sha256_file(get_library()) != lib_sha) return std::nullopt;
        if (deps.value("schema_version", 0) != build_cache_schema_version || !deps.contains("deps"))
            return std::nullopt;
        for (const auto& d : deps.at("deps")) {
            fs::path p = d.at("path").get<std::string>();
            if (!fs::is_regular_file(p, ec)) return std::nullopt;
            if (platform::sha256_file(p) != d.at("sha256").get<std::string>()) return std::nullopt;
        }
        return meta;
    } catch (const std::exception&) {
        return std::nullopt;  // unreadable or malformed entry: rebuild it
    }
}

cache_entry::lock::lock(const fs::path& file) : m_fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
    if (!m_fd.is_open())
        throw usage_error(fmt::format("cannot open lock file '{}' in the build cache: {}", file.string(),
                                      errno_message(errno)));
    while (::flock(m_fd.get(), LOCK_EX) != 0) {
        if (errno != EINTR)
            throw usage_error(fmt::format("cannot lock '{}' in the build cache: {}", file.string(),
                                          errno_message(errno)));
    }
}

cache_entry::lock cache_entry::acquire() const {
    platform::ensure_directory(m_dir);
    return lock(m_dir / ".lock");
}

void cache_entry::invalidate() const {
    std::error_code ec;
    fs::remove(m_dir / "meta.json", ec);
}

std::string cache_entry::publish(const fs::path& built_library, const std::vector<std::string>& dep_paths,
                          const fs::path& fallback_dep, json meta) const {
    json deps = json::array();
    std::vector<std::string> paths = dep_paths;
    if (paths.empty()) paths.push_back(fallback_dep.string());
    for (const auto& d : paths) {
        fs::path p = fs::path(d).is_absolute() ? fs::path(d) : (m_dir / d);
        p = p.lexically_normal();
        std::string digest;
        try {
            digest = platform::sha256_file(p);
        } catch (const usage_error&) {
            digest = "missing";  // can never match: the entry will be rebuilt next time
        }
        deps.push_back(json{{"path", p.string()}, {"sha256", digest}});
    }
    const fs::path lib = get_library();
    if (::rename(built_library.c_str(), lib.c_str()) != 0)
        throw usage_error(fmt::format("cannot write '{}' in the build cache: {}", lib.string(), errno_message(errno)));
    platform::write_file_atomic(m_dir / "deps.json",
                                json{{"schema_version", build_cache_schema_version}, {"deps", deps}}.dump(1) + "\n");
    meta["schema_version"] = build_cache_schema_version;
    meta["key"] = m_key;
    meta["library_sha256"] = platform::sha256_file(lib);
    if (!meta.contains("created")) meta["created"] = platform::utc_now_iso8601();
    platform::write_file_atomic(m_dir / "meta.json", meta.dump(1) + "\n");
    return meta["library_sha256"].get<std::string>();
}

scoped_file_cleanup::~scoped_file_cleanup() {
    for (const auto& f : files) {
        std::error_code e;
        fs::remove(f, e);
    }
}

std::optional<build_record> cache_entry::find_hit_record() const {
    auto meta = find_hit();
    if (!meta) return std::nullopt;
    try {
        build_record rec;
        rec.ok = true;
        rec.cache_hit = true;
        rec.library = get_library();
        rec.library_sha256 = meta->value("library_sha256", std::string());
        rec.entry_dir = get_dir();
        rec.key = get_key();
        rec.argv = meta->at("argv").get<std::vector<std::string>>();
        rec.compiler = meta->value("compiler", std::string());
        rec.compiler_version = meta->value("compiler_version", std::string());
        rec.compile_wall_s = meta->value("wall_s", 0.0);
        rec.diagnostics = meta->value("diagnostics", std::string());
        rec.target = meta->value("target", std::string());
        rec.ptxas = meta->value("ptxas", nlohmann::json());
        return rec;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace kloop::backend
