// kloop runner: the checker's side of the candidate hosts.
#include "runner/remote_executor.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <string>

#include "measure/statistics.hpp"
#include "platform/confinement.hpp"
#include "platform/sealed_copy.hpp"

extern char** environ;

namespace kloop::runner {

using nlohmann::json;
using clock_type = std::chrono::steady_clock;

namespace {

std::string describe_status(int status) {
    if (WIFEXITED(status)) return "exited with " + std::to_string(WEXITSTATUS(status));
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        const char* name = sigabbrev_np(sig);
        std::string d = std::string("killed by SIG") + (name ? name : "?") + " (signal " + std::to_string(sig) + ")";
        if (sig == SIGSYS) d += ": a system call the confinement forbids (docs/security.md)";
        // An allocation past the data limit fails; unchecked, that ends in an abort or a fault.
        struct rlimit data {};
        if ((sig == SIGABRT || sig == SIGSEGV || sig == SIGBUS) && ::getrlimit(RLIMIT_DATA, &data) == 0 &&
            data.rlim_cur != RLIM_INFINITY)
            d += " (the candidate's data memory is limited to " + std::to_string(data.rlim_cur >> 20) +
                 " MiB, --max-memory-mib: an allocation past it fails)";
        return d;
    }
    return "status " + std::to_string(status);
}

}  // namespace

remote_executor::remote_executor(remote_options options) : m_options(std::move(options)) {
    m_on_device = m_options.device != "cpu";
    if (const char* off = std::getenv("KLOOP_UNCONFINED"); off != nullptr && std::string(off) == "1")
        m_options.confine = false;
}

remote_executor::~remote_executor() {
    // The hosts first: they hold mappings of the checker's device memory.
    for (auto& x : m_hosts) {
        if (x.pid <= 0) continue;
        ::kill(x.pid, SIGKILL);
        int st = 0;
        while (::waitpid(x.pid, &st, 0) < 0 && errno == EINTR) {
        }
        std::error_code ec;
        std::filesystem::remove_all(x.scratch, ec);
    }
    for (auto& [addr, a] : m_allocations) {
        if (a.fd < 0) {
            m_options.device_memory->release(a.view);
            continue;
        }
        ::munmap(a.view, std::max<std::size_t>(a.bytes, 1));
        ::close(a.fd);
    }
}

void remote_executor::resume(host& x) {
    if (!x.stopped) return;
    ::kill(x.pid, SIGCONT);
    x.stopped = false;
}

void remote_executor::stop(host& x) {
    if (x.stopped || x.pid <= 0) return;
    if (::kill(x.pid, SIGSTOP) != 0) return;
    await_stop(x);
}

void remote_executor::await_stop(host& x) {
    // The host stops itself after each reply (candidate_host.hpp); the stop is what the checker
    // waits for. A host that never stops hangs here as it would in a call that never returns,
    // and the runner's timeout ends both.
    x.stopped = false;
    int st = 0;
    for (;;) {
        const pid_t r = ::waitpid(x.pid, &st, WUNTRACED);
        if (r < 0 && errno == EINTR) continue;
        if (r == x.pid && (WIFEXITED(st) || WIFSIGNALED(st))) {
            x.pid = -1;  // it died after its reply: the next request reports it
            return;
        }
        if (r == x.pid && WIFSTOPPED(st)) break;
        if (r < 0) return;
    }
    x.stopped = true;
}

void remote_executor::lost(host& x, const std::string& what) {
    std::string why = what;
    if (x.pid > 0) {
        ::kill(x.pid, SIGCONT);
        int st = 0;
        // The link broke: the host is dying or dead. Give it a moment, then make sure.
        pid_t r = 0;
        for (int i = 0; i < 200 && r == 0; ++i) {
            r = ::waitpid(x.pid, &st, WNOHANG);
            if (r == 0) ::usleep(5000);
        }
        if (r == 0) {
            ::kill(x.pid, SIGKILL);
            while (::waitpid(x.pid, &st, 0) < 0 && errno == EINTR) {
            }
            why = "stopped answering (" + what + ")";
        } else if (r == x.pid) {
            why = describe_status(st);
        }
        x.pid = -1;
    }
    throw host_died(why);
}

