// kloop backend/cuda: the CUDA executor (see cuda_executor.hpp and docs/measurement.md).
#include "backend/cuda/cuda_executor.hpp"

#include <cuda_profiler_api.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

#include "backend/cuda/cuda_check.hpp"
#include "backend/cuda/device_kernels.cuh"
#include "backend/cuda/nvml_loader.hpp"
#include "measure/graph_replay_rule.hpp"
#include "measure/statistics.hpp"

namespace kloop::backend::cuda {

using nlohmann::json;

void throw_cuda_error(cudaError_t e, const char* call_text) {
    throw cuda_error(e, std::string(call_text) + ": " + describe_cuda_error(e));
}

void report_cuda_error(cudaError_t e, const char* call_text) noexcept {
    std::fprintf(stderr, "kloop-runner-cuda: warning: %s: %s: %s\n", call_text, cudaGetErrorName(e),
                 cudaGetErrorString(e));
}

namespace {

// The first error of a call sequence, as the candidate's outcome.
void note_error(runner::call_outcome& out, cudaError_t e) {
    if (e != cudaSuccess && out.device_error.empty()) out.device_error = describe_cuda_error(e);
}

// Releases the blocking kernel when it goes out of scope, whatever happened in between.
class hold_release {
public:
    explicit hold_release(int* flags) : m_flags(flags) {}
    ~hold_release() { release(); }
    void release() noexcept {
        if (m_flags == nullptr) return;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        *static_cast<volatile int*>(m_flags) = 1;
        std::atomic_thread_fence(std::memory_order_seq_cst);
        m_flags = nullptr;
    }

private:
    int* m_flags;
};

// A diagnostic switch: false when `name` is unset, empty or `usual`, true when `other`; any
// other value is an error naming the variable.
bool env_switch(const char* name, const std::string& usual, const std::string& other) {
    const char* v = std::getenv(name);
    if (v == nullptr || *v == '\0' || usual == v) return false;
    if (other == v) return true;
    throw std::runtime_error(std::string(name) + "='" + v + "': expected '" + usual + "' (the default) or '" + other + "'");
}

// Kernel nodes of a captured graph, those of child graphs included; -1 when it cannot be read.
long long count_kernel_nodes(cudaGraph_t graph, int depth = 0) {
    std::size_t count = 0;
    if (cudaGraphGetNodes(graph, nullptr, &count) != cudaSuccess) return -1;
    std::vector<cudaGraphNode_t> nodes(count);
    if (count > 0 && cudaGraphGetNodes(graph, nodes.data(), &count) != cudaSuccess) return -1;
    long long kernels = 0;
    for (std::size_t i = 0; i < count; ++i) {
        cudaGraphNodeType type{};
        if (cudaGraphNodeGetType(nodes[i], &type) != cudaSuccess) return -1;
        if (type == cudaGraphNodeTypeKernel) {
            ++kernels;
        } else if (type == cudaGraphNodeTypeGraph && depth < 8) {
            cudaGraph_t child = nullptr;
            if (cudaGraphChildGraphNodeGetGraph(nodes[i], &child) != cudaSuccess) return -1;
            const long long inner = count_kernel_nodes(child, depth + 1);
            if (inner < 0) return -1;
            kernels += inner;
        }
    }
    return kernels;
}

// Bytes of one element of a floating-point kl_dtype; 0 for integers (whose 0xFF poison, -1, is a
// value a kernel may legitimately write).
std::size_t float_element_bytes(kl_dtype t) {
    switch (t) {
        case KL_F32: return 4;
        case KL_F16:
        case KL_BF16: return 2;
        case KL_F64: return 8;
        default: return 0;
    }
}

std::size_t element_count(const kl_tensor& t) {
    std::size_t n = 1;
    for (int d = 0; d < t.ndim && d < KL_MAX_DIMS; ++d) n *= static_cast<std::size_t>(std::max<std::int64_t>(0, t.shape[d]));
    return n;
}

}  // namespace

cuda_executor::cuda_executor(int ordinal) : m_ordinal(ordinal) {
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) throw cuda_error(e, "no usable CUDA device: cudaGetDeviceCount: " + describe_cuda_error(e));
    if (count <= ordinal)
        throw std::runtime_error("no CUDA device " + std::to_string(ordinal) + " (" + std::to_string(count) +
                                 " visible)");
    KLOOP_CUDA_CALL(cudaSetDevice(ordinal));
    KLOOP_CUDA_CALL(cudaFree(nullptr));  // create the primary context now, not inside the first timed call

