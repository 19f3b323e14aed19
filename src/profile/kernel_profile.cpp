// kloop profile: the facts kloop uses about one profiled kernel launch (see kernel_profile.hpp).
#include "profile/kernel_profile.hpp"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <utility>

#include "profile/ncu_csv.hpp"

namespace kloop::profile {

namespace {

nlohmann::json opt(const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); }

std::optional<double> first_of(const ncu_row& row, std::initializer_list<std::string_view> names) {
    for (std::string_view n : names)
        if (auto v = row.get_number(n)) return v;
    return std::nullopt;
}

}  // namespace

std::string occupancy_limits::get_limiter() const {
    std::string best;
    std::optional<double> best_v;
    const std::pair<const char*, const std::optional<double>*> all[] = {
        {"registers", &registers}, {"shared_mem", &shared_mem}, {"warps", &warps},
        {"blocks", &blocks},       {"barriers", &barriers}};
    for (const auto& [name, v] : all)
        if (*v && (!best_v || **v < *best_v)) {
            best_v = **v;
            best = name;
        }
    return best;
}

std::vector<stall_reason> kernel_profile::top_stalls(std::size_t n) const {
    std::vector<stall_reason> out;
    for (const auto& s : stalls) {
        if (out.size() >= n) break;
        if (s.reason == "selected") continue;
        out.push_back(s);
    }
    return out;
}

std::optional<double> dims_product(std::string_view dims) {
    // "(x, y, z)" with any number of comma-separated non-negative integers.
    std::size_t i = 0;
    auto skip_space = [&] {
        while (i < dims.size() && std::isspace(static_cast<unsigned char>(dims[i]))) ++i;
    };
    skip_space();
    if (i >= dims.size() || dims[i] != '(') return std::nullopt;
    ++i;
    double product = 1;
    int count = 0;
    while (true) {
        skip_space();
        double v = 0;
        std::size_t digits = 0;
        while (i < dims.size() && dims[i] >= '0' && dims[i] <= '9') v = v * 10 + (dims[i++] - '0'), ++digits;
        if (digits == 0) return std::nullopt;
        product *= v;
        ++count;
        skip_space();
        if (i < dims.size() && dims[i] == ',') {
            ++i;
            continue;
        }
        if (i < dims.size() && dims[i] == ')') {
            ++i;
            break;
        }
        return std::nullopt;
    }
    skip_space();
    if (i != dims.size() || count == 0) return std::nullopt;
    return product;
}

kernel_profile profile_from_row(const ncu_row& row) {
    kernel_profile k;
    k.id = row.id;
    k.name = row.kernel_name;
    k.grid_size = row.grid_size;
    k.block_size = row.block_size;
    k.cc = row.cc;
    k.device_name = row.get_text("device__attribute_display_name");

    k.grid_blocks = row.get_number("launch__grid_size");
    if (!k.grid_blocks) k.grid_blocks = dims_product(row.grid_size);
    k.block_threads = row.get_number("launch__block_size");
    if (!k.block_threads) k.block_threads = dims_product(row.block_size);

    k.duration_ns = row.get_number("gpu__time_duration.sum");
    k.sm_throughput_pct = row.get_number("sm__throughput.avg.pct_of_peak_sustained_elapsed");
    k.memory_throughput_pct = row.get_number("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed");
    k.dram_throughput_pct = row.get_number("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed");

    k.dram_bytes_read = row.get_number("dram__bytes_read.sum");
    k.dram_bytes_write = row.get_number("dram__bytes_write.sum");
    k.dram_bytes_per_second = row.get_number("dram__bytes.sum.per_second");
    if (k.dram_bytes_read && k.dram_bytes_write) {
        k.dram_bytes = *k.dram_bytes_read + *k.dram_bytes_write;
    } else if (auto total = row.get_number("dram__bytes.sum")) {
        k.dram_bytes = total;
    } else if (k.dram_bytes_per_second && k.duration_ns) {
        k.dram_bytes = *k.dram_bytes_per_second * *k.duration_ns * 1e-9;
        k.dram_bytes_derived = true;
    }

    k.achieved_occupancy_pct = row.get_number("sm__warps_active.avg.pct_of_peak_sustained_active");
    k.theoretical_occupancy_pct = row.get_number("sm__maximum_warps_per_active_cycle_pct");
    k.occupancy_limit_blocks.registers = row.get_number("launch__occupancy_limit_registers");
    k.occupancy_limit_blocks.shared_mem = row.get_number("launch__occupancy_limit_shared_mem");
    k.occupancy_limit_blocks.warps = row.get_number("launch__occupancy_limit_warps");
    k.occupancy_limit_blocks.blocks = row.get_number("launch__occupancy_limit_blocks");
    k.occupancy_limit_blocks.barriers = row.get_number("launch__occupancy_limit_barriers");
    k.registers_per_thread = row.get_number("launch__registers_per_thread");
    k.shared_mem_per_block_bytes = row.get_number("launch__shared_mem_per_block");
    k.shared_mem_per_block_static_bytes = row.get_number("launch__shared_mem_per_block_static");
    k.shared_mem_per_block_dynamic_bytes = row.get_number("launch__shared_mem_per_block_dynamic");
    k.local_spilling_requests = row.get_number("derived__local_spilling_requests");
    k.spilling_instructions = row.get_number("sass__inst_executed_register_spilling");
    k.waves_per_sm = row.get_number("launch__waves_per_multiprocessor");
    k.sm_count = first_of(row, {"launch__sm_count", "device__attribute_multiprocessor_count"});

    k.l1_hit_rate_pct = row.get_number("l1tex__t_sector_hit_rate.pct");
    k.l2_hit_rate_pct = row.get_number("lts__t_sector_hit_rate.pct");
    k.tensor_pipe_pct = row.get_number("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed");
    // gpc__ and sm__ cycles run on the same clock; a targeted capture often has only the gpc one.
    k.sm_clock_hz = first_of(row, {"sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second"});

    double total = 0;
    for (const auto& [name, m] : row.metrics) {
        if (m.number) ++k.metrics_with_value;
        if (name.size() <= stall_metric_prefix.size() + stall_metric_suffix.size()) continue;
        if (name.compare(0, stall_metric_prefix.size(), stall_metric_prefix) != 0) continue;
        if (name.compare(name.size() - stall_metric_suffix.size(), stall_metric_suffix.size(), stall_metric_suffix) != 0)
            continue;
        if (!m.number) continue;
        const std::string reason =
            name.substr(stall_metric_prefix.size(), name.size() - stall_metric_prefix.size() - stall_metric_suffix.size());
        k.stalls.push_back({reason, *m.number, 0.0});
        total += *m.number;
    }
    k.metric_columns = row.metrics.size();
    for (auto& s : k.stalls) s.share = total > 0 ? s.per_issue / total : 0.0;
    std::sort(k.stalls.begin(), k.stalls.end(), [](const stall_reason& a, const stall_reason& b) {
        return a.per_issue != b.per_issue ? a.per_issue > b.per_issue : a.reason < b.reason;
    });
    return k;
}

