// kloop backend/cuda: the runner's executor for device "cuda" (linked only into kloop-runner-cuda).
//
// Responsibility: run a candidate's (or a naive .cu reference's) calls on one GPU the way the
// measurement protocol says (docs/measurement.md, "GPU timing protocol"):
//   - memory: cudaMalloc'd mirrors of the runner's guarded host blocks, red zones included;
//     upload/download copy whole blocks, so poison and canaries are checked on the host copy;
//   - a blocking (not cudaStreamNonBlocking) stream, passed as kl_args::stream;
//   - invoke: the call, cudaGetLastError, cudaStreamSynchronize, cudaDeviceSynchronize; any error
//     is the candidate's (call_outcome::device_error, "cudaErrorIllegalAddress: …") — the runner
//     stops after one, since a sticky error poisons the context;
//   - flush_caches: cudaCtxResetPersistingL2Cache, then a read of max(bytes, 2 × L2) of zeros
//     through L2 (device_kernels.cuh), which leaves no dirty line for the timed call to write
//     back; KLOOP_CUDA_FLUSH=write makes it the former cudaMemsetAsync of that size;
//   - time_call: hold the legacy default stream with the blocking kernel, record the start event
//     on our stream, make the call, record the end event on the legacy stream (which waits for
//     every blocking stream: side-stream work is counted), release, cudaDeviceSynchronize, read
//     the events; then the SM clock (NVML, else the clock64/globaltimer probe) and the throttle
//     reasons. A sample below 75 % of the max SM clock is marked "discard" (last_sample_info)
//     after a cool-down and a re-warm, at most k_max_consecutive_discards times in a row;
//   - extra_timing: kernels under 20 µs also get a CUDA-graph replay time per call (N calls
//     rotating the input sets captured into one graph, replayed, timed with events); off when
//     KLOOP_NO_GRAPH_REPLAY is set (under ncu, which would profile every graph node);
//   - profile_range: cudaProfilerStart / cudaProfilerStop around the profile phase's one call.
// Every CUDA call of the executor's own goes through KLOOP_CUDA_CALL (cuda_check.hpp).
//
// The census hook: set_call_observer(f) makes every invoke() (the checked calls: gate cases,
// same-address rechecks, timed samples' reference checks — never a timed sample or a graph
// replay) call f(true) just before the candidate's entry point and f(false) after the device
// synchronisation, so a CUPTI activity capture can bracket exactly the checked call. When the
// reference is a .cu too, it runs on the same executor: get_current_entry() (valid inside the
// observer) tells the candidate's entry point from the reference's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "runner/executor.hpp"

struct CUstream_st;
struct CUevent_st;

namespace kloop::backend::cuda {

class nvml_loader;

class cuda_executor final : public runner::executor_base {
public:
    static constexpr double k_throttle_fraction = 0.75;      // discard below 75 % of the max SM clock
    static constexpr double k_cooldown_s = 0.2;              // sleep before retaking a throttled sample
    static constexpr int k_max_consecutive_discards = 20;    // then keep samples, marked "throttled"
    static constexpr double k_graph_threshold_s = 20e-6;     // graph replay for medians below this
    static constexpr std::uint64_t k_hold_timeout_ns = 500'000'000;  // blocking kernel gives up (0.5 s)

    // Selects device `ordinal` (after CUDA_VISIBLE_DEVICES) and creates its context, stream and
    // events. Throws cuda_error / std::runtime_error when there is no usable device.
    explicit cuda_executor(int ordinal = 0);
    ~cuda_executor() override;
    cuda_executor(const cuda_executor&) = delete;
    cuda_executor& operator=(const cuda_executor&) = delete;

    // See the header comment. Pass an empty function to remove the observer.
    void set_call_observer(std::function<void(bool begin)> observer) { m_observer = std::move(observer); }

