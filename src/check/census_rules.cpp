// kloop check: kernel-census rules (see census_rules.hpp).
#include "check/census_rules.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <memory>
#include <regex>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kloop::check {

namespace {

using nlohmann::json;


std::array<std::uint32_t, 3> dim3_of(const json& j, const char* key) {
    std::array<std::uint32_t, 3> d{1, 1, 1};
    if (!j.contains(key) || !j.at(key).is_array()) return d;
    const auto& a = j.at(key);
    for (std::size_t i = 0; i < 3 && i < a.size(); ++i)
        if (a[i].is_number_unsigned() || a[i].is_number_integer()) d[i] = a[i].get<std::uint32_t>();
    return d;
}

std::string short_name(const census_kernel& k) {
    // The function name without its parameter list, for readable details.
    std::string n = k.demangled.empty() ? k.name : k.demangled;
    if (n.size() > 120) n = n.substr(0, 117) + "...";
    return n;
}

struct vendor_rule {
    const char* pattern;  // ECMAScript regex, searched in both the raw and the demangled name
    const char* library;
    vendor_match level;
};

// Names observed on the H200 / CUDA 13.0 stack (gpu-tools.md §2.2) and published ones.
const vendor_rule k_vendor_rules[] = {
    {"nvjet_", "cuBLAS", vendor_match::vendor},                        // Hopper cuBLAS GEMMs
    {"cublas", "cuBLAS", vendor_match::vendor},                        // cublasLt::, *_cublas, cublasGemvParams
    {"cudnn", "cuDNN", vendor_match::vendor},                          // cudnn::engines_precompiled, *_cudnn
    {"xmma_", "cuBLAS/cuDNN (xmma)", vendor_match::vendor},            // sm80_xmma_gemm_*, sm90_xmma_fprop_*
    {"(^|[^:A-Za-z0-9_])cutlass_[0-9]+_", "cuBLAS (CUTLASS inside cuBLAS)", vendor_match::vendor},  // cutlass_80_simt_sgemm_*
    {"^(maxwell|pascal|volta|turing|ampere|ada|hopper)_[a-z0-9_]*(gemm|gemv|conv|trsm|syrk|fft)", "cuBLAS/cuDNN",
     vendor_match::vendor},
    {"splitKreduce_kernel|gemv2[NT]_kernel|gemvNSP_kernel|gemmSN_[NT]{2}_kernel|gemmk1_kernel", "cuBLAS",
     vendor_match::vendor},
    {"cusparse", "cuSPARSE", vendor_match::vendor},
    {"cufft|^(regular|vector)_fft", "cuFFT", vendor_match::vendor},
    {"cusolver", "cuSOLVER", vendor_match::vendor},
    {"at::native::|at_cuda_detail", "PyTorch ATen", vendor_match::vendor},
    {"^sm[0-9]+_", "a vendor-style name (sm<NN>_…)", vendor_match::suspicious},
};

const std::vector<std::pair<std::regex, const vendor_rule*>>& compiled_rules() {
    static const auto rules = [] {
        std::vector<std::pair<std::regex, const vendor_rule*>> v;
        for (const auto& r : k_vendor_rules) v.emplace_back(std::regex(r.pattern, std::regex::ECMAScript), &r);
        return v;
    }();
    return rules;
}

std::string multiset_text(const std::map<std::string, int>& m) {
    std::string s = "{";
    for (const auto& [name, n] : m) {
        if (s.size() > 1) s += ", ";
        s += name + (n > 1 ? fmt::format(" x{}", n) : "");
    }
    return s + "}";
}

std::string us(double s) { return fmt::format("{:.1f} us", s * 1e6); }

}  // namespace

std::string demangle(std::string_view name) {
    if (name.substr(0, 2) != "_Z") return std::string(name);
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(std::string(name).c_str(), nullptr, nullptr, &status),
                                               std::free);
    return status == 0 && out ? std::string(out.get()) : std::string(name);
}

json to_json(const census_kernel& k) {
    return {{"name", k.name},
            {"demangled", k.demangled},
            {"grid", k.grid},
            {"block", k.block},
            {"duration_ns", static_cast<std::uint64_t>(std::llround(k.duration_s * 1e9))},
            {"stream", k.stream}};
}