    cudaDeviceProp prop{};
    KLOOP_CUDA_CALL(cudaGetDeviceProperties(&prop, ordinal));
    int l2 = 0, clock_khz = 0, sms = 0;
    KLOOP_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, ordinal));
    KLOOP_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, ordinal));
    if (cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, ordinal) != cudaSuccess) {
        clock_khz = 0;
        (void)cudaGetLastError();
    }
    m_l2_bytes = static_cast<std::uint64_t>(l2);
    m_sms = sms;
    // The flush reads by default; KLOOP_CUDA_FLUSH=write restores the memset flush, for
    // bench/gpu_timing_agreement.sh's side-by-side of the two (docs/measurement.md).
    m_flush_writes = env_switch("KLOOP_CUDA_FLUSH", "read", "write");
    // Diagnostic only (bench/gpu_timing_agreement.sh): KLOOP_CUDA_END_EVENT=stream records the end
    // event on the runner's stream, which no longer waits for a side stream's work — it measures
    // what the cross-stream end event costs against ncu, and is never for judging candidates.
    m_end_on_own_stream = env_switch("KLOOP_CUDA_END_EVENT", "legacy", "stream");

    // A blocking stream on purpose: the legacy default stream orders against it (see time_call).
    cudaStream_t stream = nullptr;
    KLOOP_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamDefault));
    m_stream = stream;
    cudaEvent_t start = nullptr, stop = nullptr;
    KLOOP_CUDA_CALL(cudaEventCreate(&start));
    KLOOP_CUDA_CALL(cudaEventCreate(&stop));
    m_start = start;
    m_stop = stop;
    KLOOP_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&m_host_flags), 2 * sizeof(int), cudaHostAllocMapped));
    m_host_flags[0] = 1;
    m_host_flags[1] = 0;
    KLOOP_CUDA_CALL(cudaHostGetDevicePointer(reinterpret_cast<void**>(&m_device_flags), m_host_flags, 0));
    KLOOP_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&m_probe), 2 * sizeof(unsigned long long)));
    KLOOP_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&m_flush_sink), sizeof(unsigned)));

    char uuid[64];
    {
        const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
        std::snprintf(uuid, sizeof uuid, "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0],
                      u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    }
    m_nvml = std::make_unique<nvml_loader>();
    if (m_nvml->is_available() && m_nvml->select_device(uuid, static_cast<unsigned>(ordinal))) {
        m_clock_source = "nvml";
        if (auto s = m_nvml->sample_clocks(true); s && s->max_sm_clock_mhz > 0) m_max_sm_clock_mhz = s->max_sm_clock_mhz;
    } else {
        m_clock_source = "probe";
    }
    if (m_max_sm_clock_mhz <= 0) m_max_sm_clock_mhz = clock_khz / 1000.0;

    int runtime = 0, driver = 0;
    (void)cudaRuntimeGetVersion(&runtime);
    (void)cudaDriverGetVersion(&driver);
    m_facts = json{{"device", "cuda"},
                   {"ordinal", ordinal},
                   {"name", prop.name},
                   {"uuid", uuid},
                   {"compute_capability", std::to_string(prop.major) + "." + std::to_string(prop.minor)},
                   {"sms", sms},
                   {"l2_bytes", m_l2_bytes},
                   {"flush_bytes_per_sample", 2 * m_l2_bytes},
                   {"flush", m_flush_writes ? "write (cudaMemsetAsync)" : "read (ld.global.cg, L2 left clean)"},
                   {"global_memory_bytes", static_cast<std::uint64_t>(prop.totalGlobalMem)},
                   {"max_sm_clock_mhz", m_max_sm_clock_mhz},
                   {"clock_source", m_clock_source},
                   {"throttle_fraction", k_throttle_fraction},
                   {"runtime_version", runtime},
                   {"driver_version", driver},
                   {"timer", std::string("cudaEvent pair; blocking kernel holds the legacy stream; end event on ") +
                                 (m_end_on_own_stream ? "the runner's stream (KLOOP_CUDA_END_EVENT=stream: side-stream "
                                                        "work NOT counted)"
                                                      : "the legacy stream") +
                                 "; cudaDeviceSynchronize per sample"}};
    if (!m_nvml->is_available()) m_facts["nvml_error"] = m_nvml->get_error();
}