void remote_executor::stop_all_but(int keep) {
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h)
        if (h != keep) stop(m_hosts[static_cast<std::size_t>(h)]);
}

json remote_executor::request(int h, const json& req, const std::vector<int>& fds) {
    const auto t0 = clock_type::now();
    auto& x = m_hosts.at(static_cast<std::size_t>(h));
    if (x.pid <= 0) throw host_died("the candidate host is gone");
    stop_all_but(h);
    settle_device();
    resume(x);
    json reply;
    try {
        x.link->send(req, fds);
        reply = x.link->receive();
    } catch (const link_error& e) {
        lost(x, e.what());
    }
    await_stop(x);
    if (m_op_times.enabled())
        m_op_times.add("host:" + req.value("op", std::string("?")),
                       std::chrono::duration<double>(clock_type::now() - t0).count());
    if (!reply.value("ok", false)) throw std::runtime_error(reply.value("error", std::string("refused")));
    return reply;
}

int remote_executor::add_host() {
    const int h = static_cast<int>(m_hosts.size());
    host x;
    x.scratch = m_options.scratch_root / ("candidate-" + std::to_string(::getpid()) + "-" + std::to_string(h));
    std::filesystem::create_directories(x.scratch);
    const auto pair = make_link_pair();
    std::vector<std::string> args = {m_options.runner_exe.string(), "--serve-candidate", "--link-fd", "3",
                                     "--device", m_options.device};
    if (m_options.census) args.emplace_back("--census");
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, pair.host, 3);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addchdir_np(&fa, x.scratch.c_str());
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setpgroup(&attr, 0);  // its own group: a kill(0, …) reaches nobody else
    sigset_t none;
    sigemptyset(&none);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK);
    pid_t pid = -1;
    const int rc = ::posix_spawn(&pid, argv[0], &fa, &attr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    ::close(pair.host);
    if (rc != 0) {
        ::close(pair.checker);
        throw std::runtime_error("cannot start the candidate host '" + m_options.runner_exe.string() +
                                 "': " + std::strerror(rc));
    }
    x.pid = pid;
    x.link = std::make_unique<host_link>(pair.checker);
    m_hosts.push_back(std::move(x));
    auto& nx = m_hosts.back();
    json hello;
    try {
        hello = nx.link->receive();
    } catch (const link_error& e) {
        lost(nx, e.what());
    }
    if (!hello.value("ok", false)) throw std::runtime_error(hello.value("error", std::string("the candidate host failed")));
    await_stop(nx);

    if (m_options.confine) {
        json policy = {{"op", "confine"}, {"read_dirs", json::array()}, {"write_dirs", json::array({nx.scratch.string()})},
                       {"device_paths", json::array()}, {"allow_sockets", m_options.under_profiler}};
        for (const auto& d : platform::default_read_dirs()) policy["read_dirs"].push_back(d.string());
        // Nsight Compute's injected library keeps its lock and shared-memory files there.
        if (m_options.under_profiler)
            for (const char* d : {"/tmp", "/dev/shm"}) policy["write_dirs"].push_back(d);
        if (m_on_device)
            for (const auto& e : std::filesystem::directory_iterator("/dev"))
                if (e.path().filename().string().rfind("nvidia", 0) == 0) policy["device_paths"].push_back(e.path().string());
        nx.confinement = request(h, policy);
        nx.confinement.erase("ok");
    } else {
        nx.confinement = request(h, {{"op", "confine"}, {"none", true}});
        nx.confinement.erase("ok");
    }
    calibrate(h);
    for (const auto& [addr, a] : m_allocations) map_into(h, a);
    if (h == 0) m_device_facts = request(h, {{"op", "describe"}}).at("result");
    return h;
}

