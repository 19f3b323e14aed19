// kloop runner: CPU executor.
#include "runner/host_executor.hpp"

#include <chrono>
#include <stdexcept>
#include <vector>

#include <nlohmann/json.hpp>

namespace kloop::runner {

nlohmann::json executor_base::describe() const {
    nlohmann::json j = nlohmann::json::object();
    do_describe(j);
    return j;
}

void executor_base::do_describe(nlohmann::json& out) const { out["device"] = "unknown"; }

nlohmann::json executor_base::last_sample_info() const { return do_last_sample_info(); }

nlohmann::json executor_base::do_last_sample_info() const { return nullptr; }

nlohmann::json executor_base::extra_timing(entry_fn f, const std::vector<const kl_args*>& sets, double median_s) {
    return do_extra_timing(f, sets, median_s);
}

nlohmann::json executor_base::do_extra_timing(entry_fn, const std::vector<const kl_args*>&, double) { return nullptr; }

void executor_base::do_fill(void* device_dst, unsigned char value, std::size_t bytes) {
    const std::vector<unsigned char> pattern(bytes, value);
    do_upload(device_dst, pattern.data(), bytes);
}

void executor_base::do_copy_on_device_deferred(void*, const void*, std::size_t) {
    throw std::logic_error("this executor does not copy on a device (can_compare_on_device is false)");
}

void executor_base::do_first_difference_deferred(const void*, const void*, std::size_t, std::uint64_t*) {
    throw std::logic_error("this executor does not compare on a device (can_compare_on_device is false)");
}

std::string executor_base::do_export_memory(void*) {
    throw std::logic_error("this executor has no device memory to share");
}

void* executor_base::do_import_memory(const std::string&) {
    throw std::logic_error("this executor has no device memory to share");
}

void* host_executor::do_allocate(std::size_t) {
    throw std::logic_error("host_executor: buffers are used in place, nothing to allocate");
}

void host_executor::do_upload(void*, const void*, std::size_t) {
    throw std::logic_error("host_executor: buffers are used in place, nothing to upload");
}

void host_executor::do_download(void*, const void*, std::size_t) {
    throw std::logic_error("host_executor: buffers are used in place, nothing to download");
}

call_outcome host_executor::do_invoke(entry_fn f, const kl_args& a) {
    call_outcome out;
    out.return_code = f(&a);
    return out;
}

// Writes one byte into every cache line of the flush buffer, so each line is pulled into the
// cache hierarchy (evicting the candidate's data) at the cost of one pass. Writes through a
// volatile pointer so the compiler cannot drop the traffic.
void host_executor::do_flush_caches(std::uint64_t bytes) {
    if (bytes == 0) return;
    if (m_flush.size() < bytes) m_flush.resize(bytes);
    volatile unsigned char* p = m_flush.data();
    ++m_pattern;
    for (std::uint64_t i = 0; i < bytes; i += 64) p[i] = m_pattern;
}

double host_executor::do_time_call(entry_fn f, const kl_args& a, call_outcome& outcome) {
    using clock = std::chrono::steady_clock;
    const auto t0 = clock::now();
    outcome.return_code = f(&a);
    const auto t1 = clock::now();
    outcome.device_error.clear();
    return std::chrono::duration<double>(t1 - t0).count();
}

void host_executor::do_describe(nlohmann::json& out) const {
    out["device"] = "cpu";
    out["timer"] = "std::chrono::steady_clock";
}

}  // namespace kloop::runner