cuda_executor::~cuda_executor() {
    if (m_flush != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFree(m_flush));
    if (m_flush_sink != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFree(m_flush_sink));
    if (m_probe != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFree(m_probe));
    if (m_host_flags != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_host_flags));
    if (m_start != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaEventDestroy(m_start));
    if (m_stop != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaEventDestroy(m_stop));
    if (m_stream != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaStreamDestroy(m_stream));
    if (m_staging != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_staging));
    if (m_gather != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFreeHost(m_gather));
}

void* cuda_executor::do_get_stream() const { return m_stream; }

void* cuda_executor::do_allocate(std::size_t bytes) {
    void* p = nullptr;
    KLOOP_CUDA_CALL(cudaMalloc(&p, bytes));
    return p;
}

void cuda_executor::do_release(void* device_ptr) noexcept {
    if (device_ptr != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaFree(device_ptr));
}

void cuda_executor::synchronize_stream() {
    KLOOP_CUDA_CALL(cudaStreamSynchronize(m_stream));
    m_deferred_pending = false;
    m_staging_used = 0;
}

void cuda_executor::do_upload(void* device_dst, const void* host_src, std::size_t bytes) {
    KLOOP_CUDA_CALL(cudaMemcpyAsync(device_dst, host_src, bytes, cudaMemcpyHostToDevice, m_stream));
    synchronize_stream();
}

void cuda_executor::do_download(void* host_dst, const void* device_src, std::size_t bytes) {
    KLOOP_CUDA_CALL(cudaMemcpyAsync(host_dst, device_src, bytes, cudaMemcpyDeviceToHost, m_stream));
    synchronize_stream();
}

void cuda_executor::do_fill(void* device_dst, unsigned char value, std::size_t bytes) {
    KLOOP_CUDA_CALL(cudaMemsetAsync(device_dst, value, bytes, m_stream));
    synchronize_stream();
}

void cuda_executor::reserve_pinned(unsigned char*& buffer, std::size_t& capacity, std::size_t bytes) {
    if (capacity >= bytes) return;
    if (buffer != nullptr) KLOOP_CUDA_CALL(cudaFreeHost(buffer));
    buffer = nullptr;
    capacity = 0;
    const std::size_t grown = std::max<std::size_t>(bytes, std::size_t{1} << 20);
    KLOOP_CUDA_CALL(cudaHostAlloc(reinterpret_cast<void**>(&buffer), grown, cudaHostAllocDefault));
    capacity = grown;
}

// Deferred uploads larger than this go synchronously: staging them would cost a second copy of
// bytes that take long to move anyway.
constexpr std::size_t k_max_deferred_upload = std::size_t{1} << 20;

void cuda_executor::do_upload_deferred(void* device_dst, const void* host_src, std::size_t bytes) {
    if (bytes > k_max_deferred_upload) return do_upload(device_dst, host_src, bytes);
    const std::size_t start = (m_staging_used + 255) & ~std::size_t{255};
    if (start + bytes > m_staging_capacity) {
        // The staging still holds sources of queued copies: finish them before reusing it.
        if (m_deferred_pending) synchronize_stream();
        reserve_pinned(m_staging, m_staging_capacity, 4 * k_max_deferred_upload);
        return do_upload_deferred(device_dst, host_src, bytes);
    }
    std::memcpy(m_staging + start, host_src, bytes);
    KLOOP_CUDA_CALL(cudaMemcpyAsync(device_dst, m_staging + start, bytes, cudaMemcpyHostToDevice, m_stream));
    m_staging_used = start + bytes;
    m_deferred_pending = true;
}

void cuda_executor::do_fill_deferred(void* device_dst, unsigned char value, std::size_t bytes) {
    KLOOP_CUDA_CALL(cudaMemsetAsync(device_dst, value, bytes, m_stream));
    m_deferred_pending = true;
}

void cuda_executor::do_settle() {
    if (m_deferred_pending) synchronize_stream();
}