json remote_executor::timed_request(int h, const json& req, double& window_s) {
    auto& x = m_hosts.at(static_cast<std::size_t>(h));
    if (x.pid <= 0) throw host_died("the candidate host is gone");
    // The window covers waking the host, the request, the call, the reply and the host's stop:
    // everything any thread of the host could spend on the call, measured by a clock it cannot
    // reach. Work a thread of the candidate leaves for after the reply delays the stop, so it
    // lands in the window too.
    stop_all_but(h);
    settle_device();  // the checker's queued writes land before the window opens
    const auto t0 = clock_type::now();
    resume(x);
    json reply;
    try {
        x.link->send(req);
        reply = x.link->receive();
    } catch (const link_error& e) {
        lost(x, e.what());
    }
    await_stop(x);
    const auto t1 = clock_type::now();
    window_s = std::chrono::duration<double>(t1 - t0).count();
    m_op_times.add("host:time", window_s);
    if (!reply.value("ok", false)) throw std::runtime_error(reply.value("error", std::string("refused")));
    return reply;
}

void remote_executor::calibrate(int h) {
    // kloop's own empty entry point, timed exactly as a candidate's call is, before any candidate
    // code is loaded: what the checker's window adds to an honest sample. On a GPU each call is
    // preceded by what precedes a timed sample — the checker's own device work (the poison fill
    // of a call) and the host's cache flush — since the GPU's switch between the two processes'
    // contexts lands in the window too.
    void* scratch = nullptr;
    constexpr std::size_t scratch_bytes = 1 << 20;
    if (m_options.device_memory != nullptr) scratch = m_options.device_memory->allocate(scratch_bytes);
    std::vector<double> overhead;
    try {
        for (int i = 0; i < m_options.calibration_calls; ++i) {
            if (scratch != nullptr) {
                m_options.device_memory->fill_deferred(scratch, 0xFF, scratch_bytes);
                (void)request(h, {{"op", "flush"}, {"bytes", 0}});
            }
            double window = 0;
            const auto r = timed_request(h, {{"op", "time"}, {"entry", -1}, {"args", -1}}, window);
            overhead.push_back(std::max(0.0, window - r.value("sample_s", 0.0)));
        }
    } catch (...) {
        if (scratch != nullptr) m_options.device_memory->release(scratch);
        throw;
    }
    if (scratch != nullptr) m_options.device_memory->release(scratch);
    auto& x = m_hosts.at(static_cast<std::size_t>(h));
    if (overhead.empty()) return;
    const auto s = measure::summarize(overhead);
    x.calibration = {{"calls", overhead.size()}, {"overhead_median_s", s.median}, {"overhead_p90_s", s.p90},
                     {"overhead_max_s", s.max}};
}

void remote_executor::load(int h, const std::filesystem::path& library, const std::string& sha256) {
    auto copy = platform::make_sealed_copy(library);
    if (!sha256.empty() && copy.sha256 != sha256) {
        ::close(copy.fd);
        throw std::runtime_error("'" + library.string() + "' is not the library that was built (SHA-256 " + copy.sha256 +
                                 ", built as " + sha256 + "): refusing to load it");
    }
    json r;
    try {
        r = request(h, {{"op", "load"}}, {copy.fd});
    } catch (...) {
        ::close(copy.fd);
        throw;
    }
    ::close(copy.fd);
    m_hosts.at(static_cast<std::size_t>(h)).last_slot = r.at("slot").get<int>();
}

entry_fn remote_executor::resolve(int h, const std::string& symbol) {
    const auto& x = m_hosts.at(static_cast<std::size_t>(h));
    const auto r = request(h, {{"op", "entry"}, {"slot", x.last_slot}, {"symbol", symbol}});
    m_tokens.emplace_back('\0');
    const void* token = &m_tokens.back();
    m_entries[token] = entry_ref{h, r.at("entry").get<int>()};
    return reinterpret_cast<entry_fn>(const_cast<void*>(token));
}

const remote_executor::entry_ref& remote_executor::entry_of(entry_fn f) const {
    const auto it = m_entries.find(reinterpret_cast<const void*>(f));
    if (it == m_entries.end()) throw std::logic_error("remote_executor: an entry point it did not resolve");
    return it->second;
}

