// kloop runner: where a library's calls run — host memory and a steady clock, or a GPU.
//
// Responsibility: the small plug-in point between the runner's protocol (gate, bench, checks;
// runner/runner.cpp) and a device. An executor owns device memory for call buffers (each host
// guarded buffer gets a byte-identical device mirror, red zones included, so every check runs on
// the host copy), invokes entry points and reports device errors, evicts caches, and times one
// call. The host executor is the identity: buffers are used in place. The CUDA executor lives in
// backend/cuda and is linked only into kloop-runner-cuda.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "kloop/kernel.h"

namespace kloop::runner {

using entry_fn = int (*)(const kl_args*);

struct call_outcome {
    int return_code = 0;
    std::string device_error;              // e.g. "cudaErrorIllegalAddress: an illegal memory access…"
    // The kernel census of this call (backend/cuda/kernel_census; judged by check/census_rules),
    // filled by invoke() from take_census(); null when the executor takes none (host, bench).
    nlohmann::json census;
    [[nodiscard]] bool ok() const { return return_code == 0 && device_error.empty(); }
};

class executor_base {
public:
    virtual ~executor_base() = default;

    [[nodiscard]] kl_device get_device() const { return do_get_device(); }
    [[nodiscard]] bool is_host() const { return get_device() == KL_HOST; }
    // Whether call buffers need mirrors (allocate / upload / download) or are used in place. The
    // host executor uses them in place; a device executor, and the remote executor that reaches
    // the candidate in another process (runner/remote_executor.hpp), need mirrors.
    [[nodiscard]] bool needs_mirrors() const { return do_needs_mirrors(); }
    // Whether reading a mirror back costs no more than a host memcpy (the remote executor's
    // shared host memory), so inputs can be verified after every call, not only checked ones.
    [[nodiscard]] bool has_cheap_readback() const { return do_has_cheap_readback(); }
    [[nodiscard]] void* get_stream() const { return do_get_stream(); }

    // Device mirrors (never called by the host executor's users: host buffers are used in place).
    [[nodiscard]] void* allocate(std::size_t bytes) { return do_allocate(bytes); }
    void release(void* device_ptr) noexcept { do_release(device_ptr); }
    void upload(void* device_dst, const void* host_src, std::size_t bytes) { do_upload(device_dst, host_src, bytes); }
    void download(void* host_dst, const void* device_src, std::size_t bytes) { do_download(host_dst, device_src, bytes); }
    // Sharing device memory between processes (CUDA IPC): export_memory gives a handle (hex text)
    // to an allocation of this executor; import_memory maps such a handle from another process
    // into this one, close_import unmaps it. The checker allocates the candidate's buffers and
    // the candidate host computes in them, so no byte the checks read passes through the
    // candidate's process. Executors without device memory throw std::logic_error.
    [[nodiscard]] std::string export_memory(void* device_ptr) { return do_export_memory(device_ptr); }
    [[nodiscard]] void* import_memory(const std::string& handle) { return do_import_memory(handle); }
    void close_import(void* device_ptr) noexcept { do_close_import(device_ptr); }
    // Sets `bytes` of a mirror to `value` where the mirror lives (the poison of every timed call:
    // 0xFF bytes are NaN in every float type and the integer poison), without a host copy.
    void fill(void* device_dst, unsigned char value, std::size_t bytes) { do_fill(device_dst, value, bytes); }
    // Writes the caller need not wait for: upload_deferred and fill_deferred may return before
    // the device holds the bytes (the executor keeps its own copy of the source, which may change
    // at once). Every later operation of this executor sees them done, and so does anyone after
    // settle(): a process that reads the memory (a candidate host) must be preceded by settle().
    // A device executor queues them and synchronises once; the default writes at once.
    void upload_deferred(void* device_dst, const void* host_src, std::size_t bytes) {
        do_upload_deferred(device_dst, host_src, bytes);
    }
    void fill_deferred(void* device_dst, unsigned char value, std::size_t bytes) { do_fill_deferred(device_dst, value, bytes); }
    void settle() { do_settle(); }
    // Several downloads with one synchronisation (the red zones after every timed call).
    struct download_span {
        void* host_dst;
        const void* device_src;
        std::size_t bytes;
    };
    void download_many(const std::vector<download_span>& spans) { do_download_many(spans); }