void cuda_executor::do_copy_on_device_deferred(void* device_dst, const void* device_src, std::size_t bytes) {
    KLOOP_CUDA_CALL(cudaMemcpyAsync(device_dst, device_src, bytes, cudaMemcpyDeviceToDevice, m_stream));
    m_deferred_pending = true;
}

void cuda_executor::do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) {
    static_assert(sizeof(std::uint64_t) == sizeof(unsigned long long));
    KLOOP_CUDA_CALL(cudaMemsetAsync(result, 0xFF, sizeof *result, m_stream));
    KLOOP_CUDA_CALL(launch_first_difference(a, b, bytes, reinterpret_cast<unsigned long long*>(result), m_sms, m_stream));
    m_deferred_pending = true;
}

void cuda_executor::do_download_many(const std::vector<download_span>& spans) {
    std::size_t total = 0;
    for (const auto& s : spans) total += (s.bytes + 255) & ~std::size_t{255};
    if (total > (std::size_t{64} << 20)) return executor_base::do_download_many(spans);  // large: in place
    reserve_pinned(m_gather, m_gather_capacity, total);
    std::size_t at = 0;
    for (const auto& s : spans) {
        KLOOP_CUDA_CALL(cudaMemcpyAsync(m_gather + at, s.device_src, s.bytes, cudaMemcpyDeviceToHost, m_stream));
        at += (s.bytes + 255) & ~std::size_t{255};
    }
    synchronize_stream();
    at = 0;
    for (const auto& s : spans) {
        std::memcpy(s.host_dst, m_gather + at, s.bytes);
        at += (s.bytes + 255) & ~std::size_t{255};
    }
}

std::string cuda_executor::do_export_memory(void* device_ptr) {
    cudaIpcMemHandle_t h{};
    KLOOP_CUDA_CALL(cudaIpcGetMemHandle(&h, device_ptr));
    static const char* digits = "0123456789abcdef";
    std::string hex;
    for (std::size_t i = 0; i < sizeof(h.reserved); ++i) {
        const auto b = static_cast<unsigned char>(h.reserved[i]);
        hex += digits[b >> 4];
        hex += digits[b & 15];
    }
    return hex;
}

void* cuda_executor::do_import_memory(const std::string& handle) {
    cudaIpcMemHandle_t h{};
    if (handle.size() != 2 * sizeof(h.reserved)) throw std::runtime_error("a malformed CUDA IPC handle");
    auto nibble = [](char c) { return c <= '9' ? c - '0' : c - 'a' + 10; };
    for (std::size_t i = 0; i < sizeof(h.reserved); ++i)
        h.reserved[i] = static_cast<char>(nibble(handle[2 * i]) * 16 + nibble(handle[2 * i + 1]));
    void* p = nullptr;
    KLOOP_CUDA_CALL(cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess));
    return p;
}

void cuda_executor::do_close_import(void* device_ptr) noexcept {
    if (device_ptr != nullptr) KLOOP_CUDA_CALL_NOEXCEPT(cudaIpcCloseMemHandle(device_ptr));
}

runner::call_outcome cuda_executor::do_invoke(runner::entry_fn f, const kl_args& a) {
    runner::call_outcome out;
    m_current_entry = f;
    if (m_observer) m_observer(true);
    out.return_code = f(&a);
    note_error(out, cudaGetLastError());
    note_error(out, cudaStreamSynchronize(m_stream));
    note_error(out, cudaDeviceSynchronize());
    note_error(out, cudaGetLastError());
    if (m_observer) m_observer(false);
    m_current_entry = nullptr;
    return out;
}

