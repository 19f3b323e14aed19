// kloop runner: the candidate host's request loop.
#include "runner/candidate_host.hpp"

#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "platform/confinement.hpp"
#include "runner/host_link.hpp"
#include "runner/loaded_library.hpp"

namespace kloop::runner {

using nlohmann::json;

namespace {

// After every reply the host stops itself (SIGSTOP stops every thread of the process) and waits
// for the checker's SIGCONT with the next request. The checker ends its clock window when it sees
// the stop, not when the reply arrives: whatever any thread of the candidate does after the call
// returned happens inside the window, or not at all (docs/security.md).
void stop_until_asked() { ::raise(SIGSTOP); }

// kloop's own empty entry point: what the timer calibration times.
int kloop_null_entry(const kl_args*) { return 0; }

struct shared_buffer {
    unsigned char* view = nullptr;  // the shared memory as this process maps it
    std::size_t bytes = 0;
    void* device = nullptr;         // the executor's mirror (device executors), else null
    int fd = -1;
    bool imported = false;          // device memory of the checker's (CUDA IPC): no view, no fd
};

// One argument set, with storage for everything kl_args points at.
struct argument_set {
    std::vector<std::string> names;
    std::vector<kl_tensor> inputs, outputs;
    std::vector<kl_param> params;
    std::vector<kl_dim> dims;
    kl_args args{};
};

class host_state {
public:
    host_state(host_link& link, executor_base& exec) : m_link(link), m_exec(exec) {}

    // Serves until the checker closes the link.
    void serve();

private:
    json handle(const json& req, std::vector<int>& fds);
    json confine(const json& req);
    json load(const json& req, std::vector<int>& fds);
    json map_buffer(const json& req, std::vector<int>& fds);
    void release_buffer(int id);
    json define_args(const json& req);
    [[nodiscard]] shared_buffer& buffer(int id);
    [[nodiscard]] entry_fn entry(int id) const;
    [[nodiscard]] const kl_args& args_of(int id);
    [[nodiscard]] void* data_at(const shared_buffer& b, std::size_t offset) const;

