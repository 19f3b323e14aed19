// kloop runner: the checker's executor for candidate code that runs in other processes.
//
// Responsibility: to the checker's gate, bench and A/B loops (runner.cpp, ab_phase.cpp) this is
// one more executor whose buffers are mirrors; behind it are one or more candidate hosts
// (runner/candidate_host.hpp), one per library to time (the candidate; the base of an A/B), each
// a confined child process that never sees the job, the reference or the results channel.
//   - Buffers: on the CPU every mirror is a memfd mapped by the checker and by every host; the
//     hosts compute in it directly, so upload/download are memcpys here and reading back the
//     inputs after every call is cheap. On a GPU the checker allocates every mirror on its own
//     device context and shares it with the hosts (CUDA IPC): the hosts compute in it, the
//     checker alone copies to and from it. (Without a device executor for the checker, each
//     host keeps a device copy of a shared memfd and copies it itself.)
//   - Entry points: resolve() returns a token (the address of a byte this object owns, never
//     called) that names a host and an entry point there.
//   - Calls: invoke / time_call / flush / extra timing are requests to the host that owns the
//     entry point. Around each timed request the checker reads its own clock: the window is kept
//     with the host's claimed sample (last_sample_info "window_s"), and the calibration measured
//     before any candidate code was loaded says what the window adds to an honest sample
//     (isolation_facts "timer_calibration"); the orchestrator holds the two against each other.
//     On the CPU a calibration host (one more host that never loads a library) is timed the
//     same way after every fourth timed call (and every call of 1 ms or more), so the allowance
//     can follow the machine's load.
//   - A host runs only while the checker waits for it: it stops itself (SIGSTOP, every thread)
//     after each reply, and the checker waits for that stop before it reads or writes the shared
//     buffers, asks another host anything or ends a timed window. No thread of a candidate runs
//     while the checker prepares or checks a call, or while the other side of an A/B is timed;
//     work left to a thread after the reply lands inside the window.
//   - A host that dies (a crash, SIGSYS from the confinement) or breaks the protocol ends the
//     call with host_died, which the runner reports as the candidate's failure.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "runner/executor.hpp"
#include "runner/host_link.hpp"
#include "runner/op_timings.hpp"

namespace kloop::runner {

// The candidate host is gone or misbehaved; what() says how ("killed by SIGSYS (signal 31)").
struct host_died : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct remote_options {
    std::string device = "cpu";                     // "cpu" | "cuda": the hosts' executor
    std::filesystem::path runner_exe;               // the binary to start with --serve-candidate
    std::filesystem::path scratch_root;             // each host gets a fresh directory under it
    bool census = false;                            // the hosts attach the kernel census (CUDA gate)
    bool under_profiler = false;                    // profile phase: the confinement allows sockets (ncu)
    bool confine = true;                            // KLOOP_UNCONFINED=1 turns it off (diagnostics)
    // On a GPU: the checker's own executor for the candidate's device. The checker allocates
    // every buffer there and shares it with the hosts (CUDA IPC); uploads, downloads and fills
    // are the checker's own copies (uploads and fills queued on its stream and settled before
    // the next request to a host; the red zones read back in one gathered download). Null: the hosts keep device copies of shared host memory,
    // and copy it themselves (docs/security.md says what that leaves open).
    executor_base* device_memory = nullptr;
    int calibration_calls = 48;
};

class remote_executor final : public executor_base {
public:
    explicit remote_executor(remote_options options);
    ~remote_executor() override;
    remote_executor(const remote_executor&) = delete;
    remote_executor& operator=(const remote_executor&) = delete;

    // Starts a host, confines it and calibrates the timer; returns its index. Hosts added after
    // buffers exist map them too.
    int add_host();
    // Loads `library` into `host` from a sealed copy whose SHA-256 must equal `sha256` (when
    // given); throws std::runtime_error naming the library otherwise.
    void load(int host, const std::filesystem::path& library, const std::string& sha256);
    // A token for `symbol` of the last library loaded into `host` (throws when it is missing).
    [[nodiscard]] entry_fn resolve(int host, const std::string& symbol);

