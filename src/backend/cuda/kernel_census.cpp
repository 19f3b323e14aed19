// kloop backend/cuda: CUPTI activity capture of every kernel in a checked call (kernel_census.hpp).
#include "backend/cuda/kernel_census.hpp"

#include <cupti_activity.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <vector>

#include "backend/cuda/cuda_executor.hpp"
#include "check/census_rules.hpp"

namespace kloop::backend::cuda {

namespace {

using nlohmann::json;

constexpr std::size_t k_buffer_bytes = 8u << 20;  // 20000 records, 0 dropped in the H200 probe
constexpr std::size_t k_buffer_align = 8;

// The CUPTI entry points we use, resolved with dlsym (types from the CUDA 13.0 headers).
struct cupti_api {
    decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
    decltype(&cuptiActivityEnable) enable = nullptr;
    decltype(&cuptiActivityDisable) disable = nullptr;
    decltype(&cuptiActivityFlushAll) flush_all = nullptr;
    decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
    decltype(&cuptiActivityGetNumDroppedRecords) dropped = nullptr;
    decltype(&cuptiGetTimestamp) timestamp = nullptr;
    decltype(&cuptiGetResultString) result_string = nullptr;
};

struct raw_kernel {
    std::string name;
    std::uint32_t grid[3]{}, block[3]{};
    std::uint64_t start = 0, end = 0;
    std::uint32_t stream = 0;
    std::uint32_t registers = 0;
    std::int32_t static_smem = 0, dynamic_smem = 0;
    bool device_launched = false;
    std::uint32_t graph_id = 0;
};

}  // namespace

struct kernel_census::impl {
    void* lib = nullptr;
    std::string lib_path;
    cupti_api api;
    bool available = false;
    bool enabled = false;
    std::string reason;

    std::mutex mutex;                  // CUPTI may complete buffers on its own thread
    std::vector<raw_kernel> pending;   // records completed since the last begin()
    std::uint64_t dropped = 0;
    std::uint64_t window_start = 0;
    std::uint64_t window_end = 0;
    json last;                         // the last closed window's census
    bool have_last = false;

    std::string cupti_error(const char* what, CUptiResult r) const {
        const char* s = nullptr;
        if (api.result_string != nullptr) api.result_string(r, &s);
        return std::string(what) + ": " + (s != nullptr ? s : "CUPTI error " + std::to_string(static_cast<int>(r)));
    }

    bool load();
    void consume(uint8_t* buffer, size_t valid);
};

namespace {

std::atomic<kernel_census::impl*> g_instance{nullptr};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
    *buffer = static_cast<uint8_t*>(std::aligned_alloc(k_buffer_align, k_buffer_bytes));
    *size = *buffer != nullptr ? k_buffer_bytes : 0;
    *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
    if (auto* self = g_instance.load()) {
        self->consume(buffer, valid);
        size_t dropped = 0;
        if (self->api.dropped != nullptr && self->api.dropped(ctx, stream_id, &dropped) == CUPTI_SUCCESS && dropped > 0) {
            const std::lock_guard<std::mutex> lock(self->mutex);
            self->dropped += dropped;
        }
    }
    std::free(buffer);
}

std::vector<std::string> cupti_candidates() {
    std::vector<std::string> c;
    if (const char* p = std::getenv("KLOOP_CUPTI_LIB"); p != nullptr && *p != '\0') c.emplace_back(p);
    c.emplace_back("libcupti.so.13");
    for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
        if (const char* p = std::getenv(env); p != nullptr && *p != '\0') {
            c.push_back(std::string(p) + "/lib64/libcupti.so.13");
            c.push_back(std::string(p) + "/extras/CUPTI/lib64/libcupti.so.13");
        }
    c.emplace_back("/usr/local/cuda/lib64/libcupti.so.13");
    c.emplace_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so.13");
    c.emplace_back("libcupti.so");
    return c;
}

}  // namespace

bool kernel_census::impl::load() {
    std::string errors;
    for (const auto& path : cupti_candidates()) {
        lib = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
        if (lib != nullptr) {
            lib_path = path;
            break;
        }
        const char* e = ::dlerror();
        if (errors.empty()) errors = e != nullptr ? e : path + ": not found";
    }
    if (lib == nullptr) {
        reason = "cannot load CUPTI (" + errors + "; set KLOOP_CUPTI_LIB to libcupti.so.13)";
        return false;
    }
    auto sym = [&](const char* name) { return ::dlsym(lib, name); };
    api.register_callbacks = reinterpret_cast<decltype(api.register_callbacks)>(sym("cuptiActivityRegisterCallbacks"));
    api.enable = reinterpret_cast<decltype(api.enable)>(sym("cuptiActivityEnable"));
    api.disable = reinterpret_cast<decltype(api.disable)>(sym("cuptiActivityDisable"));
    api.flush_all = reinterpret_cast<decltype(api.flush_all)>(sym("cuptiActivityFlushAll"));
    api.next_record = reinterpret_cast<decltype(api.next_record)>(sym("cuptiActivityGetNextRecord"));
    api.dropped = reinterpret_cast<decltype(api.dropped)>(sym("cuptiActivityGetNumDroppedRecords"));
    api.timestamp = reinterpret_cast<decltype(api.timestamp)>(sym("cuptiGetTimestamp"));
    api.result_string = reinterpret_cast<decltype(api.result_string)>(sym("cuptiGetResultString"));
    if (!api.register_callbacks || !api.enable || !api.disable || !api.flush_all || !api.next_record) {
        reason = lib_path + " lacks the activity API";
        return false;
    }
    return true;
}