json remote_executor::isolation_facts() const {
    json hosts = json::array();
    bool all = !m_hosts.empty();
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h) {
        const auto& x = m_hosts[static_cast<std::size_t>(h)];
        all = all && x.confinement.value("confined", false);
        if (h == m_calibration_host) continue;
        hosts.push_back({{"confinement", x.confinement}, {"timer_calibration", x.calibration}});
    }
    json facts = {{"process", "separate"}, {"confined", all}, {"hosts", hosts}};
    if (m_calibration_host >= 0) {
        const auto& c = m_hosts[static_cast<std::size_t>(m_calibration_host)];
        facts["calibration_host"] = {{"confinement", c.confinement}, {"timer_calibration", c.calibration}};
    }
    if (m_on_device)
        facts["device_buffers"] = m_options.device_memory != nullptr
                                      ? "the checker's, shared with the candidate by CUDA IPC"
                                      : "copied by the candidate's process";
    return facts;
}

kl_device remote_executor::do_get_device() const { return m_on_device ? KL_CUDA : KL_HOST; }

void remote_executor::map_into(int h, const allocation& a) {
    if (a.fd < 0) {
        (void)request(h, {{"op", "map"}, {"buffer", a.id}, {"bytes", a.bytes}, {"ipc", a.ipc}});
        return;
    }
    (void)request(h, {{"op", "map"}, {"buffer", a.id}, {"bytes", a.bytes}, {"device", m_on_device}}, {a.fd});
}

void* remote_executor::do_allocate(std::size_t bytes) {
    allocation a;
    a.id = m_next_buffer++;
    a.bytes = bytes;
    if (m_options.device_memory != nullptr) {
        a.view = static_cast<unsigned char*>(m_options.device_memory->allocate(std::max<std::size_t>(bytes, 1)));
        try {
            a.ipc = m_options.device_memory->export_memory(a.view);
        } catch (...) {
            m_options.device_memory->release(a.view);
            throw;
        }
        m_allocations[reinterpret_cast<std::uintptr_t>(a.view)] = a;
        for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h) map_into(h, a);
        return a.view;
    }
    a.fd = ::memfd_create("kloop-buffer", MFD_CLOEXEC);
    if (a.fd < 0) throw std::runtime_error(std::string("memfd_create: ") + std::strerror(errno));
    const std::size_t map_bytes = std::max<std::size_t>(bytes, 1);
    if (::ftruncate(a.fd, static_cast<off_t>(map_bytes)) != 0) {
        ::close(a.fd);
        throw std::runtime_error(std::string("ftruncate of a shared buffer: ") + std::strerror(errno));
    }
    void* p = ::mmap(nullptr, map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
    if (p == MAP_FAILED) {
        ::close(a.fd);
        throw std::runtime_error(std::string("mmap of a shared buffer: ") + std::strerror(errno));
    }
    a.view = static_cast<unsigned char*>(p);
    m_allocations[reinterpret_cast<std::uintptr_t>(a.view)] = a;
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h) map_into(h, a);
    return a.view;
}

void remote_executor::do_release(void* device_ptr) noexcept {
    const auto it = m_allocations.find(reinterpret_cast<std::uintptr_t>(device_ptr));
    if (it == m_allocations.end()) return;
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h) try {
            if (m_hosts[static_cast<std::size_t>(h)].pid > 0) (void)request(h, {{"op", "release"}, {"buffer", it->second.id}});
        } catch (...) {
            // A dead host holds nothing any more.
        }
    if (it->second.fd < 0) m_options.device_memory->release(it->second.view);
    else {
        ::munmap(it->second.view, std::max<std::size_t>(it->second.bytes, 1));
        ::close(it->second.fd);
    }
    m_allocations.erase(it);
}

std::pair<const remote_executor::allocation*, std::size_t> remote_executor::locate(const void* p) const {
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    auto it = m_allocations.upper_bound(addr);
    if (it == m_allocations.begin()) throw std::logic_error("remote_executor: a pointer outside its buffers");
    --it;
    const std::size_t off = addr - it->first;
    if (off > it->second.bytes) throw std::logic_error("remote_executor: a pointer outside its buffers");
    return {&it->second, off};
}