void cuda_executor::do_flush_caches(std::uint64_t bytes) {
    // Persisting lines (cudaAccessPolicyWindow) survive a plain flush: reset them first.
    if (m_persisting_reset_ok && cudaCtxResetPersistingL2Cache() != cudaSuccess) {
        m_persisting_reset_ok = false;  // not supported here: note it once, go on
        (void)cudaGetLastError();
        m_facts["persisting_l2_reset"] = false;
    }
    const std::uint64_t size = std::max(bytes, 2 * m_l2_bytes);
    if (size == 0) return;
    if (m_flush_capacity < size) {
        if (m_flush != nullptr) KLOOP_CUDA_CALL(cudaFree(m_flush));
        m_flush = nullptr;
        m_flush_capacity = 0;
        KLOOP_CUDA_CALL(cudaMalloc(&m_flush, size));
        m_flush_capacity = size;
        KLOOP_CUDA_CALL(cudaMemsetAsync(m_flush, 0, size, m_stream));  // the read flush's zeros
    }
    if (m_flush_writes) {
        // A new byte each time, so no level of the hierarchy can treat the write as redundant.
        // It leaves L2 full of dirty lines, which the timed call then writes back (+11 % on a
        // 256 MiB copy against ncu on the H200): the read flush is the default.
        KLOOP_CUDA_CALL(cudaMemsetAsync(m_flush, ++m_flush_pattern, size, m_stream));
    } else {
        // Reading max(bytes, 2 × L2) evicts every line — the previous call's dirty ones are
        // written back now, not inside the timed call — and leaves L2 clean, as ncu's
        // --cache-control all does.
        KLOOP_CUDA_CALL(launch_read_flush(m_flush, size, m_flush_sink, m_sms, m_stream));
    }
    m_last_flush_bytes = size;
}

double cuda_executor::do_time_call(runner::entry_fn f, const kl_args& a, runner::call_outcome& out) {
    out = runner::call_outcome{};
    m_last_info = nullptr;
    // The flush (queued on our stream) must be over before the hold starts.
    KLOOP_CUDA_CALL(cudaStreamSynchronize(m_stream));
    auto* flags = static_cast<volatile int*>(m_host_flags);
    flags[0] = 0;
    flags[1] = 0;
    std::atomic_thread_fence(std::memory_order_seq_cst);
    hold_release hold(m_host_flags);
    // Hold the legacy default stream: every blocking stream (ours, and any side stream the
    // candidate created with default flags) waits for it, so all of the call's work is queued
    // behind the hold and none of it starts before the start event.
    KLOOP_CUDA_CALL(launch_blocking_kernel(m_device_flags, m_device_flags + 1, k_hold_timeout_ns, cudaStreamLegacy));
    KLOOP_CUDA_CALL(cudaEventRecord(m_start, m_stream));
    out.return_code = f(&a);
    note_error(out, cudaGetLastError());
    // The end event on the legacy stream waits for all prior work of every blocking stream.
    note_error(out, cudaEventRecord(m_stop, m_end_on_own_stream ? m_stream : cudaStreamLegacy));
    hold.release();
    note_error(out, cudaDeviceSynchronize());
    if (!out.device_error.empty()) return 0;
    float ms = 0;
    KLOOP_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_stop));
    record_clock(f, a, flags[1] != 0);
    return static_cast<double>(ms) * 1e-3;
}