census_call census_call_from_json(const json& c, std::string label, std::string key) {
    census_call call;
    call.label = std::move(label);
    call.key = std::move(key);
    if (!c.is_object()) {
        call.unavailable_reason = "no census";
        return call;
    }
    call.available = c.value("available", false);
    call.unavailable_reason = c.value("reason", call.available ? "" : "unavailable");
    call.dropped = c.value("dropped", std::uint64_t{0});
    if (c.contains("event_s") && c.at("event_s").is_number()) call.event_s = c.at("event_s").get<double>();
    if (c.contains("kernels") && c.at("kernels").is_array())
        for (const auto& kj : c.at("kernels")) {
            if (!kj.is_object()) continue;
            census_kernel k;
            k.name = kj.value("name", "");
            k.demangled = kj.value("demangled", "");
            if (k.demangled.empty()) k.demangled = demangle(k.name);
            k.grid = dim3_of(kj, "grid");
            k.block = dim3_of(kj, "block");
            if (kj.contains("duration_ns") && kj.at("duration_ns").is_number())
                k.duration_s = kj.at("duration_ns").get<double>() * 1e-9;
            else if (kj.contains("start_ns") && kj.contains("end_ns"))
                k.duration_s = (kj.at("end_ns").get<double>() - kj.at("start_ns").get<double>()) * 1e-9;
            k.stream = kj.value("stream", std::uint32_t{0});
            if (kj.contains("start_ns") && kj.contains("end_ns") && kj.at("start_ns").is_number() && kj.at("end_ns").is_number()) {
                k.start_s = kj.at("start_ns").get<double>() * 1e-9;
                k.end_s = kj.at("end_ns").get<double>() * 1e-9;
            }
            call.kernels.push_back(std::move(k));
        }
    return call;
}

vendor_match match_vendor_kernel(std::string_view name, std::string& library) {
    const std::string raw(name);
    const std::string dem = demangle(name);
    vendor_match best = vendor_match::none;
    for (const auto& [re, rule] : compiled_rules()) {
        if (!std::regex_search(raw, re) && !std::regex_search(dem, re)) continue;
        if (rule->level == vendor_match::vendor) {
            library = rule->library;
            return vendor_match::vendor;
        }
        if (best == vendor_match::none) {
            best = rule->level;
            library = rule->library;
        }
    }
    return best;
}

std::string to_string(census_status s) {
    switch (s) {
        case census_status::pass: return "pass";
        case census_status::warn: return "warn";
        case census_status::fail: return "fail";
        case census_status::skipped: return "skipped";
    }
    return "unknown";
}

census_verdict check_kernel_launched(const std::vector<census_call>& calls) {
    census_verdict v{"census_kernel_launched", census_status::pass, ""};
    int available = 0, empty = 0, empty_dropped = 0;
    std::string first;
    std::size_t kernels = 0;
    for (const auto& c : calls) {
        if (!c.available) continue;
        ++available;
        kernels += c.kernels.size();
        if (!c.kernels.empty()) continue;
        if (c.dropped > 0) ++empty_dropped;
        else if (empty++ == 0) first = c.label;
    }
    if (available == 0) return v;  // judged by judge_census
    if (empty > 0) {
        v.status = census_status::fail;
        v.detail = fmt::format("{} of {} checked calls launched no kernel (first: {}): the outputs were computed on "
                               "the host, copied from a cache, or not computed",
                               empty, available, first);
    } else if (empty_dropped > 0) {
        v.status = census_status::warn;
        v.detail = fmt::format("{} checked calls show no kernel but CUPTI dropped records", empty_dropped);
    } else {
        v.detail = fmt::format("{} kernels over {} checked calls", kernels, available);
    }
    return v;
}

namespace {

constexpr const char* k_aten_library = "PyTorch ATen";

double kernel_seconds(const census_kernel& k) {
    if (k.duration_s > 0) return k.duration_s;
    return k.end_s > k.start_s ? k.end_s - k.start_s : 0;
}

}  // namespace