void remote_executor::do_upload(void* device_dst, const void* host_src, std::size_t bytes) {
    op_timings::scope timed(m_op_times, "checker:upload");
    stop_all_but(-1);  // no thread of a candidate runs while the checker touches its buffers
    // Queued: settled before the next request to a host (settle_device).
    if (m_options.device_memory != nullptr) return m_options.device_memory->upload_deferred(device_dst, host_src, bytes);
    std::memcpy(device_dst, host_src, bytes);
    if (!m_on_device) return;
    const auto [a, off] = locate(device_dst);
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h)
        (void)request(h, {{"op", "upload"}, {"buffer", a->id}, {"offset", off}, {"bytes", bytes}});
}

void remote_executor::do_download(void* host_dst, const void* device_src, std::size_t bytes) {
    op_timings::scope timed(m_op_times, "checker:download");
    stop_all_but(-1);
    if (m_options.device_memory != nullptr) return m_options.device_memory->download(host_dst, device_src, bytes);
    if (m_on_device) {
        const auto [a, off] = locate(device_src);
        (void)request(m_last_host, {{"op", "download"}, {"buffer", a->id}, {"offset", off}, {"bytes", bytes}});
    }
    std::memcpy(host_dst, device_src, bytes);
}

void remote_executor::do_download_many(const std::vector<download_span>& spans) {
    if (m_options.device_memory == nullptr) return executor_base::do_download_many(spans);
    op_timings::scope timed(m_op_times, "checker:download_many");
    stop_all_but(-1);
    m_options.device_memory->download_many(spans);
}

bool remote_executor::do_can_compare_on_device() const {
    return m_options.device_memory != nullptr && m_options.device_memory->can_compare_on_device();
}

void* remote_executor::do_allocate_private(std::size_t bytes) {
    if (!do_can_compare_on_device()) return executor_base::do_allocate_private(bytes);
    return m_options.device_memory->allocate(bytes);
}

void remote_executor::do_release_private(void* device_ptr) noexcept {
    if (!do_can_compare_on_device()) return executor_base::do_release_private(device_ptr);
    m_options.device_memory->release(device_ptr);
}

void remote_executor::do_copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes) {
    if (!do_can_compare_on_device()) return executor_base::do_copy_on_device_deferred(device_dst, device_src, bytes);
    stop_all_but(-1);
    m_options.device_memory->copy_on_device_deferred(device_dst, device_src, bytes);
}

void remote_executor::do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) {
    if (!do_can_compare_on_device()) return executor_base::do_first_difference_deferred(a, b, bytes, result);
    stop_all_but(-1);
    m_options.device_memory->first_difference_deferred(a, b, bytes, result);
}

void remote_executor::settle_device() {
    if (m_options.device_memory != nullptr) m_options.device_memory->settle();
}

void remote_executor::do_fill(void* device_dst, unsigned char value, std::size_t bytes) {
    op_timings::scope timed(m_op_times, "checker:fill");
    stop_all_but(-1);
    if (m_options.device_memory != nullptr) return m_options.device_memory->fill_deferred(device_dst, value, bytes);
    if (!m_on_device) {
        std::memset(device_dst, value, bytes);
        return;
    }
    const auto [a, off] = locate(device_dst);
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h)
        (void)request(h, {{"op", "fill"}, {"buffer", a->id}, {"offset", off}, {"bytes", bytes}, {"value", value}});
}

int remote_executor::args_id(int h, const kl_args& a) {
    auto tensor = [&](const kl_tensor& t) {
        const auto [al, off] = locate(t.data);
        return json{{"name", t.name},
                    {"buffer", al->id},
                    {"offset", off},
                    {"dtype", static_cast<int>(t.dtype)},
                    {"shape", std::vector<std::int64_t>(t.shape, t.shape + t.ndim)},
                    {"strides", std::vector<std::int64_t>(t.strides, t.strides + t.ndim)}};
    };
    json d = {{"inputs", json::array()}, {"outputs", json::array()}, {"params", json::array()}, {"dims", json::array()}};
    for (int i = 0; i < a.n_inputs; ++i) d["inputs"].push_back(tensor(a.inputs[i]));
    for (int i = 0; i < a.n_outputs; ++i) d["outputs"].push_back(tensor(a.outputs[i]));
    for (int i = 0; i < a.n_params; ++i)
        d["params"].push_back({{"name", a.params[i].name}, {"f64", a.params[i].f64}, {"i64", a.params[i].i64}});
    for (int i = 0; i < a.n_dims; ++i) d["dims"].push_back({{"name", a.dims[i].name}, {"value", a.dims[i].value}});
    const std::string key = d.dump();
    auto [it, added] = m_arg_ids.try_emplace(key, static_cast<int>(m_arg_ids.size()));
    auto& known = m_hosts.at(static_cast<std::size_t>(h)).defined_args;
    if (std::find(known.begin(), known.end(), it->second) == known.end()) {
        d["op"] = "args";
        d["id"] = it->second;
        (void)request(h, d);
        known.push_back(it->second);
    }
    (void)added;
    return it->second;
}