void kernel_census::impl::consume(uint8_t* buffer, size_t valid) {
    if (valid == 0) return;
    std::vector<raw_kernel> got;
    CUpti_Activity* rec = nullptr;
    while (api.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
        // CUDA 13.0's kernel record; the leading fields we read are laid out the same in every
        // CUpti_ActivityKernel version this header family delivers.
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(rec);
        raw_kernel r;
        r.name = k->name != nullptr ? k->name : "<unnamed>";
        r.grid[0] = static_cast<std::uint32_t>(k->gridX);
        r.grid[1] = static_cast<std::uint32_t>(k->gridY);
        r.grid[2] = static_cast<std::uint32_t>(k->gridZ);
        r.block[0] = static_cast<std::uint32_t>(k->blockX);
        r.block[1] = static_cast<std::uint32_t>(k->blockY);
        r.block[2] = static_cast<std::uint32_t>(k->blockZ);
        r.start = k->start;
        r.end = k->end;
        r.stream = k->streamId;
        r.registers = k->registersPerThread;
        r.static_smem = k->staticSharedMemory;
        r.dynamic_smem = k->dynamicSharedMemory;
        r.device_launched = k->isDeviceLaunched != 0;
        r.graph_id = k->graphId;
        got.push_back(std::move(r));
    }
    const std::lock_guard<std::mutex> lock(mutex);
    for (auto& r : got) pending.push_back(std::move(r));
}

kernel_census::kernel_census() : m(std::make_unique<impl>()) {
    impl* expected = nullptr;
    if (!g_instance.compare_exchange_strong(expected, m.get())) {
        m->reason = "another kernel census is active in this process";
        return;
    }
    if (!m->load()) return;
    if (const auto r = m->api.register_callbacks(&buffer_requested, &buffer_completed); r != CUPTI_SUCCESS) {
        m->reason = m->cupti_error("cuptiActivityRegisterCallbacks", r);
        return;
    }
    if (const auto r = m->api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
        // CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED under ncu / nsys / torch.profiler.
        m->reason = m->cupti_error("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
        return;
    }
    m->enabled = true;
    m->available = true;
}

kernel_census::~kernel_census() {
    // Detach only. No CUPTI call here: the census may die at process exit, after the CUDA
    // runtime's own teardown; buffers CUPTI completes later are just freed (g_instance is null).
    // CUPTI stays loaded: unloading it while the driver holds its callbacks is not safe.
    impl* self = m.get();
    g_instance.compare_exchange_strong(self, nullptr);
}

bool kernel_census::is_available() const noexcept { return m->available; }
const std::string& kernel_census::get_unavailable_reason() const noexcept { return m->reason; }
const std::string& kernel_census::get_library_path() const noexcept { return m->lib_path; }

void kernel_census::begin() {
    if (!m->available || !m->enabled) return;
    m->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    const std::lock_guard<std::mutex> lock(m->mutex);
    m->pending.clear();
    m->dropped = 0;
    m->window_start = 0;
    if (m->api.timestamp != nullptr) m->api.timestamp(&m->window_start);
}

void kernel_census::end() {
    if (!m->available || !m->enabled) return;
    if (m->api.timestamp != nullptr) m->api.timestamp(&m->window_end);
    m->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::vector<raw_kernel> got;
    std::uint64_t dropped = 0;
    {
        const std::lock_guard<std::mutex> lock(m->mutex);
        got.swap(m->pending);
        dropped = m->dropped;
        m->dropped = 0;
    }
    json kernels = json::array();
    for (const auto& r : got) {
        // A record that ended before the window opened belongs to earlier work (timestamps of 0
        // mean CUPTI did not collect them: keep those).
        if (r.end != 0 && m->window_start != 0 && r.end < m->window_start) continue;
        kernels.push_back({{"name", r.name},
                           {"demangled", check::demangle(r.name)},
                           {"grid", {r.grid[0], r.grid[1], r.grid[2]}},
                           {"block", {r.block[0], r.block[1], r.block[2]}},
                           {"start_ns", r.start},
                           {"end_ns", r.end},
                           {"duration_ns", r.end >= r.start ? r.end - r.start : 0},
                           {"stream", r.stream},
                           {"registers", r.registers},
                           {"static_smem", r.static_smem},
                           {"dynamic_smem", r.dynamic_smem},
                           {"device_launched", r.device_launched},
                           {"graph_id", r.graph_id}});
    }
    m->last = {{"available", true},
               {"kernels", std::move(kernels)},
               {"dropped", dropped},
               {"window_ns", m->window_end >= m->window_start ? m->window_end - m->window_start : 0}};
    m->have_last = true;
}

json kernel_census::take() {
    try {
        if (!m->available) return {{"available", false}, {"reason", m->reason}};
        if (!m->enabled) return {{"available", false}, {"reason", "census paused"}};
        if (!m->have_last) return {{"available", false}, {"reason", "no census window was closed for this call"}};
        m->have_last = false;
        return std::move(m->last);
    } catch (...) {
        return nullptr;
    }
}

void kernel_census::pause() {
    if (!m->available || !m->enabled) return;
    m->api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    m->api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    m->enabled = false;
}

void kernel_census::resume() {
    if (!m->available || m->enabled) return;
    if (const auto r = m->api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS) {
        m->reason = m->cupti_error("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
        m->available = false;
        return;
    }
    m->enabled = true;
}

std::function<void(bool)> kernel_census::observer() {
    return [this](bool begin_window) {
        if (begin_window) begin();
        else end();
    };
}

void attach_kernel_census(cuda_executor& exec, kernel_census& census) {
    exec.set_call_observer(census.observer());
    exec.set_census_provider([&census] { return census.take(); });
}

}  // namespace kloop::backend::cuda