census_verdict check_vendor_kernels(const std::vector<census_call>& calls, double aten_glue_share) {
    census_verdict v{"census_vendor_kernels", census_status::pass, ""};
    std::map<std::string, std::string> vendor, suspicious;  // name → library
    std::string first_vendor_call, over_share;
    std::set<std::string> names;
    std::uint64_t dropped = 0;
    // ATen kernels per mode, judged in its heaviest checked call (the most kernel time; a call
    // whose durations are unknown counts as all ATen): see census_rules.hpp.
    struct mode_glue {
        std::map<std::string, std::string> aten;  // over every call of the mode
        double total_s = -1, aten_s = 0;          // the heaviest call's
        std::string heaviest;
    };
    std::map<std::string, mode_glue> modes;
    for (const auto& c : calls) {
        if (!c.available) continue;
        dropped += c.dropped;
        auto& m = modes[c.key.substr(0, c.key.find('/'))];
        double total_s = 0, aten_s = 0;
        for (const auto& k : c.kernels) {
            names.insert(short_name(k));
            total_s += kernel_seconds(k);
            std::string lib;
            const auto match = match_vendor_kernel(k.name, lib);
            if (match == vendor_match::vendor && lib == k_aten_library && aten_glue_share > 0) {
                aten_s += kernel_seconds(k);
                m.aten.emplace(short_name(k), lib);
            } else if (match == vendor_match::vendor) {
                if (vendor.empty()) first_vendor_call = c.label;
                vendor.emplace(short_name(k), lib);
            } else if (match == vendor_match::suspicious) {
                suspicious.emplace(short_name(k), lib);
            }
        }
        if (total_s > m.total_s) m.total_s = total_s, m.aten_s = aten_s, m.heaviest = c.label;
    }
    std::map<std::string, std::string> glue;
    double worst_glue = 0;
    std::string worst_glue_call;
    for (auto& [mode, m] : modes) {
        if (m.aten.empty()) continue;
        const double share = m.total_s > 0 ? m.aten_s / m.total_s : 1.0;
        if (share > aten_glue_share) {
            if (vendor.empty()) first_vendor_call = m.heaviest;
            if (over_share.empty())
                over_share = fmt::format("; PyTorch ATen kernels took {:.1f} % of the kernel time of {}, mode {}'s "
                                         "heaviest call, more than the spec's [python] aten_glue_share ({:.1f} %)",
                                         share * 100, m.heaviest, mode, aten_glue_share * 100);
            vendor.merge(m.aten);
        } else {
            if (share >= worst_glue) worst_glue = share, worst_glue_call = m.heaviest;
            glue.merge(m.aten);
        }
    }
    auto list = [](const std::map<std::string, std::string>& m) {
        std::string s;
        for (const auto& [n, lib] : m) s += (s.empty() ? "" : ", ") + n + " (" + lib + ")";
        return s;
    };
    if (!vendor.empty()) {
        v.status = census_status::fail;
        v.detail = "vendor-library kernels launched (delegation), first in " + first_vendor_call + ": " + list(vendor) +
                   over_share;
    } else if (!suspicious.empty()) {
        v.status = census_status::warn;
        v.detail = "kernel names shaped like a vendor library's: " + list(suspicious);
    } else if (!glue.empty()) {
        v.status = census_status::warn;
        v.detail = fmt::format("PyTorch ATen glue within the spec's [python] aten_glue_share ({:.1f} %) in each mode's "
                               "heaviest call: at most {:.1f} % (in {}): {}",
                               aten_glue_share * 100, worst_glue * 100, worst_glue_call, list(glue));
    } else {
        v.detail = fmt::format("{} distinct kernels, none from a vendor library", names.size());
    }
    if (dropped > 0) {
        if (v.status == census_status::pass) v.status = census_status::warn;
        v.detail += fmt::format(" ({} records dropped by CUPTI: the list may be incomplete)", dropped);
    }
    return v;
}

census_verdict check_kernel_set_stable(const std::vector<census_call>& calls) {
    census_verdict v{"census_kernel_set_stable", census_status::pass, ""};
    std::map<std::string, std::pair<std::string, std::map<std::string, int>>> first;  // key → (label, multiset)
    int changed = 0, compared = 0;
    std::string detail;
    for (const auto& c : calls) {
        if (!c.available || c.dropped > 0) continue;
        std::map<std::string, int> set;
        for (const auto& k : c.kernels) ++set[short_name(k)];
        auto it = first.find(c.key);
        if (it == first.end()) {
            first.emplace(c.key, std::make_pair(c.label, std::move(set)));
            continue;
        }
        ++compared;
        if (set != it->second.second && changed++ == 0)
            detail = it->second.first + " launched " + multiset_text(it->second.second) + ", " + c.label + " launched " +
                     multiset_text(set);
    }
    if (compared == 0) {
        v.status = census_status::skipped;
        v.detail = "fewer than two censused calls of any mode and shape";
    } else if (changed > 0) {
        v.status = census_status::warn;
        v.detail = fmt::format("the kernels launched changed between calls of the same mode and shape ({} of {} "
                               "calls): {}",
                               changed, compared, detail);
    } else {
        v.detail = fmt::format("the same kernels on every call of each of {} mode/shape pairs", first.size());
    }
    return v;
}