    // The checker's own device memory and comparisons, for verifying every input after every call
    // where reading the inputs back is not cheap (a GPU): a pristine copy of each input kept on
    // the device, compared there. can_compare_on_device() says whether the rest is available.
    //   - allocate_private: memory no candidate process maps (the remote executor's hosts map
    //     every allocate()d buffer, never these); release_private frees it.
    //   - copy_on_device_deferred: a device-to-device copy, deferred as upload_deferred is.
    //   - first_difference_deferred: *result (device memory, 8 bytes) := the lowest byte offset at
    //     which a and b differ, or all ones when they are equal; deferred, read back by a later
    //     download (download_many gathers it with the red zones).
    [[nodiscard]] bool can_compare_on_device() const { return do_can_compare_on_device(); }
    // Whether `other` computes in the device memory this executor's private allocations come
    // from (the checker's reference executor and the remote executor whose buffers it holds):
    // then a checked call's reference takes its inputs from the pristine copies by a device copy.
    [[nodiscard]] bool shares_device_memory_with(const executor_base& other) const {
        return do_shares_device_memory_with(other);
    }
    [[nodiscard]] void* allocate_private(std::size_t bytes) { return do_allocate_private(bytes); }
    void release_private(void* device_ptr) noexcept { do_release_private(device_ptr); }
    void copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes) {
        do_copy_on_device_deferred(device_dst, device_src, bytes);
    }
    void first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) {
        do_first_difference_deferred(a, b, bytes, result);
    }

    // One checked call: runs it to completion (device-wide) and reports any device error.
    [[nodiscard]] call_outcome invoke(entry_fn f, const kl_args& a) {
        auto out = do_invoke(f, a);
        out.census = take_census();
        return out;
    }
    // The census of the last invoke(), or null (see call_outcome::census). The default asks the
    // provider set with set_census_provider (backend/cuda/attach_kernel_census), if any.
    [[nodiscard]] nlohmann::json take_census() { return do_take_census(); }
    void set_census_provider(std::function<nlohmann::json()> provider) { m_census_provider = std::move(provider); }
    // Evict caches so the next call starts cold (bytes: how much to write).
    void flush_caches(std::uint64_t bytes) { do_flush_caches(bytes); }
    // The same, made now by whatever will run `f` next (an executor that defers its flush to the
    // next call, as remote_executor does, makes it here instead), so the caller can change the
    // buffers between the flush and the call (call_preparation::before_call).
    void flush_caches_now_for(entry_fn f, std::uint64_t bytes) { do_flush_caches_now_for(f, bytes); }
    // One timed sample of one call (caches already flushed by the caller).
    [[nodiscard]] double time_call(entry_fn f, const kl_args& a, call_outcome& outcome) {
        return do_time_call(f, a, outcome);
    }
    // Facts about the device for the runner's start event (name, clocks, ...).
    [[nodiscard]] nlohmann::json describe() const;
    // Facts about the sample time_call just took (SM clock, throttle reasons, ...), or null. When
    // it holds "discard": true the sample was taken while the device was throttled; the executor
    // has already cooled down, and the runner drops the sample and takes another.
    [[nodiscard]] nlohmann::json last_sample_info() const;
    // Called once per bench item after its samples (`sets`: the rotated input sets' arguments,
    // `median_s`: the samples' median). An executor may time the call another way — the CUDA
    // executor replays a CUDA graph of calls for short kernels. Returns fields to merge into the
    // bench_result event ({"graph_replay_s_per_call": …}), or null.
    [[nodiscard]] nlohmann::json extra_timing(entry_fn f, const std::vector<const kl_args*>& sets, double median_s);
    // Opens (begin) or closes the profiler range of the profile phase: under `ncu
    // --profile-from-start off` only the work between the two is profiled. The CUDA executor
    // calls cudaProfilerStart/Stop; elsewhere a no-op.
    void profile_range(bool begin) { do_profile_range(begin); }

protected:
    virtual kl_device do_get_device() const = 0;
    virtual void* do_get_stream() const { return nullptr; }
    virtual bool do_needs_mirrors() const { return !is_host(); }
    virtual bool do_has_cheap_readback() const { return false; }
    virtual void do_fill(void* device_dst, unsigned char value, std::size_t bytes);
    virtual std::string do_export_memory(void* device_ptr);
    virtual void* do_import_memory(const std::string& handle);
    virtual void do_close_import(void* /*device_ptr*/) noexcept {}
    virtual void* do_allocate(std::size_t bytes) = 0;
    virtual void do_release(void* device_ptr) noexcept = 0;
    virtual void do_upload(void* device_dst, const void* host_src, std::size_t bytes) = 0;
    virtual void do_download(void* host_dst, const void* device_src, std::size_t bytes) = 0;
    virtual void do_upload_deferred(void* device_dst, const void* host_src, std::size_t bytes) {
        do_upload(device_dst, host_src, bytes);
    }
    virtual void do_fill_deferred(void* device_dst, unsigned char value, std::size_t bytes) {
        do_fill(device_dst, value, bytes);
    }
    virtual void do_settle() {}
    virtual bool do_can_compare_on_device() const { return false; }
    virtual bool do_shares_device_memory_with(const executor_base& other) const { return this == &other; }
    virtual void* do_allocate_private(std::size_t bytes) { return do_allocate(bytes); }
    virtual void do_release_private(void* device_ptr) noexcept { do_release(device_ptr); }
    virtual void do_copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes);
    virtual void do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result);
    virtual void do_download_many(const std::vector<download_span>& spans) {
        for (const auto& s : spans) do_download(s.host_dst, s.device_src, s.bytes);
    }
    virtual call_outcome do_invoke(entry_fn f, const kl_args& a) = 0;
    virtual nlohmann::json do_take_census() { return m_census_provider ? m_census_provider() : nlohmann::json(); }
    virtual void do_flush_caches(std::uint64_t bytes) = 0;
    virtual void do_flush_caches_now_for(entry_fn /*f*/, std::uint64_t bytes) { do_flush_caches(bytes); }
    virtual double do_time_call(entry_fn f, const kl_args& a, call_outcome& outcome) = 0;
    virtual void do_describe(nlohmann::json& out) const;
    virtual nlohmann::json do_last_sample_info() const;  // default: null
    virtual nlohmann::json do_extra_timing(entry_fn f, const std::vector<const kl_args*>& sets, double median_s);  // default: null
    virtual void do_profile_range(bool /*begin*/) {}

private:
    std::function<nlohmann::json()> m_census_provider;
};

}  // namespace kloop::runner