    host_link& m_link;
    executor_base& m_exec;
    std::map<int, shared_buffer> m_buffers;
    std::vector<std::unique_ptr<loaded_library>> m_libraries;
    std::vector<entry_fn> m_entries;
    std::map<int, std::unique_ptr<argument_set>> m_args;
    kl_args m_empty_args{};
    bool m_confined = false;
};

shared_buffer& host_state::buffer(int id) {
    const auto it = m_buffers.find(id);
    if (it == m_buffers.end()) throw std::runtime_error("unknown buffer " + std::to_string(id));
    return it->second;
}

entry_fn host_state::entry(int id) const {
    if (id == -1) return &kloop_null_entry;
    if (id < 0 || static_cast<std::size_t>(id) >= m_entries.size()) throw std::runtime_error("unknown entry point");
    return m_entries[static_cast<std::size_t>(id)];
}

const kl_args& host_state::args_of(int id) {
    if (id == -1) {
        m_empty_args.abi_version = KL_ABI_VERSION;
        m_empty_args.stream = m_exec.get_stream();
        return m_empty_args;
    }
    const auto it = m_args.find(id);
    if (it == m_args.end()) throw std::runtime_error("unknown argument set");
    return it->second->args;
}

void* host_state::data_at(const shared_buffer& b, std::size_t offset) const {
    if (offset > b.bytes) throw std::runtime_error("offset outside its buffer");
    if (b.device != nullptr) return static_cast<unsigned char*>(b.device) + offset;
    return b.view + offset;
}

json host_state::confine(const json& req) {
    // KLOOP_UNCONFINED=1 (diagnostics): the checker asks for no confinement, explicitly, so that
    // "load before confine" still holds for every host.
    if (req.value("none", false)) {
        m_confined = true;
        return {{"ok", true}, {"confined", false}, {"detail", "not confined: KLOOP_UNCONFINED=1 (diagnostics)"}};
    }
    platform::confinement_policy policy;
    for (const auto& d : req.value("read_dirs", json::array())) policy.read_dirs.emplace_back(d.get<std::string>());
    for (const auto& d : req.value("write_dirs", json::array())) policy.write_dirs.emplace_back(d.get<std::string>());
    for (const auto& d : req.value("device_paths", json::array())) policy.device_paths.emplace_back(d.get<std::string>());
    policy.allow_sockets = req.value("allow_sockets", false);
    const auto r = platform::confine_self(policy);
    m_confined = true;
    return {{"ok", true},
            {"no_new_privs", r.no_new_privs},
            {"seccomp", r.seccomp},
            {"landlock_abi", r.landlock_abi},
            {"confined", r.is_confined()},
            {"detail", r.detail}};
}

json host_state::load(const json& req, std::vector<int>& fds) {
    if (fds.size() != 1) throw std::runtime_error("load: expected one descriptor");
    // The sealed memfd the checker verified: nobody can change its bytes (F_SEAL_WRITE).
    const std::string path = "/proc/self/fd/" + std::to_string(fds[0]);
    m_libraries.push_back(std::make_unique<loaded_library>(path));
    fds.clear();  // the descriptor stays open for the library's lifetime
    (void)req;
    return {{"ok", true}, {"slot", static_cast<int>(m_libraries.size()) - 1}};
}

json host_state::map_buffer(const json& req, std::vector<int>& fds) {
    const int id = req.at("buffer").get<int>();
    if (req.contains("ipc")) {
        // Device memory the checker allocated: computed in here, read and written by the checker.
        shared_buffer b;
        b.bytes = req.at("bytes").get<std::size_t>();
        b.device = m_exec.import_memory(req.at("ipc").get<std::string>());
        b.imported = true;
        m_buffers[id] = b;
        return {{"ok", true}};
    }
    if (fds.size() != 1) throw std::runtime_error("map: expected one descriptor");
    const auto bytes = req.at("bytes").get<std::size_t>();
    shared_buffer b;
    b.fd = fds[0];
    fds.clear();
    b.bytes = bytes;
    void* p = ::mmap(nullptr, std::max<std::size_t>(bytes, 1), PROT_READ | PROT_WRITE, MAP_SHARED, b.fd, 0);
    if (p == MAP_FAILED) {
        ::close(b.fd);
        throw std::runtime_error(std::string("map: mmap failed: ") + std::strerror(errno));
    }
    b.view = static_cast<unsigned char*>(p);
    if (req.value("device", false)) {
        try {
            b.device = m_exec.allocate(std::max<std::size_t>(bytes, 1));
        } catch (...) {
            ::munmap(p, std::max<std::size_t>(bytes, 1));
            ::close(b.fd);
            throw;
        }
    }
    m_buffers[id] = b;
    return {{"ok", true}};
}

void host_state::release_buffer(int id) {
    const auto it = m_buffers.find(id);
    if (it == m_buffers.end()) return;
    if (it->second.imported) {
        m_exec.close_import(it->second.device);
        m_buffers.erase(it);
        return;
    }
    if (it->second.device != nullptr) m_exec.release(it->second.device);
    ::munmap(it->second.view, std::max<std::size_t>(it->second.bytes, 1));
    ::close(it->second.fd);
    m_buffers.erase(it);
}

json host_state::define_args(const json& req) {
    auto set = std::make_unique<argument_set>();
    const auto& tensors_in = req.at("inputs");
    const auto& tensors_out = req.at("outputs");
    const auto& params = req.at("params");
    const auto& dims = req.at("dims");
    // Names first, so the c_str() pointers below stay valid (no reallocation afterwards).
    for (const auto* group : {&tensors_in, &tensors_out, &params, &dims})
        for (const auto& t : *group) set->names.push_back(t.at("name").get<std::string>());
    std::size_t name = 0;
    auto tensor = [&](const json& t) {
        kl_tensor k{};
        k.name = set->names[name++].c_str();
        const auto& b = buffer(t.at("buffer").get<int>());
        k.data = data_at(b, t.at("offset").get<std::size_t>());
        k.dtype = static_cast<kl_dtype>(t.at("dtype").get<int>());
        k.device = m_exec.get_device();
        const auto shape = t.at("shape").get<std::vector<std::int64_t>>();
        const auto strides = t.at("strides").get<std::vector<std::int64_t>>();
        if (shape.size() > KL_MAX_DIMS || strides.size() != shape.size()) throw std::runtime_error("bad tensor shape");
        k.ndim = static_cast<std::int32_t>(shape.size());
        for (std::size_t d = 0; d < shape.size(); ++d) k.shape[d] = shape[d], k.strides[d] = strides[d];
        return k;
    };
    for (const auto& t : tensors_in) set->inputs.push_back(tensor(t));
    for (const auto& t : tensors_out) set->outputs.push_back(tensor(t));
    for (const auto& p : params)
        set->params.push_back(kl_param{set->names[name++].c_str(), p.at("f64").get<double>(), p.at("i64").get<std::int64_t>()});
    for (const auto& d : dims) set->dims.push_back(kl_dim{set->names[name++].c_str(), d.at("value").get<std::int64_t>()});
    auto& a = set->args;
    a.abi_version = KL_ABI_VERSION;
    a.n_inputs = static_cast<std::int32_t>(set->inputs.size());
    a.inputs = set->inputs.data();
    a.n_outputs = static_cast<std::int32_t>(set->outputs.size());
    a.outputs = set->outputs.data();
    a.n_params = static_cast<std::int32_t>(set->params.size());
    a.params = set->params.data();
    a.n_dims = static_cast<std::int32_t>(set->dims.size());
    a.dims = set->dims.data();
    a.stream = m_exec.get_stream();
    m_args[req.at("id").get<int>()] = std::move(set);
    return {{"ok", true}};
}

json outcome_json(const call_outcome& out) {
    json r = {{"ok", true}, {"return_code", out.return_code}};
    if (!out.device_error.empty()) r["device_error"] = out.device_error;
    if (!out.census.is_null()) r["census"] = out.census;
    return r;
}

json host_state::handle(const json& req, std::vector<int>& fds) {
    const auto op = req.at("op").get<std::string>();
    if (op == "confine") return confine(req);
    if (op == "time") {
        call_outcome out;
        const double dt = m_exec.time_call(entry(req.at("entry").get<int>()), args_of(req.at("args").get<int>()), out);
        json r = outcome_json(out);
        r["sample_s"] = dt;
        r["info"] = m_exec.last_sample_info();
        return r;
    }
    if (op == "invoke")
        return outcome_json(m_exec.invoke(entry(req.at("entry").get<int>()), args_of(req.at("args").get<int>())));
    if (op == "flush") {
        m_exec.flush_caches(req.at("bytes").get<std::uint64_t>());
        return {{"ok", true}};
    }
    if (op == "upload" || op == "download") {
        auto& b = buffer(req.at("buffer").get<int>());
        const auto offset = req.at("offset").get<std::size_t>();
        const auto bytes = req.at("bytes").get<std::size_t>();
        if (b.device == nullptr || offset + bytes > b.bytes) throw std::runtime_error(op + ": bad range");
        if (op == "upload") m_exec.upload(static_cast<unsigned char*>(b.device) + offset, b.view + offset, bytes);
        else m_exec.download(b.view + offset, static_cast<unsigned char*>(b.device) + offset, bytes);
        return {{"ok", true}};
    }
    if (op == "fill") {
        auto& b = buffer(req.at("buffer").get<int>());
        const auto offset = req.at("offset").get<std::size_t>();
        const auto bytes = req.at("bytes").get<std::size_t>();
        if (b.device == nullptr || offset + bytes > b.bytes) throw std::runtime_error("fill: bad range");
        m_exec.fill(static_cast<unsigned char*>(b.device) + offset, static_cast<unsigned char>(req.at("value").get<int>()),
                    bytes);
        return {{"ok", true}};
    }
    if (op == "map") return map_buffer(req, fds);
    if (op == "release") {
        release_buffer(req.at("buffer").get<int>());
        return {{"ok", true}};
    }
    if (op == "args") return define_args(req);
    if (op == "load") {
        if (!m_confined) throw std::runtime_error("load before confine");
        return load(req, fds);
    }
    if (op == "entry") {
        const auto slot = req.at("slot").get<std::size_t>();
        if (slot >= m_libraries.size()) throw std::runtime_error("entry: unknown library");
        m_entries.push_back(m_libraries[slot]->get_entry(req.at("symbol").get<std::string>()));
        return {{"ok", true}, {"entry", static_cast<int>(m_entries.size()) - 1}};
    }
    if (op == "extra_timing") {
        std::vector<const kl_args*> sets;
        for (const auto& a : req.at("sets")) sets.push_back(&args_of(a.get<int>()));
        return {{"ok", true},
                {"result", m_exec.extra_timing(entry(req.at("entry").get<int>()), sets, req.at("median_s").get<double>())}};
    }
    if (op == "describe") return {{"ok", true}, {"result", m_exec.describe()}};
    if (op == "profile_range") {
        m_exec.profile_range(req.at("begin").get<bool>());
        return {{"ok", true}};
    }
    throw std::runtime_error("unknown request '" + op + "'");
}

void host_state::serve() {
    for (;;) {
        std::vector<int> fds;
        json req;
        try {
            req = m_link.receive(&fds);
        } catch (const link_error&) {
            return;  // the checker closed the link: done
        }
        json reply;
        try {
            reply = handle(req, fds);
        } catch (const std::exception& e) {
            reply = {{"ok", false}, {"error", e.what()}};
        }
        for (int fd : fds) ::close(fd);
        m_link.send(reply);
        stop_until_asked();
    }
}

}  // namespace

bool is_candidate_host_command(int argc, char** argv) {
    return argc > 1 && std::strcmp(argv[1], "--serve-candidate") == 0;
}

int serve_candidate(int argc, char** argv, const executor_factory& make_executor) {
    // Die with the checker: a host never outlives the process that judges it.
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    int link_fd = -1;
    std::string device = "cpu";
    for (int i = 2; i + 1 < argc; ++i) {
        if (std::strcmp(argv[i], "--link-fd") == 0) link_fd = std::atoi(argv[i + 1]);
        else if (std::strcmp(argv[i], "--device") == 0) device = argv[i + 1];
    }
    if (link_fd < 0) {
        std::fprintf(stderr, "usage: kloop-runner --serve-candidate --link-fd N --device cpu|cuda\n");
        return 2;
    }
    host_link link(link_fd);
    std::unique_ptr<executor_base> exec;
    try {
        exec = make_executor(device);
        if (!exec)
            throw std::runtime_error("this runner cannot run '" + device +
                                     "' libraries (kloop-runner runs cpu; kloop-runner-cuda runs cuda)");
    } catch (const std::exception& e) {
        try {
            link.send({{"ok", false}, {"error", std::string("cannot use the device: ") + e.what()}});
        } catch (const link_error&) {
        }
        return 3;
    }
    link.send({{"ok", true}, {"pid", static_cast<long>(::getpid())}});
    stop_until_asked();
    host_state state(link, *exec);
    state.serve();
    // Leave without running the candidate's destructors or atexit handlers: nothing they could
    // do after the last reply reaches the checker, and they must not hang the exit.
    std::fflush(nullptr);
    ::_exit(0);
}

}  // namespace kloop::runner
