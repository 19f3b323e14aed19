// kloop backend/python: fork servers, one per (interpreter, environment) (see fork_server.hpp).
#include "backend/python/fork_server.hpp"

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "platform/background_process.hpp"
#include "platform/file_io.hpp"
#include "platform/sha256.hpp"

extern char** environ;

namespace kloop::backend::python {

namespace fs = std::filesystem;

namespace {

// Read by the worker after it starts (python/kloop_worker/fork_server.py PER_PROCESS): they may
// differ between the server and a worker it forks.
bool per_process(const std::string& name) { return name == "TRITON_CACHE_DIR" || name == "TORCHINDUCTOR_CACHE_DIR"; }

bool disabled() {
    const char* v = std::getenv("KLOOP_PYTHON_FORK_SERVER");
    return v != nullptr && std::string(v) == "0";
}

struct fork_server {
    platform::scoped_temp_dir dir{"kloop-fork"};
    fs::path socket_path;
    std::unique_ptr<platform::background_process> process;
};

// A listening socket at `path`, close-on-exec; -1 when it cannot be made.
int listen_at(const fs::path& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    const std::string p = path.string();
    if (p.size() >= sizeof addr.sun_path) return -1;  // a TMPDIR too deep for a socket path
    std::memcpy(addr.sun_path, p.c_str(), p.size() + 1);
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::bind(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0 || ::listen(fd, 64) != 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// The server for one interpreter, environment and preload set; nullptr when none can run.
std::unique_ptr<fork_server> start_server(const std::string& interpreter, const fs::path& worker_dir,
                                          const std::vector<std::pair<std::string, std::string>>& startup_env,
                                          bool preload_torch) {
    auto s = std::make_unique<fork_server>();
    s->socket_path = s->dir.path() / "socket";
    const int fd = listen_at(s->socket_path);
    if (fd < 0) return nullptr;
    platform::background_request r;
    r.argv = {interpreter, "-m", "kloop_worker.fork_server"};
    if (preload_torch) r.argv.insert(r.argv.end(), {"--preload", "torch"});
    r.cwd = worker_dir;
    r.env_overrides = startup_env;
    r.log_file = s->dir.path() / "server.log";
    r.fd3 = fd;
    s->process = std::make_unique<platform::background_process>(r);
    ::close(fd);  // the server holds it now; should it die, clients are refused, not left waiting
    if (!s->process->started()) return nullptr;
    return s;
}

class fork_servers {
public:
    // The socket of the server for this key, started on first use; empty when there is none.
    fs::path socket_for(const std::string& key, const std::string& interpreter, const fs::path& worker_dir,
                        const std::vector<std::pair<std::string, std::string>>& startup_env, bool preload_torch) {
        std::lock_guard lock(m_mutex);
        auto it = m_servers.find(key);
        if (it == m_servers.end())
            it = m_servers.emplace(key, start_server(interpreter, worker_dir, startup_env, preload_torch)).first;
        // A server that failed to start or died stays recorded as none: no restart loop.
        if (!it->second || !it->second->process->running()) return {};
        return it->second->socket_path;
    }
    void stop_all() {
        std::lock_guard lock(m_mutex);
        m_servers.clear();  // each background_process closes the server's stdin, waits, kills
    }

private:
    std::mutex m_mutex;
    std::map<std::string, std::unique_ptr<fork_server>> m_servers;
};

fork_servers& registry() {
    static fork_servers r;
    return r;
}

}  // namespace

void route_through_fork_server(platform::process_request& q, const fs::path& worker_dir, bool preload_torch) {
    if (disabled() || q.argv.size() < 3 || q.argv[1] != "-m" || q.argv[2] != "kloop_worker") return;
    std::vector<std::pair<std::string, std::string>> startup_env;
    for (const auto& kv : q.env_overrides)
        if (!per_process(kv.first)) startup_env.push_back(kv);
    // The key: everything the server's interpreter was started with — kloop's own environment
    // too, so a variable set between two requests (tests do) gets a server of its own.
    platform::sha256_hasher h;
    h.update_field(q.argv[0]).update_field(worker_dir.string()).update_field(preload_torch ? "torch" : "-");
    for (const auto& [k, v] : startup_env) h.update_field(k).update_field(v);
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) h.update_field(*e);
    const fs::path socket = registry().socket_for(h.hex_digest(), q.argv[0], worker_dir, startup_env, preload_torch);
    if (socket.empty()) return;
    std::vector<std::string> argv = {q.argv[0], "-I", "-S", (worker_dir / "kloop_worker" / "fork_client.py").string(),
                                     socket.string()};
    argv.insert(argv.end(), q.argv.begin(), q.argv.end());
    q.argv = std::move(argv);
}

void stop_fork_servers() { registry().stop_all(); }

}  // namespace kloop::backend::python