    // The entry point invoke() is running (nullptr outside an invoke).
    [[nodiscard]] runner::entry_fn get_current_entry() const noexcept { return m_current_entry; }
    [[nodiscard]] std::uint64_t get_l2_bytes() const noexcept { return m_l2_bytes; }
    [[nodiscard]] int get_ordinal() const noexcept { return m_ordinal; }

protected:
    kl_device do_get_device() const override { return KL_CUDA; }
    void* do_get_stream() const override;
    void* do_allocate(std::size_t bytes) override;
    void do_release(void* device_ptr) noexcept override;
    void do_upload(void* device_dst, const void* host_src, std::size_t bytes) override;
    void do_download(void* host_dst, const void* device_src, std::size_t bytes) override;
    void do_fill(void* device_dst, unsigned char value, std::size_t bytes) override;  // cudaMemsetAsync
    // Queued on the stream (uploads from a pinned staging copy), synchronised by do_settle or by
    // the next synchronous operation.
    void do_upload_deferred(void* device_dst, const void* host_src, std::size_t bytes) override;
    void do_fill_deferred(void* device_dst, unsigned char value, std::size_t bytes) override;
    void do_settle() override;
    // Every span copied into one pinned buffer, one synchronisation, then out of it.
    void do_download_many(const std::vector<download_span>& spans) override;
    bool do_can_compare_on_device() const override { return true; }
    void do_copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes) override;
    void do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) override;
    std::string do_export_memory(void* device_ptr) override;   // cudaIpcGetMemHandle, as hex
    void* do_import_memory(const std::string& handle) override;  // cudaIpcOpenMemHandle
    void do_close_import(void* device_ptr) noexcept override;  // cudaIpcCloseMemHandle
    runner::call_outcome do_invoke(runner::entry_fn f, const kl_args& a) override;
    void do_flush_caches(std::uint64_t bytes) override;
    double do_time_call(runner::entry_fn f, const kl_args& a, runner::call_outcome& outcome) override;
    void do_describe(nlohmann::json& out) const override;
    void do_profile_range(bool begin) override;   // cudaProfilerStart / cudaProfilerStop
    nlohmann::json do_last_sample_info() const override { return m_last_info; }
    nlohmann::json do_extra_timing(runner::entry_fn f, const std::vector<const kl_args*>& sets,
                                   double median_s) override;

private:
    // Effective SM clock (MHz) by the probe kernel; 0 when it fails.
    double probe_sm_clock_mhz();
    void record_clock(runner::entry_fn f, const kl_args& a, bool hold_timed_out);
    // Synchronises the stream; the deferred writes are then done and their staging is free.
    void synchronize_stream();
    // A pinned host buffer of at least `bytes` (grown, never shrunk).
    static void reserve_pinned(unsigned char*& buffer, std::size_t& capacity, std::size_t bytes);

    int m_ordinal = 0;
    CUstream_st* m_stream = nullptr;
    CUevent_st* m_start = nullptr;
    CUevent_st* m_stop = nullptr;
    int* m_host_flags = nullptr;        // [0] release, [1] timed out; host-mapped
    int* m_device_flags = nullptr;
    unsigned long long* m_probe = nullptr;  // device: clock probe result
    void* m_flush = nullptr;
    std::uint64_t m_flush_capacity = 0;
    std::uint64_t m_last_flush_bytes = 0;
    unsigned char m_flush_pattern = 0;
    unsigned* m_flush_sink = nullptr;   // device: the read flush's never-written output
    bool m_flush_writes = false;        // KLOOP_CUDA_FLUSH=write
    bool m_end_on_own_stream = false;   // KLOOP_CUDA_END_EVENT=stream (diagnostic)
    int m_sms = 0;
    bool m_persisting_reset_ok = true;
    std::uint64_t m_l2_bytes = 0;
    double m_max_sm_clock_mhz = 0;
    std::string m_clock_source;         // "nvml" | "probe"
    int m_consecutive_discards = 0;
    nlohmann::json m_last_info;
    nlohmann::json m_facts;             // describe()
    std::unique_ptr<nvml_loader> m_nvml;
    std::function<void(bool)> m_observer;
    runner::entry_fn m_current_entry = nullptr;
    unsigned char* m_staging = nullptr;  // pinned: the sources of deferred uploads until settled
    std::size_t m_staging_capacity = 0;
    std::size_t m_staging_used = 0;
    bool m_deferred_pending = false;
    unsigned char* m_gather = nullptr;   // pinned: download_many's landing place
    std::size_t m_gather_capacity = 0;
};

}  // namespace kloop::backend::cuda
