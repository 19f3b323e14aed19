// kloop backend/cpu: the cached C++ → shared-object build (see cpu_builder.hpp for the cache).
#include "backend/cpu/cpu_builder.hpp"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <fcntl.h>
#include <optional>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "platform/detail/unique_fd.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"
#include "platform/sha256.hpp"
#include "platform/subprocess.hpp"

namespace kloop::backend::cpu {

namespace fs = std::filesystem;
using json = nlohmann::json;
using platform::detail::errno_message;
using platform::detail::unique_fd;

namespace {

constexpr int k_schema_version = 1;
constexpr std::string_view k_key_salt = "kloop/backend/cpu/build/v1";
constexpr std::size_t k_max_diagnostics_bytes = 64 * 1024;

using clock_type = std::chrono::steady_clock;

double seconds_since(clock_type::time_point t0) {
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

std::string getenv_str(const char* name) {
    const char* v = std::getenv(name);
    return v != nullptr ? std::string(v) : std::string();
}

// Keeps the head (where the first error is) and the tail of long compiler output.
std::string trim_diagnostics(std::string text) {
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ' || text.back() == '\r')) text.pop_back();
    if (text.size() <= k_max_diagnostics_bytes) return text;
    const std::size_t head = k_max_diagnostics_bytes * 3 / 4;
    const std::size_t tail = k_max_diagnostics_bytes / 8;
    std::size_t omitted = text.size() - head - tail;
    return text.substr(0, head) + fmt::format("\n... [{} bytes omitted] ...\n", omitted) +
           text.substr(text.size() - tail);
}

struct compiler_identity {
    std::string invoked;   // what argv[0] will be (PATH-resolved, symlinks kept: clang++ vs clang)
    std::string resolved;  // the file it finally points at
    std::string fingerprint;
};

compiler_identity identify_compiler(const std::string& name) {
    compiler_identity id;
    if (name.find('/') != std::string::npos) {
        id.invoked = fs::absolute(name).lexically_normal().string();
    } else {
        std::string path = getenv_str("PATH");
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
        throw usage_error(fmt::format(
            "cannot find the C++ compiler '{}'{}; install one or name it with KLOOP_CXX", name,
            name.find('/') == std::string::npos ? " on PATH" : ""));
    std::error_code ec;
    fs::path canon = fs::canonical(id.invoked, ec);
    id.resolved = ec ? id.invoked : canon.string();
    struct stat rst {};
    if (::stat(id.resolved.c_str(), &rst) != 0) rst = st;
    id.fingerprint = fmt::format("{}|{}|{}|{}.{:09}", id.invoked, id.resolved, static_cast<long long>(rst.st_size),
                                 static_cast<long long>(rst.st_mtim.tv_sec), static_cast<long>(rst.st_mtim.tv_nsec));
    return id;
}

// The prerequisites of the first rule of a make-style depfile (gcc/clang -MD output).
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

std::string utc_now_iso8601() {
    std::time_t t = std::time(nullptr);
    std::tm tm {};
    ::gmtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return buf;
}

bool flags_set_standard(const std::vector<std::string>& flags) {
    return std::any_of(flags.begin(), flags.end(), [](const std::string& f) {
        return f.rfind("-std=", 0) == 0 || f.rfind("--std", 0) == 0;
    });
}

// A valid cache entry turned into a record, or nothing. Spawns no process; never throws.
std::optional<build_record> try_cache_hit(const fs::path& entry, const std::string& key) {
    try {
        std::error_code ec;
        const fs::path lib = entry / "lib.so";
        if (!fs::is_regular_file(entry / "meta.json", ec) || !fs::is_regular_file(lib, ec)) return std::nullopt;
        json meta = json::parse(platform::read_file(entry / "meta.json"));
        json deps = json::parse(platform::read_file(entry / "deps.json"));
        if (meta.value("schema_version", 0) != k_schema_version || meta.value("key", std::string()) != key)
            return std::nullopt;
        if (deps.value("schema_version", 0) != k_schema_version || !deps.contains("deps")) return std::nullopt;
        for (const auto& d : deps.at("deps")) {
            fs::path p = d.at("path").get<std::string>();
            if (!fs::is_regular_file(p, ec)) return std::nullopt;
            if (platform::sha256_file(p) != d.at("sha256").get<std::string>()) return std::nullopt;
        }
        build_record rec;
        rec.ok = true;
        rec.cache_hit = true;
        rec.library = lib;
        rec.entry_dir = entry;
        rec.key = key;
        rec.argv = meta.at("argv").get<std::vector<std::string>>();
        rec.compiler = meta.value("compiler", std::string());
        rec.compiler_version = meta.value("compiler_version", std::string());
        rec.compile_wall_s = meta.value("wall_s", 0.0);
        rec.diagnostics = meta.value("diagnostics", std::string());
        return rec;
    } catch (const std::exception&) {
        return std::nullopt;  // unreadable or malformed entry: rebuild it
    }
}

// An exclusive flock held for the lifetime of the object.
class entry_lock {
public:
    explicit entry_lock(const fs::path& file) : m_fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644)) {
        if (!m_fd.is_open())
            throw usage_error(fmt::format("cannot open lock file '{}' in the build cache: {}", file.string(),
                                          errno_message(errno)));
        while (::flock(m_fd.get(), LOCK_EX) != 0) {
            if (errno != EINTR)
                throw usage_error(fmt::format("cannot lock '{}' in the build cache: {}", file.string(),
                                              errno_message(errno)));
        }
    }

private:
    unique_fd m_fd;  // closing it releases the lock
};

std::string unique_suffix() {
    static std::atomic<unsigned> counter{0};
    return fmt::format("{}-{}", static_cast<long>(::getpid()), counter.fetch_add(1));
}

}  // namespace

std::string default_compiler() {
    std::string c = getenv_str("KLOOP_CXX");
    return c.empty() ? std::string("c++") : c;
}

json build_record::to_json() const {
    return json{{"ok", ok},
                {"cache_hit", cache_hit},
                {"library", library.string()},
                {"key", key},
                {"argv", argv},
                {"compiler", compiler},
                {"compiler_version", compiler_version},
                {"diagnostics", diagnostics},
                {"wall_s", wall_s},
                {"compile_wall_s", compile_wall_s},
                {"entry_dir", entry_dir.string()}};
}

cpu_builder::cpu_builder(platform::command_runner_base& runner) : m_runner(runner) {}

std::string cpu_builder::compiler_version(const std::string& compiler_path, const std::string& identity) {
    if (auto it = m_versions.find(identity); it != m_versions.end()) return it->second;
    platform::process_request q;
    q.argv = {compiler_path, "--version"};
    q.timeout_s = 30;
    q.env_overrides = {{"LC_ALL", "C"}};
    auto res = m_runner.run(q);
    std::string version;
    if (res.succeeded()) {
        version = res.stdout_text.substr(0, res.stdout_text.find('\n'));
        if (!version.empty() && version.back() == '\r') version.pop_back();
    }
    if (version.empty()) version = fmt::format("unknown ({} --version: {})", compiler_path, res.describe());
    m_versions.emplace(identity, version);
    return version;
}

build_record cpu_builder::build(const build_request& r) {
    const auto t0 = clock_type::now();

    // Inputs, made absolute: the compiler runs in the entry directory.
    if (r.source.empty()) throw usage_error("cpu build: no source file given");
    const fs::path source = fs::absolute(r.source).lexically_normal();
    const std::string source_bytes = platform::read_file(source);
    const fs::path abi_dir =
        fs::absolute(r.abi_include_dir.empty() ? platform::abi_include_dir() : r.abi_include_dir).lexically_normal();
    const fs::path abi_header = abi_dir / "kloop" / "kernel.h";
    std::string abi_bytes;
    try {
        abi_bytes = platform::read_file(abi_header);
    } catch (const usage_error& e) {
        throw usage_error(fmt::format("{}\n  (the ABI include directory must contain kloop/kernel.h)", e.what()));
    }
    std::vector<fs::path> include_dirs;
    for (const auto& d : r.include_dirs) include_dirs.push_back(fs::absolute(d).lexically_normal());
    const fs::path cache_root = r.cache_dir.empty() ? platform::cache_dir() : fs::absolute(r.cache_dir);
    const compiler_identity cc = identify_compiler(r.compiler.empty() ? default_compiler() : r.compiler);

    // The key.
    platform::sha256_hasher h;
    h.update_field(k_key_salt);
    h.update_field(source.string()).update_field(source_bytes);
    h.update_field(std::to_string(r.flags.size()));
    for (const auto& f : r.flags) h.update_field(f);
    h.update_field(std::to_string(include_dirs.size()));
    for (const auto& d : include_dirs) h.update_field(d.string());
    h.update_field(abi_dir.string()).update_field(abi_bytes);
    h.update_field(cc.fingerprint);
    for (const char* var : {"CPATH", "CPLUS_INCLUDE_PATH", "C_INCLUDE_PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH"})
        h.update_field(fmt::format("{}={}", var, getenv_str(var)));
    const std::string key = h.hex_digest();
    const fs::path entry = cache_root / "build" / key;

    if (auto hit = try_cache_hit(entry, key)) {
        hit->wall_s = seconds_since(t0);
        return *hit;
    }

    // A miss: one builder per entry at a time.
    platform::ensure_directory(entry);
    entry_lock lock(entry / ".lock");
    if (auto hit = try_cache_hit(entry, key)) {  // built by another kloop while we waited
        hit->wall_s = seconds_since(t0);
        return *hit;
    }
    std::error_code ec;
    fs::remove(entry / "meta.json", ec);  // the entry is incomplete until meta.json is back

    build_record rec;
    rec.key = key;
    rec.entry_dir = entry;
    rec.compiler = cc.invoked;
    rec.compiler_version = compiler_version(cc.invoked, cc.fingerprint);

    const std::string suffix = unique_suffix();
    const fs::path tmp_lib = entry / fmt::format("lib.so.tmp-{}", suffix);
    const fs::path tmp_deps = entry / fmt::format("deps.d.tmp-{}", suffix);
    struct cleanup_t {
        fs::path a, b;
        ~cleanup_t() {
            std::error_code e;
            fs::remove(a, e);
            fs::remove(b, e);
        }
    } cleanup{tmp_lib, tmp_deps};

    std::vector<std::string> argv{cc.invoked};
    argv.insert(argv.end(), r.flags.begin(), r.flags.end());
    if (!flags_set_standard(r.flags)) argv.emplace_back("-std=c++17");
    argv.insert(argv.end(), {"-shared", "-fPIC", "-I" + abi_dir.string()});
    for (const auto& d : include_dirs) argv.push_back("-I" + d.string());
    argv.push_back("-I" + source.parent_path().string());
    argv.insert(argv.end(), {"-MD", "-MF", tmp_deps.string(), "-o", tmp_lib.string(), source.string()});
    rec.argv = argv;

    platform::process_request q;
    q.argv = argv;
    q.cwd = entry;
    q.timeout_s = r.timeout_s;
    auto res = m_runner.run(q);
    rec.compile_wall_s = res.wall_s;

    if (res.interrupted)
        throw kloop::error(exit_code::interrupted, fmt::format("interrupted while compiling '{}'", source.string()));
    if (!res.started)
        throw usage_error(fmt::format("{} (while compiling '{}')", res.describe(), source.string()));

    std::string output = res.stderr_text;
    if (!res.stdout_text.empty()) output += (output.empty() ? "" : "\n") + res.stdout_text;
    if (!res.succeeded()) {
        std::string why = res.timed_out || res.term_signal != 0 || output.empty()
                              ? fmt::format("compiler {}", res.describe())
                              : std::string();
        rec.ok = false;
        rec.diagnostics = trim_diagnostics(why.empty() ? output : (output.empty() ? why : why + "\n" + output));
        rec.wall_s = seconds_since(t0);
        return rec;
    }
    rec.diagnostics = trim_diagnostics(output);

    // Record what the compiler read, with hashes, then publish: lib.so, deps.json, meta.json.
    json deps = json::array();
    std::string depfile;
    try {
        depfile = platform::read_file(tmp_deps);
    } catch (const usage_error&) {
        depfile.clear();  // no depfile: record only the source (the cache is then weaker, not wrong)
    }
    std::vector<std::string> dep_paths = parse_depfile(depfile);
    if (dep_paths.empty()) dep_paths.push_back(source.string());
    for (const auto& d : dep_paths) {
        fs::path p = fs::path(d).is_absolute() ? fs::path(d) : (entry / d);
        p = p.lexically_normal();
        std::string digest;
        try {
            digest = platform::sha256_file(p);
        } catch (const usage_error&) {
            digest = "missing";  // can never match: the entry will be rebuilt next time
        }
        deps.push_back(json{{"path", p.string()}, {"sha256", digest}});
    }

    rec.library = entry / "lib.so";
    if (::rename(tmp_lib.c_str(), rec.library.c_str()) != 0)
        throw usage_error(fmt::format("cannot write '{}' in the build cache: {}", rec.library.string(),
                                      errno_message(errno)));
    platform::write_file_atomic(entry / "deps.json",
                                json{{"schema_version", k_schema_version}, {"deps", deps}}.dump(1) + "\n");
    json meta{{"schema_version", k_schema_version},
              {"key", key},
              {"source", source.string()},
              {"argv", argv},
              {"compiler", cc.invoked},
              {"compiler_resolved", cc.resolved},
              {"compiler_version", rec.compiler_version},
              {"wall_s", res.wall_s},
              {"created", utc_now_iso8601()},
              {"diagnostics", rec.diagnostics}};
    platform::write_file_atomic(entry / "meta.json", meta.dump(1) + "\n");

    rec.ok = true;
    rec.wall_s = seconds_since(t0);
    return rec;
}

}  // namespace kloop::backend::cpu