double cuda_executor::probe_sm_clock_mhz() {
    constexpr long long k_spin_cycles = 20000;  // ~10 µs at 2 GHz: cheap, well above timer granularity
    if (launch_clock_probe(m_probe, k_spin_cycles, m_stream) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    unsigned long long r[2] = {0, 0};
    if (cudaMemcpyAsync(r, m_probe, sizeof r, cudaMemcpyDeviceToHost, m_stream) != cudaSuccess ||
        cudaStreamSynchronize(m_stream) != cudaSuccess || r[1] == 0) {
        (void)cudaGetLastError();
        return 0;
    }
    return static_cast<double>(r[0]) * 1e3 / static_cast<double>(r[1]);  // cycles per ns * 1000 = MHz
}

void cuda_executor::record_clock(runner::entry_fn f, const kl_args& a, bool hold_timed_out) {
    json info = json::object();
    double mhz = 0;
    bool reasons_known = false;
    std::uint64_t reasons = 0;
    if (m_clock_source == "nvml") {
        if (auto s = m_nvml->sample_clocks()) {
            mhz = s->sm_clock_mhz;
            reasons_known = s->reasons_known;
            reasons = s->event_reasons;
            if (reasons_known) {
                info["clock_event_reasons"] = reasons;
                if (reasons & ~clock_event_reason::gpu_idle) info["reasons"] = describe_clock_event_reasons(reasons);
            }
        }
    } else {
        mhz = probe_sm_clock_mhz();
    }
    if (mhz > 0) info["sm_clock_mhz"] = std::round(mhz);
    if (hold_timed_out) info["hold_timed_out"] = true;  // the call queued longer than the hold lasted
    // Throttled = below 75 % of the max SM clock for a throttling reason. A low clock with only
    // gpu_idle set is the device resting between samples, not a throttle; with no reasons known
    // (the probe), a low clock is enough.
    constexpr std::uint64_t k_throttle_bits =
        clock_event_reason::sw_power_cap | clock_event_reason::hw_slowdown | clock_event_reason::sw_thermal_slowdown |
        clock_event_reason::hw_thermal_slowdown | clock_event_reason::hw_power_brake_slowdown;
    const bool low = mhz > 0 && m_max_sm_clock_mhz > 0 && mhz < k_throttle_fraction * m_max_sm_clock_mhz;
    const bool throttled = low && (!reasons_known || (reasons & k_throttle_bits) != 0);
    if (low && !throttled) info["low_clock_idle"] = true;
    if (throttled) {
        if (m_consecutive_discards < k_max_consecutive_discards) {
            ++m_consecutive_discards;
            info["discard"] = true;
            // Cool down, then bring the clocks back up (~20 ms of back-to-back calls) before the
            // runner takes the next sample.
            std::this_thread::sleep_for(std::chrono::duration<double>(k_cooldown_s));
            const auto t0 = std::chrono::steady_clock::now();
            for (int i = 0; i < 100000; ++i) {
                (void)f(&a);
                if (i % 16 == 15) {
                    if (cudaStreamSynchronize(m_stream) != cudaSuccess) break;  // reported by the next sample
                    if (std::chrono::steady_clock::now() - t0 > std::chrono::milliseconds(20)) break;
                }
            }
            (void)cudaDeviceSynchronize();
        } else {
            info["throttled"] = true;  // kept: discarding forever would never finish
        }
    } else {
        m_consecutive_discards = 0;
    }
    m_last_info = std::move(info);
}

void cuda_executor::do_profile_range(bool begin) {
    KLOOP_CUDA_CALL(cudaDeviceSynchronize());
    if (begin) KLOOP_CUDA_CALL(cudaProfilerStart());
    else KLOOP_CUDA_CALL(cudaProfilerStop());
}

json cuda_executor::do_extra_timing(runner::entry_fn f, const std::vector<const kl_args*>& sets, double median_s) {
    if (sets.empty() || !(median_s > 0) || median_s >= k_graph_threshold_s) return nullptr;
    // Off under a profiler (bench/gpu_timing_agreement.sh): ncu would profile every graph node.
    if (const char* off = std::getenv("KLOOP_NO_GRAPH_REPLAY"); off != nullptr && *off != '\0' && *off != '0')
        return nullptr;
    const std::size_t k = sets.size();
    // Enough calls for ~1 ms of replay (event resolution ~0.5 µs), a whole number of rotations.
    std::size_t n = static_cast<std::size_t>(std::ceil(1e-3 / median_s));
    n = std::clamp<std::size_t>(n, 16, 2000);
    n = (n + k - 1) / k * k;

    auto fail = [&](const std::string& why) {
        (void)cudaGetLastError();  // capture errors are not sticky: clear them
        return json{{"graph_replay_error", why}};
    };
    KLOOP_CUDA_CALL(cudaDeviceSynchronize());
    cudaGraph_t graph = nullptr;
    cudaError_t e = cudaStreamBeginCapture(m_stream, cudaStreamCaptureModeGlobal);
    if (e != cudaSuccess) return fail("cudaStreamBeginCapture: " + describe_cuda_error(e));
    int rc = 0;
    for (std::size_t i = 0; i < n && rc == 0; ++i) rc = f(sets[i % k]);
    const cudaError_t launch = cudaGetLastError();
    e = cudaStreamEndCapture(m_stream, &graph);
    if (rc != 0 || launch != cudaSuccess || e != cudaSuccess || graph == nullptr) {
        if (graph != nullptr) (void)cudaGraphDestroy(graph);
        if (rc != 0) return fail("the candidate returned " + std::to_string(rc) + " during stream capture");
        return fail("stream capture failed: " + describe_cuda_error(launch != cudaSuccess ? launch : e));
    }
    // Every call must be in the graph: at least one kernel node per captured call. A call that
    // enqueued nothing, or put its work on another stream (which ran once, during the capture),
    // would otherwise get the replay time of an empty graph (measure/graph_replay_rule.hpp).
    const long long kernel_nodes = count_kernel_nodes(graph);
    if (kernel_nodes < 0) {
        (void)cudaGraphDestroy(graph);
        return fail("the captured graph's nodes could not be read");
    }
    cudaGraphExec_t exec = nullptr;
    e = cudaGraphInstantiate(&exec, graph, 0);
    (void)cudaGraphDestroy(graph);
    if (e != cudaSuccess) return fail("cudaGraphInstantiate: " + describe_cuda_error(e));
    struct exec_guard {
        cudaGraphExec_t g;
        ~exec_guard() { KLOOP_CUDA_CALL_NOEXCEPT(cudaGraphExecDestroy(g)); }
    } guard{exec};

    constexpr int k_replays = 7;
    KLOOP_CUDA_CALL(cudaGraphLaunch(exec, m_stream));  // upload and warm
    KLOOP_CUDA_CALL(cudaStreamSynchronize(m_stream));
    std::vector<double> per_call;
    for (int r = 0; r < k_replays; ++r) {
        KLOOP_CUDA_CALL(cudaEventRecord(m_start, m_stream));
        KLOOP_CUDA_CALL(cudaGraphLaunch(exec, m_stream));
        KLOOP_CUDA_CALL(cudaEventRecord(m_stop, cudaStreamLegacy));
        KLOOP_CUDA_CALL(cudaDeviceSynchronize());
        float ms = 0;
        KLOOP_CUDA_CALL(cudaEventElapsedTime(&ms, m_start, m_stop));
        per_call.push_back(static_cast<double>(ms) * 1e-3 / static_cast<double>(n));
    }

    // One more replay into poisoned outputs: every float output element of every input set must
    // be rewritten by it (the graph calls each set at least once: n is a multiple of k).
    measure::graph_replay_facts facts;
    facts.calls = n;
    facts.kernel_nodes = static_cast<std::uint64_t>(kernel_nodes);
    facts.per_call_s = measure::median_of(per_call);
    facts.eager_median_s = median_s;
    for (const auto* a : sets)
        for (int o = 0; o < a->n_outputs; ++o) {
            const auto& t = a->outputs[o];
            if (float_element_bytes(t.dtype) > 0 && t.data != nullptr)
                KLOOP_CUDA_CALL(cudaMemsetAsync(t.data, 0xFF, element_count(t) * float_element_bytes(t.dtype), m_stream));
        }
    KLOOP_CUDA_CALL(cudaGraphLaunch(exec, m_stream));
    KLOOP_CUDA_CALL(cudaDeviceSynchronize());
    std::vector<unsigned char> host;
    for (std::size_t set = 0; set < k; ++set)
        for (int o = 0; o < sets[set]->n_outputs; ++o) {
            const auto& t = sets[set]->outputs[o];
            const std::size_t elem = float_element_bytes(t.dtype);
            if (elem == 0 || t.data == nullptr) continue;
            const std::size_t count = element_count(t);
            host.resize(count * elem);
            KLOOP_CUDA_CALL(cudaMemcpy(host.data(), t.data, host.size(), cudaMemcpyDeviceToHost));
            std::uint64_t left = 0;
            for (std::size_t i = 0; i < count; ++i) {
                const unsigned char* x = host.data() + i * elem;
                bool poisoned = true;
                for (std::size_t b = 0; b < elem && poisoned; ++b) poisoned = x[b] == 0xFF;
                left += poisoned ? 1 : 0;
            }
            if (left > 0 && facts.poisoned_left == 0)
                facts.first_poisoned = std::string("output '") + (t.name ? t.name : "?") + "' of input set " + std::to_string(set);
            facts.poisoned_left += left;
        }
    facts.outputs_checked = true;

    json out = {{"graph_calls", n}, {"graph_kernel_nodes", kernel_nodes}, {"graph_replays", k_replays}};
    if (const std::string why = measure::graph_replay_refusal(facts); !why.empty()) {
        out["graph_replay_error"] = why;
        return out;
    }
    out["graph_replay_s_per_call"] = facts.per_call_s;
    out["graph_replay_samples_s_per_call"] = per_call;
    return out;
}

void cuda_executor::do_describe(json& out) const {
    out = m_facts;
    out["flush_bytes_last"] = m_last_flush_bytes;
}

}  // namespace kloop::backend::cuda