std::vector<kernel_profile> profiles_from_table(const ncu_raw_table& table) {
    std::vector<kernel_profile> out;
    out.reserve(table.rows.size());
    for (const auto& row : table.rows) out.push_back(profile_from_row(row));
    return out;
}

nlohmann::json to_json(const kernel_profile& k) {
    nlohmann::json stalls = nlohmann::json::array();
    for (const auto& s : k.stalls) stalls.push_back({{"reason", s.reason}, {"per_issue", s.per_issue}, {"share", s.share}});
    const auto& lim = k.occupancy_limit_blocks;
    const std::string limiter = lim.get_limiter();
    return {
        {"id", k.id},
        {"name", k.name},
        {"device", k.device_name},
        {"cc", k.cc},
        {"grid_size", k.grid_size},
        {"block_size", k.block_size},
        {"grid_blocks", opt(k.grid_blocks)},
        {"block_threads", opt(k.block_threads)},
        {"duration_ns", opt(k.duration_ns)},
        {"sm_throughput_pct", opt(k.sm_throughput_pct)},
        {"memory_throughput_pct", opt(k.memory_throughput_pct)},
        {"dram_throughput_pct", opt(k.dram_throughput_pct)},
        {"dram_bytes_read", opt(k.dram_bytes_read)},
        {"dram_bytes_write", opt(k.dram_bytes_write)},
        {"dram_bytes", opt(k.dram_bytes)},
        {"dram_bytes_derived", k.dram_bytes_derived},
        {"dram_bytes_per_second", opt(k.dram_bytes_per_second)},
        {"achieved_occupancy_pct", opt(k.achieved_occupancy_pct)},
        {"theoretical_occupancy_pct", opt(k.theoretical_occupancy_pct)},
        {"occupancy_limit_blocks",
         {{"registers", opt(lim.registers)},
          {"shared_mem", opt(lim.shared_mem)},
          {"warps", opt(lim.warps)},
          {"blocks", opt(lim.blocks)},
          {"barriers", opt(lim.barriers)},
          {"limiter", limiter.empty() ? nlohmann::json(nullptr) : nlohmann::json(limiter)}}},
        {"registers_per_thread", opt(k.registers_per_thread)},
        {"shared_mem_per_block_bytes", opt(k.shared_mem_per_block_bytes)},
        {"shared_mem_per_block_static_bytes", opt(k.shared_mem_per_block_static_bytes)},
        {"shared_mem_per_block_dynamic_bytes", opt(k.shared_mem_per_block_dynamic_bytes)},
        {"local_spilling_requests", opt(k.local_spilling_requests)},
        {"spilling_instructions", opt(k.spilling_instructions)},
        {"waves_per_sm", opt(k.waves_per_sm)},
        {"sm_count", opt(k.sm_count)},
        {"l1_hit_rate_pct", opt(k.l1_hit_rate_pct)},
        {"l2_hit_rate_pct", opt(k.l2_hit_rate_pct)},
        {"tensor_pipe_pct", opt(k.tensor_pipe_pct)},
        {"sm_clock_hz", opt(k.sm_clock_hz)},
        {"stalls", stalls},
        {"metric_columns", k.metric_columns},
        {"metrics_with_value", k.metrics_with_value},
    };
}

}  // namespace kloop::profile
