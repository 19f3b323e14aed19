// kloop profile: what limits one kernel (see diagnosis.hpp).
#include "profile/diagnosis.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "core/error.hpp"
#include "profile/kernel_profile.hpp"

namespace kloop::profile {

namespace t = thresholds;

namespace {

// ncu metric names, for the evidence.
constexpr const char* m_duration = "gpu__time_duration.sum";
constexpr const char* m_waves = "launch__waves_per_multiprocessor";
constexpr const char* m_sm = "sm__throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* m_mem = "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* m_dram = "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
constexpr const char* m_tensor = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed";
constexpr const char* m_achieved = "sm__warps_active.avg.pct_of_peak_sustained_active";
constexpr const char* m_theoretical = "sm__maximum_warps_per_active_cycle_pct";
constexpr const char* m_l1 = "l1tex__t_sector_hit_rate.pct";
constexpr const char* m_l2 = "lts__t_sector_hit_rate.pct";
constexpr const char* m_spill = "sass__inst_executed_register_spilling";
constexpr const char* m_local_spill = "derived__local_spilling_requests";

std::string pct(double v) { return fmt::format("{:.1f} %", v); }
std::string pct0(double v) { return fmt::format("{:.0f} %", v); }

// Collects directions: no anchor twice, at most four.
class direction_list {
public:
    void add(std::string technique, std::string anchor, std::string signal) {
        if (m_items.size() >= 4) return;
        for (const auto& d : m_items)
            if (d.kb_anchor == anchor) return;
        m_items.push_back({std::move(technique), std::move(anchor), std::move(signal)});
    }
    [[nodiscard]] std::size_t size() const { return m_items.size(); }
    [[nodiscard]] std::vector<direction> take() { return std::move(m_items); }

private:
    std::vector<direction> m_items;
};

std::string stall_text(const stall_reason& s) { return fmt::format("{} {:.0f} % of stall cycles", s.reason, s.share * 100); }

void add_evidence(diagnosis& d, const char* signal, const char* metric, const std::optional<double>& v,
                  const char* unit, std::string threshold, bool met) {
    if (!v) return;
    d.evidence.push_back({signal, metric, *v, unit, std::move(threshold), met});
}

// Directions for a latency-bound kernel (also used after others): by the top stall reason.
void latency_directions(const kernel_profile& k, direction_list& dirs) {
    const auto top = k.top_stalls(1);
    const std::string reason = top.empty() ? std::string() : top.front().reason;
    const std::string sig = top.empty() ? std::string("no stall breakdown (WarpStateStats not captured)") : stall_text(top.front());
    if (reason == "long_scoreboard") {
        dirs.add("Keep more bytes in flight per thread (unrolled, independent loads)", "lat-bytes-in-flight", sig);
        dirs.add("Asynchronous copies (cp.async / TMA) to overlap loads with math", "lat-async-copy", sig);
    } else if (reason == "barrier" || reason == "membar") {
        dirs.add("Fewer block-wide syncs (warp shuffles, split barriers)", "lat-fewer-syncs", sig);
    } else if (reason == "lg_throttle") {
        dirs.add("Wider (128-bit) loads: fewer load instructions for the same bytes", "mem-vector-loads", sig);
    } else if (reason == "short_scoreboard" || reason == "mio_throttle") {
        dirs.add("Instruction-level parallelism: independent work between dependent shared-memory ops", "lat-ilp", sig);
    } else if (!reason.empty()) {
        dirs.add("Instruction-level parallelism: more independent instructions per warp", "lat-ilp", sig);
    }
    dirs.add("Software pipelining: load tile i+1 while computing tile i", "lat-software-pipelining", sig);
    dirs.add("Instruction-level parallelism: more independent instructions per warp", "lat-ilp", sig);
}

void occupancy_directions(const kernel_profile& k, direction_list& dirs) {
    const auto& lim = k.occupancy_limit_blocks;
    const std::string limiter = lim.get_limiter();
    if (k.waves_per_sm && *k.waves_per_sm < t::min_waves) {
        const std::string sig = fmt::format("{:.2f} waves (grid {} blocks)", *k.waves_per_sm, k.grid_blocks.value_or(0));
        dirs.add("Fill the GPU: more, smaller blocks or more work items per launch", "occ-waves-tail", sig);
        dirs.add("Split the long dimension (split-K / split-row) or a persistent grid", "occ-split-k-persistent", sig);
    }
    const bool spills = (k.spilling_instructions && *k.spilling_instructions > 0) ||
                        (k.local_spilling_requests && *k.local_spilling_requests > 0);
    const bool theoretical_low = k.theoretical_occupancy_pct && *k.theoretical_occupancy_pct < 100;
    if (spills || (theoretical_low && limiter == "registers"))
        dirs.add("Cap registers (__launch_bounds__, -maxrregcount) or shrink per-thread state", "occ-registers",
                 fmt::format("registers/thread {:.0f}, limiter {}{}", k.registers_per_thread.value_or(0),
                             limiter.empty() ? "?" : limiter, spills ? ", spilling" : ""));
    if (theoretical_low && limiter == "shared_mem")
        dirs.add("Less shared memory per block (smaller tiles, fewer stages)", "occ-shared-memory",
                 fmt::format("shared memory/block {:.0f} B, limiter shared_mem", k.shared_mem_per_block_bytes.value_or(0)));
    if (theoretical_low && (limiter == "warps" || limiter == "blocks" || limiter == "barriers"))
        dirs.add("Change the block size (warps per block vs blocks per SM)", "occ-block-size",
                 fmt::format("block {:.0f} threads, limiter {}", k.block_threads.value_or(0), limiter));
    if (k.achieved_occupancy_pct && k.theoretical_occupancy_pct &&
        *k.achieved_occupancy_pct < t::achieved_to_theoretical_min * *k.theoretical_occupancy_pct)
        dirs.add("Even out the work: tail effect, imbalance between blocks", "occ-waves-tail",
                 fmt::format("achieved occupancy {} of {} theoretical", pct(*k.achieved_occupancy_pct),
                             pct(*k.theoretical_occupancy_pct)));
    dirs.add("Change the block size (warps per block vs blocks per SM)", "occ-block-size",
             fmt::format("block {:.0f} threads", k.block_threads.value_or(0)));
}

}  // namespace

std::string to_string(bound b) {
    switch (b) {
        case bound::memory: return "memory-bound";
        case bound::compute: return "compute-bound";
        case bound::latency: return "latency-bound";
        case bound::occupancy: return "occupancy-limited";
        case bound::launch: return "launch-bound";
        case bound::unknown: return "unknown";
    }
    return "unknown";
}

bound bound_from_string(std::string_view s) {
    for (bound b : {bound::memory, bound::compute, bound::latency, bound::occupancy, bound::launch, bound::unknown})
        if (s == to_string(b)) return b;
    throw usage_error(fmt::format("unknown bound '{}'", s));
}

std::string to_string(memory_level l) { return l == memory_level::dram ? "dram" : "l1-l2"; }

memory_level memory_level_from_string(std::string_view s) {
    if (s == "dram") return memory_level::dram;
    if (s == "l1-l2") return memory_level::cache;
    throw usage_error(fmt::format("unknown memory level '{}' (dram or l1-l2)", s));
}

std::string format_bytes_per_s(double v) {
    if (v >= 1e12) return fmt::format("{:.2f} TB/s", v / 1e12);
    if (v >= 100e9) return fmt::format("{:.0f} GB/s", v / 1e9);
    if (v >= 1e9) return fmt::format("{:.1f} GB/s", v / 1e9);
    return fmt::format("{:.1f} MB/s", v / 1e6);
}

std::string format_duration_ns(double ns) {
    if (ns >= 1e6) return fmt::format("{:.2f} ms", ns / 1e6);
    if (ns >= 1e3) return fmt::format("{:.1f} \xC2\xB5s", ns / 1e3);
    return fmt::format("{:.0f} ns", ns);
}

std::string format_bytes(double b) {
    if (b >= 1e9) return fmt::format("{:.2f} GB", b / 1e9);
    if (b >= 1e6) return fmt::format("{:.0f} MB", b / 1e6);
    if (b >= 1e3) return fmt::format("{:.0f} kB", b / 1e3);
    return fmt::format("{:.0f} B", b);
}

const std::vector<std::string>& knowledge_base_anchors() {
    static const std::vector<std::string> anchors{
        "mem-coalescing",        "mem-vector-loads",      "mem-fusion",           "mem-avoid-rereads",
        "mem-l2-persistence",    "mem-tma",               "compute-tensor-cores", "compute-wgmma-pipeline",
        "compute-mixed-precision", "compute-instruction-mix", "lat-ilp",          "lat-bytes-in-flight",
        "lat-async-copy",        "lat-software-pipelining", "lat-fewer-syncs",    "occ-registers",
        "occ-shared-memory",     "occ-block-size",        "occ-waves-tail",       "occ-split-k-persistent",
        "launch-fusion",         "launch-cuda-graphs",    "launch-persistent",    "launch-fewer-launches"};
    return anchors;
}

diagnosis diagnose(const kernel_profile& k, const diagnosis_context& ctx) {
    diagnosis d;
    const auto& dur = k.duration_ns;
    const auto& waves = k.waves_per_sm;
    const auto& sm = k.sm_throughput_pct;
    const auto& mem = k.memory_throughput_pct;
    const auto& dram = k.dram_throughput_pct;
    const auto& tensor = k.tensor_pipe_pct;
    const auto& ach = k.achieved_occupancy_pct;
    const auto& theo = k.theoretical_occupancy_pct;
    const auto top = k.top_stalls(1);

    // --- the decision ---------------------------------------------------------------------
    const bool short_kernel = dur && *dur < t::launch_max_duration_ns;
    const bool tiny_grid = dur && waves && *waves < t::launch_small_grid_waves && *dur < t::launch_small_grid_max_duration_ns;
    const bool sm_high = sm && *sm >= t::high_throughput_pct;
    const bool mem_high = mem && *mem >= t::high_throughput_pct;
    const bool tensor_saturated = tensor && *tensor >= t::tensor_saturated_pct;
    const bool occ_ratio_low = ach && theo && *ach < t::achieved_to_theoretical_min * *theo;
    const bool theo_low = theo && *theo < t::theoretical_occupancy_min_pct;
    const bool waves_low = waves && *waves < t::min_waves;
    const bool dram_is_busy = mem && dram && *dram >= t::dram_fraction_of_memory * *mem;

    if (short_kernel || tiny_grid) {
        d.kind = bound::launch;
    } else if (!sm || !mem) {
        d.kind = bound::unknown;
        d.notes.push_back(
            "SpeedOfLight metrics missing (sm__throughput / gpu__compute_memory_throughput): capture --section SpeedOfLight");
    } else if (sm_high && (*sm > *mem || tensor_saturated)) {
        d.kind = bound::compute;
    } else if (mem_high && *mem >= *sm) {
        d.kind = bound::memory;
        d.level = dram_is_busy || !dram ? memory_level::dram : memory_level::cache;
        if (!dram) d.notes.push_back("DRAM throughput missing: DRAM vs L1/L2 not told apart (assumed DRAM)");
    } else if (occ_ratio_low || theo_low || waves_low) {
        d.kind = bound::occupancy;
    } else {
        d.kind = bound::latency;
        if (!ach && !theo && !waves) d.notes.push_back("occupancy metrics missing: occupancy-limited not ruled out");
    }

    // --- evidence: every signal the procedure reads, with its rule ---------------------------
    const std::string us = "\xC2\xB5s";
    add_evidence(d, "duration", m_duration, dur, "ns",
                 fmt::format("< {:g} {} (launch-bound)", t::launch_max_duration_ns / 1e3, us), short_kernel);
    add_evidence(d, "waves per SM", m_waves, waves, "waves",
                 fmt::format("< {:g} (grid does not fill one wave); < {:g} and < {:g} {}: launch-bound", t::min_waves,
                             t::launch_small_grid_waves, t::launch_small_grid_max_duration_ns / 1e3, us),
                 waves_low);
    const std::string high = fmt::format("{:g} %", t::high_throughput_pct);
    add_evidence(d, "SM throughput", m_sm, sm, "%", fmt::format("> memory and >= {} (compute-bound)", high),
                 sm_high && mem && *sm > *mem);
    add_evidence(d, "memory throughput", m_mem, mem, "%", fmt::format(">= SM and >= {} (memory-bound)", high),
                 mem_high && sm && *mem >= *sm);
    add_evidence(d, "DRAM throughput", m_dram, dram, "%",
                 mem ? fmt::format(">= {:g} x memory = {:.1f} % (DRAM, else L1/L2)", t::dram_fraction_of_memory,
                                   t::dram_fraction_of_memory * *mem)
                     : fmt::format(">= {:g} x memory (DRAM, else L1/L2)", t::dram_fraction_of_memory),
                 dram_is_busy);
    add_evidence(d, "tensor pipe", m_tensor, tensor, "%",
                 fmt::format(">= {:g} % (tensor cores saturated)", t::tensor_saturated_pct), tensor_saturated);
    add_evidence(d, "achieved occupancy", m_achieved, ach, "%",
                 theo ? fmt::format("< {:g} x theoretical = {:.1f} % (occupancy-limited)", t::achieved_to_theoretical_min,
                                    t::achieved_to_theoretical_min * *theo)
                      : fmt::format("< {:g} x theoretical (occupancy-limited)", t::achieved_to_theoretical_min),
                 occ_ratio_low);
    add_evidence(d, "theoretical occupancy", m_theoretical, theo, "%",
                 fmt::format("< {:g} % (occupancy-limited)", t::theoretical_occupancy_min_pct), theo_low);
    add_evidence(d, "L1 hit rate", m_l1, k.l1_hit_rate_pct, "%",
                 fmt::format(">= {:g} % (lines fetched again and again)", t::high_l1_hit_pct),
                 k.l1_hit_rate_pct && *k.l1_hit_rate_pct >= t::high_l1_hit_pct);
    add_evidence(d, "L2 hit rate", m_l2, k.l2_hit_rate_pct, "%", fmt::format("< {:g} % (little on-chip reuse)", t::low_l2_hit_pct),
                 k.l2_hit_rate_pct && *k.l2_hit_rate_pct < t::low_l2_hit_pct);
    if (!top.empty())
        d.evidence.push_back({"top stall: " + top.front().reason,
                              std::string(stall_metric_prefix) + top.front().reason + std::string(stall_metric_suffix),
                              top.front().share * 100, "% of stall cycles", "largest share (what warps wait on)", true});
    const auto spills = k.spilling_instructions ? k.spilling_instructions : k.local_spilling_requests;
    add_evidence(d, "register spilling", k.spilling_instructions ? m_spill : m_local_spill, spills, "inst",
                 "> 0 (spills to local memory)", spills && *spills > 0);
    if (ctx.reread_factor)
        d.evidence.push_back({"re-read factor", "dram bytes / spec bytes", *ctx.reread_factor, "x",
                              fmt::format("> {:g} (data read more than once)", t::reread_factor_max),
                              *ctx.reread_factor > t::reread_factor_max});

    // --- headline and directions -----------------------------------------------------------
    direction_list dirs;
    const std::string waves_txt = waves ? fmt::format("{:.2f} waves", *waves) : std::string("waves n/a");
    switch (d.kind) {
        case bound::launch: {
            d.headline = fmt::format("launch-bound: {} per launch, {}; launch overhead (~3.5 \xC2\xB5s) is a large share",
                                     format_duration_ns(*dur), waves_txt);
            const std::string sig = fmt::format("duration {}", format_duration_ns(*dur));
            dirs.add("Fuse with the neighbouring kernels (one launch, fewer round trips through DRAM)", "launch-fusion", sig);
            dirs.add("Capture the launch sequence in a CUDA graph", "launch-cuda-graphs", sig);
            if (waves && *waves < t::launch_small_grid_waves)
                dirs.add("One persistent kernel that loops over the work", "launch-persistent", waves_txt);
            dirs.add("Batch tiny launches into one (more work per launch)", "launch-fewer-launches", sig);
            break;
        }
        case bound::compute: {
            std::string h = fmt::format("compute-bound: SM {} of peak", pct(*sm));
            if (tensor) h += fmt::format(", tensor pipe {}", pct(*tensor));
            if (mem_high) h += fmt::format("; memory {} too (balanced: both must drop)", pct(*mem));
            else h += fmt::format("; memory {}", pct(*mem));
            if (!top.empty()) h += fmt::format("; top stall {}", stall_text(top.front()));
            d.headline = h;
            const std::string tsig = tensor ? fmt::format("tensor pipe {}", pct(*tensor)) : std::string("tensor pipe not captured");
            if (!tensor || *tensor < t::tensor_in_use_pct) {
                dirs.add("Move the math onto tensor cores (wgmma / mma.sync, CUTLASS/CuTe or Triton tl.dot)",
                         "compute-tensor-cores", fmt::format("SM {} with {}", pct(*sm), tsig));
                dirs.add("Lower precision where the tolerance allows (bf16/fp8 inputs, fp32 accumulate)",
                         "compute-mixed-precision", fmt::format("SM {}", pct(*sm)));
                dirs.add("Trim the instruction mix (fewer conversions, index math, predication)", "compute-instruction-mix",
                         fmt::format("SM {}", pct(*sm)));
            } else {
                dirs.add("Deeper wgmma pipeline: TMA multi-stage loads, warp specialisation", "compute-wgmma-pipeline", tsig);
                dirs.add("Trim the non-MMA instructions around the main loop (epilogue, address math)",
                         "compute-instruction-mix", fmt::format("SM {} vs {}", pct(*sm), tsig));
                dirs.add("Lower precision where the tolerance allows (fp8 wgmma doubles the rate)", "compute-mixed-precision", tsig);
            }
            break;
        }
        case bound::memory: {
            if (d.level == memory_level::dram) {
                std::string h = fmt::format("memory-bound (DRAM): DRAM {} of peak", pct(dram.value_or(*mem)));
                if (k.dram_bytes_per_second) h += ", " + format_bytes_per_s(*k.dram_bytes_per_second);
                if (k.l2_hit_rate_pct) h += fmt::format("; L2 hit {}", pct0(*k.l2_hit_rate_pct));
                if (ctx.reread_factor) h += fmt::format("; re-read {:.2f}x", *ctx.reread_factor);
                d.headline = h;
                const std::string sig = fmt::format("DRAM {} of peak", pct(dram.value_or(*mem)));
                if (ctx.reread_factor && *ctx.reread_factor > t::reread_factor_max) {
                    const std::string rsig = fmt::format("re-read factor {:.2f}", *ctx.reread_factor);
                    dirs.add("Read each byte once: keep the row/tile on chip (registers, shared memory)", "mem-avoid-rereads", rsig);
                    if (k.l2_hit_rate_pct && *k.l2_hit_rate_pct < t::low_l2_hit_pct)
                        dirs.add("Keep the re-read data in L2 (access-policy window, persisting L2)", "mem-l2-persistence",
                                 fmt::format("{}, L2 hit {}", rsig, pct0(*k.l2_hit_rate_pct)));
                }
                dirs.add("Fuse to cut bytes: every byte not moved is time saved at the DRAM roof", "mem-fusion", sig);
                if (!dram || *dram < t::dram_near_peak_pct) {
                    dirs.add("128-bit vector loads/stores and more loads in flight", "mem-vector-loads", sig + ", not yet at the roof");
                    if (k.cc.rfind("9.", 0) == 0 || k.cc.rfind("10.", 0) == 0)
                        dirs.add("Bulk copies with TMA (sm_90): fewer instructions per byte", "mem-tma", sig);
                }
                dirs.add("Read each byte once: check the re-read factor (DRAM bytes / spec bytes)", "mem-avoid-rereads", sig);
            } else {
                std::string h = fmt::format("memory-bound (L1/L2, not DRAM): memory {} of peak but DRAM only {}", pct(*mem),
                                            pct(*dram));
                if (k.dram_bytes_per_second) h += fmt::format(" ({})", format_bytes_per_s(*k.dram_bytes_per_second));
                if (k.l1_hit_rate_pct) h += fmt::format("; L1 hit {}", pct0(*k.l1_hit_rate_pct));
                if (k.l2_hit_rate_pct) h += fmt::format(", L2 hit {}", pct0(*k.l2_hit_rate_pct));
                if (waves) h += "; " + waves_txt;
                if (!top.empty()) h += fmt::format("; top stall {}", stall_text(top.front()));
                d.headline = h;
                const std::string sig = fmt::format("memory {} of peak but DRAM {}", pct(*mem), pct(*dram));
                dirs.add("Coalesce: a warp's 32 threads read consecutive addresses", "mem-coalescing", sig);
                if (k.l1_hit_rate_pct && *k.l1_hit_rate_pct >= t::high_l1_hit_pct)
                    dirs.add("Read each byte once: keep the row in registers or shared memory", "mem-avoid-rereads",
                             fmt::format("L1 hit {} with {}", pct0(*k.l1_hit_rate_pct), sig));
                if (waves_low)
                    dirs.add("Fill the GPU: more, smaller blocks or more work items per launch", "occ-waves-tail",
                             fmt::format("{} (grid {:.0f} blocks)", waves_txt, k.grid_blocks.value_or(0)));
                dirs.add("128-bit vector loads/stores (fewer, wider requests)", "mem-vector-loads", sig);
                if (!top.empty() && top.front().reason == "long_scoreboard")
                    dirs.add("Keep more bytes in flight per thread", "lat-bytes-in-flight", stall_text(top.front()));
            }
            break;
        }
        case bound::occupancy: {
            std::string h = "occupancy-limited:";
            if (ach && theo) h += fmt::format(" achieved occupancy {} of {} theoretical", pct(*ach), pct(*theo));
            else if (theo) h += fmt::format(" theoretical occupancy {}", pct(*theo));
            if (waves) h += fmt::format("{} {}", (ach || theo) ? "," : "", waves_txt);
            const std::string limiter = k.occupancy_limit_blocks.get_limiter();
            if (theo_low && !limiter.empty()) h += fmt::format(" (limiter: {})", limiter);
            h += fmt::format("; SM {}, memory {} of peak", pct(*sm), pct(*mem));
            d.headline = h;
            occupancy_directions(k, dirs);
            if (dirs.size() < 2) latency_directions(k, dirs);
            break;
        }
        case bound::latency: {
            std::string h = fmt::format("latency-bound: SM {}, memory {} of peak", pct(*sm), pct(*mem));
            if (ach && theo) h += fmt::format("; occupancy {} of {} (fine)", pct(*ach), pct(*theo));
            if (!top.empty()) h += fmt::format("; top stall {}", stall_text(top.front()));
            d.headline = h;
            latency_directions(k, dirs);
            break;
        }
        case bound::unknown: {
            d.headline = "unknown: the capture lacks the SpeedOfLight throughputs";
            if (dur) d.headline += fmt::format(" ({})", format_duration_ns(*dur));
            break;
        }
    }
    d.directions = dirs.take();
    return d;
}

nlohmann::json to_json(const diagnosis& d) {
    nlohmann::json ev = nlohmann::json::array();
    for (const auto& e : d.evidence)
        ev.push_back({{"signal", e.signal}, {"metric", e.metric}, {"value", e.value}, {"unit", e.unit},
                      {"threshold", e.threshold}, {"met", e.met}});
    nlohmann::json dirs = nlohmann::json::array();
    for (const auto& x : d.directions)
        dirs.push_back({{"technique", x.technique},
                        {"kb", fmt::format("{}#{}", knowledge_base_path, x.kb_anchor)},
                        {"kb_anchor", x.kb_anchor},
                        {"signal", x.signal}});
    return {{"bound", to_string(d.kind)},
            {"memory_level", d.level ? nlohmann::json(to_string(*d.level)) : nlohmann::json(nullptr)},
            {"headline", d.headline},
            {"evidence", ev},
            {"directions", dirs},
            {"notes", d.notes}};
}

}  // namespace kloop::profile