namespace {

call_outcome outcome_of(const json& r) {
    call_outcome out;
    out.return_code = r.value("return_code", 0);
    out.device_error = r.value("device_error", std::string());
    if (r.contains("census")) out.census = r.at("census");
    return out;
}

}  // namespace

call_outcome remote_executor::do_invoke(entry_fn f, const kl_args& a) {
    const auto& e = entry_of(f);
    const int args = args_id(e.host, a);
    m_last_host = e.host;
    flush_pending(e.host);
    auto out = outcome_of(request(e.host, {{"op", "invoke"}, {"entry", e.entry}, {"args", args}}));
    m_last_census = std::move(out.census);
    return out;
}

double remote_executor::do_time_call(entry_fn f, const kl_args& a, call_outcome& outcome) {
    const auto& e = entry_of(f);
    const int args = args_id(e.host, a);
    m_last_host = e.host;
    flush_pending(e.host);
    double window = 0;
    const auto r = timed_request(e.host, {{"op", "time"}, {"entry", e.entry}, {"args", args}}, window);
    outcome = outcome_of(r);
    json info = r.contains("info") && r.at("info").is_object() ? r.at("info") : json::object();
    info["window_s"] = window;
    if (!m_on_device && (++m_timed_calls % k_live_calibration_every == 0 || window >= k_live_calibration_always_s))
        info["calibration_overhead_s"] = live_calibration_overhead();
    m_last_info = std::move(info);
    return r.value("sample_s", 0.0);
}

double remote_executor::live_calibration_overhead() {
    if (m_calibration_host < 0) {
        // A host like the others (confined, every buffer mapped) that never loads a library. It
        // is not in isolation_facts()["hosts"], whose indices are the timed sides.
        m_calibration_host = add_host();
    }
    double window = 0;
    const auto r = timed_request(m_calibration_host, {{"op", "time"}, {"entry", -1}, {"args", -1}}, window);
    return std::max(0.0, window - r.value("sample_s", 0.0));
}

void remote_executor::do_flush_caches(std::uint64_t bytes) {
    // Made by the host of the next call, just before it (it evicts what that host's core and the
    // device cache hold): see flush_pending.
    m_pending_flush = bytes;
}

void remote_executor::do_flush_caches_now_for(entry_fn f, std::uint64_t bytes) {
    m_pending_flush.reset();
    (void)request(entry_of(f).host, {{"op", "flush"}, {"bytes", bytes}});
}

void remote_executor::flush_pending(int h) {
    if (!m_pending_flush) return;
    const std::uint64_t bytes = *m_pending_flush;
    m_pending_flush.reset();
    (void)request(h, {{"op", "flush"}, {"bytes", bytes}});
}

json remote_executor::do_extra_timing(entry_fn f, const std::vector<const kl_args*>& sets, double median_s) {
    const auto& e = entry_of(f);
    json ids = json::array();
    for (const auto* a : sets) ids.push_back(args_id(e.host, *a));
    m_last_host = e.host;
    return request(e.host, {{"op", "extra_timing"}, {"entry", e.entry}, {"sets", ids}, {"median_s", median_s}}).at("result");
}

void remote_executor::do_describe(json& out) const {
    out = m_device_facts.is_object() ? m_device_facts : json::object();
    out["isolation"] = isolation_facts();
}

void remote_executor::do_profile_range(bool begin) {
    for (int h = 0; h < static_cast<int>(m_hosts.size()); ++h)
        (void)request(h, {{"op", "profile_range"}, {"begin", begin}});
}

}  // namespace kloop::runner