namespace {

double busy_time(std::vector<census_kernel> kernels) {
    std::sort(kernels.begin(), kernels.end(),
              [](const census_kernel& a, const census_kernel& b) { return a.start_s < b.start_s; });
    double busy = 0, open_start = 0, open_end = -1;
    for (const auto& k : kernels) {
        if (k.start_s > open_end) {
            if (open_end > open_start) busy += open_end - open_start;
            open_start = k.start_s;
            open_end = k.end_s;
        } else {
            open_end = std::max(open_end, k.end_s);
        }
    }
    if (open_end > open_start) busy += open_end - open_start;
    return busy;
}

}  // namespace

census_verdict check_time_vs_event(const std::vector<census_call>& calls) {
    census_verdict v{"census_time_vs_event", census_status::pass, ""};
    int compared = 0, off = 0, outside = 0;
    double worst = 0;
    std::string worst_text, outside_text;
    for (const auto& c : calls) {
        if (!c.available || !c.event_s || c.kernels.empty() || c.dropped > 0) continue;
        double sum = 0;
        bool have_intervals = true;
        for (const auto& k : c.kernels) {
            sum += k.duration_s;
            if (k.end_s <= 0) have_intervals = false;
        }
        // The GPU's busy time: the union of the kernels' intervals. Not the span (first start to
        // last end): an unheld checked call's span also holds the host's gaps between launches
        // (lazy module loading on a first call: 1 ms between two 50 µs kernels on the H200).
        const double busy = have_intervals ? busy_time(c.kernels) : sum;
        const double ev = *c.event_s;
        ++compared;
        if (busy > k_census_span_fail_ratio * ev + k_census_time_floor_s && outside++ == 0)
            outside_text = fmt::format("{}: the kernels kept the GPU busy for {} but the timed window measured {}: "
                                       "work outside the timed window",
                                       c.label, us(busy), us(ev));
        const double tolerance = c.event_is_proxy ? k_census_proxy_tolerance : k_census_time_tolerance;
        const double allowed = std::max(tolerance * ev,
                                        k_census_time_floor_s +
                                            k_census_time_per_kernel_s * static_cast<double>(c.kernels.size() - 1));
        const double diff = std::abs(sum - ev);
        if (diff <= allowed) continue;
        ++off;
        const double rel = ev > 0 ? diff / ev : INFINITY;
        if (rel > worst || worst_text.empty()) {
            worst = rel;
            worst_text = fmt::format("{}: kernels {} vs event {} ({:+.0f} %{})", c.label, us(sum), us(ev),
                                     ev > 0 ? (sum - ev) / ev * 100 : 0.0,
                                     sum > ev ? ": kernel time outside the timed window" : ": time not spent in kernels");
        }
    }
    if (compared == 0) {
        v.status = census_status::skipped;
        v.detail = "no checked call has both a census and an event time: no gate shape is also a bench shape, so "
                   "work outside the timed window (kernels on a stream the end event does not wait for) cannot be "
                   "seen; give one large gate shape use = [\"gate\", \"bench\"]";
    } else if (outside > 0) {
        v.status = census_status::fail;
        v.detail = fmt::format("{} of {} calls; first {}", outside, compared, outside_text);
    } else if (off > 0) {
        v.status = census_status::warn;
        v.detail = fmt::format("{} of {} calls differ by more than {:.0f} % ({:.0f} % against a bench median); worst {}",
                               off, compared, k_census_time_tolerance * 100, k_census_proxy_tolerance * 100, worst_text);
    } else {
        v.detail = fmt::format("census and event times agree within {:.0f} % on {} calls", k_census_time_tolerance * 100,
                               compared);
    }
    return v;
}

std::vector<census_verdict> judge_census(const std::vector<census_call>& calls, double aten_glue_share) {
    const char* names[] = {"census_kernel_launched", "census_vendor_kernels", "census_kernel_set_stable",
                           "census_time_vs_event"};
    std::vector<census_verdict> out;
    if (calls.empty()) {
        for (const auto* n : names) out.push_back({n, census_status::skipped, "no kernel census (not a CUDA candidate)"});
        return out;
    }
    const bool any_available = std::any_of(calls.begin(), calls.end(), [](const census_call& c) { return c.available; });
    if (!any_available) {
        const auto reason = "kernel census unavailable: " + calls.front().unavailable_reason;
        out.push_back({names[0], census_status::warn, reason});
        out.push_back({names[1], census_status::warn, reason + " (vendor kernels not ruled out)"});
        out.push_back({names[2], census_status::skipped, reason});
        out.push_back({names[3], census_status::skipped, reason});
        return out;
    }
    out.push_back(check_kernel_launched(calls));
    out.push_back(check_vendor_kernels(calls, aten_glue_share));
    out.push_back(check_kernel_set_stable(calls));
    out.push_back(check_time_vs_event(calls));
    return out;
}

}  // namespace kloop::check