    // Per host: the confinement applied and the timer calibration ({"hosts":[…], "confined": …}).
    [[nodiscard]] nlohmann::json isolation_facts() const;

protected:
    kl_device do_get_device() const override;
    bool do_needs_mirrors() const override { return true; }
    bool do_has_cheap_readback() const override { return !m_on_device; }
    void* do_allocate(std::size_t bytes) override;
    void do_release(void* device_ptr) noexcept override;
    void do_upload(void* device_dst, const void* host_src, std::size_t bytes) override;
    void do_download(void* host_dst, const void* device_src, std::size_t bytes) override;
    void do_fill(void* device_dst, unsigned char value, std::size_t bytes) override;
    void do_download_many(const std::vector<download_span>& spans) override;
    // On a GPU with the checker's device executor: its own memory and comparisons, never mapped
    // into a host.
    bool do_can_compare_on_device() const override;
    bool do_shares_device_memory_with(const executor_base& other) const override {
        return m_options.device_memory == &other;
    }
    void* do_allocate_private(std::size_t bytes) override;
    void do_release_private(void* device_ptr) noexcept override;
    void do_copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes) override;
    void do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) override;
    call_outcome do_invoke(entry_fn f, const kl_args& a) override;
    // The census the host's reply to the last invoke carried (executor_base::invoke asks after
    // do_invoke returns).
    nlohmann::json do_take_census() override { return std::exchange(m_last_census, nullptr); }
    void do_flush_caches(std::uint64_t bytes) override;
    void do_flush_caches_now_for(entry_fn f, std::uint64_t bytes) override;
    double do_time_call(entry_fn f, const kl_args& a, call_outcome& outcome) override;
    void do_describe(nlohmann::json& out) const override;
    nlohmann::json do_last_sample_info() const override { return m_last_info; }
    nlohmann::json do_extra_timing(entry_fn f, const std::vector<const kl_args*>& sets, double median_s) override;
    void do_profile_range(bool begin) override;

private:
    struct host {
        pid_t pid = -1;
        std::unique_ptr<host_link> link;
        std::filesystem::path scratch;
        int last_slot = -1;
        std::vector<int> defined_args;              // argument-set ids this host knows
        nlohmann::json confinement;
        nlohmann::json calibration;
        bool stopped = false;
    };
    struct allocation {
        int id = 0;
        unsigned char* view = nullptr;    // host memory (memfd), or the checker's device pointer
        std::size_t bytes = 0;
        int fd = -1;                      // -1 for device memory shared by IPC
        std::string ipc;                  // the IPC handle of a device allocation
    };
    struct entry_ref {
        int host = 0;
        int entry = 0;
    };

    // One request to host h, answered; throws host_died when the host is gone, runtime_error
    // when it refused ("ok": false).
    nlohmann::json request(int h, const nlohmann::json& req, const std::vector<int>& fds = {});
    void resume(host& x);
    // The checker's deferred uploads and fills (device_memory) done: before any host runs.
    void settle_device();
    void stop(host& x);
    // Waits until the host has stopped itself after its reply (or died: pid becomes -1).
    void await_stop(host& x);
    // Stops every host but `keep` (-1: all). A host runs only while the checker waits for its
    // replies: it is stopped before another host is asked anything and before the checker reads
    // or writes the shared buffers.
    void stop_all_but(int keep);
    [[noreturn]] void lost(host& x, const std::string& what);
    void map_into(int h, const allocation& a);
    [[nodiscard]] std::pair<const allocation*, std::size_t> locate(const void* p) const;
    [[nodiscard]] const entry_ref& entry_of(entry_fn f) const;
    // The id of the argument set `a` describes, defined in host h if new to it.
    int args_id(int h, const kl_args& a);
    void calibrate(int h);
    nlohmann::json timed_request(int h, const nlohmann::json& req, double& window_s);
    void flush_pending(int h);

    remote_options m_options;
    bool m_on_device = false;
    std::vector<host> m_hosts;
    std::map<std::uintptr_t, allocation> m_allocations;   // by view address
    int m_next_buffer = 0;
    std::deque<char> m_tokens;                             // entry tokens' addresses
    std::unordered_map<const void*, entry_ref> m_entries;
    std::unordered_map<std::string, int> m_arg_ids;        // an argument set's description → id
    int m_last_host = 0;                                   // the host whose device copy is current
    nlohmann::json m_last_info;
    // Live calibration (CPU hosts): every k_live_calibration_every-th timed call, and every call
    // whose window reached k_live_calibration_always_s (the empty call then costs a few percent
    // of it, and a short series of slow calls under a time cap still gets enough of them), is
    // followed by one of kloop's empty entry point on a host that never loads candidate code,
    // timed the same way, while the candidate's host is stopped: its overhead (last_sample_info
    // "calibration_overhead_s") shows what the machine's load adds to a window now, which the
    // candidate cannot influence (measure/timer_agreement.hpp).
    static constexpr int k_live_calibration_every = 4;
    static constexpr double k_live_calibration_always_s = 1e-3;
    int m_calibration_host = -1;
    long long m_timed_calls = 0;
    [[nodiscard]] double live_calibration_overhead();
    nlohmann::json m_last_census;
    nlohmann::json m_device_facts;
    std::optional<std::uint64_t> m_pending_flush;          // flush_caches before the next call
    op_timings& m_op_times = op_timings::process();        // KLOOP_OP_TIMES: where the wall time goes
};

}  // namespace kloop::runner
