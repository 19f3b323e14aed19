// kloop backend/cuda: parsing ptxas -v output (see ptxas_report.hpp).
#include "backend/cuda/ptxas_report.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <regex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace kloop::backend::cuda {

using json = nlohmann::json;

namespace {

std::int64_t to_i64(const std::string& s) { return std::strtoll(s.c_str(), nullptr, 10); }

bool search(const std::string& line, const std::regex& re, std::smatch& m) { return std::regex_search(line, m, re); }

}  // namespace

std::string demangle(const std::string& symbol) {
    int status = 0;
    std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
    return status == 0 && out ? std::string(out.get()) : symbol;
}

ptxas_report parse_ptxas_output(std::string_view text) {
    static const std::regex re_entry(R"(Compiling entry function '([^']+)' for '([A-Za-z0-9_]+)')");
    static const std::regex re_props(R"(Function properties for ([^\s]+))");
    static const std::regex re_frame(R"((\d+) bytes stack frame)");
    static const std::regex re_spill_st(R"((\d+) bytes spill stores)");
    static const std::regex re_spill_ld(R"((\d+) bytes spill loads)");
    static const std::regex re_used(R"(Used (\d+) registers)");
    static const std::regex re_barriers(R"(used (\d+) barriers)");
    static const std::regex re_smem(R"((\d+) bytes smem)");
    static const std::regex re_cumstack(R"((\d+) bytes cumulative stack size)");
    static const std::regex re_cmem(R"((\d+) bytes cmem\[(\d+)\])");
    static const std::regex re_gmem(R"(ptxas info\s*:\s*(\d+) bytes gmem)");

    ptxas_report r;
    int current_kernel = -1;          // index into r.kernels of the last "Compiling entry function"
    std::string props_for;            // name of the last "Function properties for"
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t end = text.find('\n', pos);
        if (end == std::string_view::npos) end = text.size();
        std::string line(text.substr(pos, end - pos));
        pos = end + 1;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        std::smatch m;
        if (search(line, re_entry, m)) {
            ptxas_kernel k;
            k.name = m[1];
            k.demangled = demangle(k.name);
            k.target = m[2];
            r.kernels.push_back(std::move(k));
            current_kernel = static_cast<int>(r.kernels.size()) - 1;
            props_for.clear();
            continue;
        }
        if (search(line, re_props, m)) {
            props_for = m[1];
            continue;
        }
        if (search(line, re_frame, m)) {
            std::int64_t frame = to_i64(m[1]);
            std::int64_t st = 0, ld = 0;
            if (search(line, re_spill_st, m)) st = to_i64(m[1]);
            if (search(line, re_spill_ld, m)) ld = to_i64(m[1]);
            if (current_kernel >= 0 && r.kernels[static_cast<std::size_t>(current_kernel)].name == props_for) {
                auto& k = r.kernels[static_cast<std::size_t>(current_kernel)];
                k.stack_frame_bytes = frame;
                k.spill_store_bytes = st;
                k.spill_load_bytes = ld;
            } else if (!props_for.empty()) {
                r.device_functions.push_back({props_for, demangle(props_for), frame, st, ld});
            }
            continue;
        }
        if (search(line, re_used, m)) {
            if (current_kernel < 0) continue;
            auto& k = r.kernels[static_cast<std::size_t>(current_kernel)];
            k.registers = static_cast<int>(to_i64(m[1]));
            if (search(line, re_barriers, m)) k.barriers = static_cast<int>(to_i64(m[1]));
            if (search(line, re_smem, m)) k.smem_bytes = to_i64(m[1]);
            if (search(line, re_cumstack, m)) k.cumulative_stack_bytes = to_i64(m[1]);
            for (auto it = std::sregex_iterator(line.begin(), line.end(), re_cmem); it != std::sregex_iterator(); ++it)
                k.cmem_bytes[static_cast<int>(to_i64((*it)[2]))] += to_i64((*it)[1]);
            continue;
        }
        if (search(line, re_gmem, m)) {
            r.gmem_bytes += to_i64(m[1]);
            continue;
        }
        if (line.find("ptxas warning") != std::string::npos || line.find("Potential Performance Loss") != std::string::npos)
            r.notes.push_back(line);
    }
    return r;
}

bool ptxas_report::has_spills() const {
    for (const auto& k : kernels)
        if (k.spill_store_bytes > 0 || k.spill_load_bytes > 0) return true;
    for (const auto& f : device_functions)
        if (f.spill_store_bytes > 0 || f.spill_load_bytes > 0) return true;
    return false;
}

const ptxas_kernel* ptxas_report::find(std::string_view name) const {
    for (const auto& k : kernels)
        if (k.name == name || k.demangled == name) return &k;
    return nullptr;
}

json ptxas_report::to_json() const {
    json ks = json::array();
    for (const auto& k : kernels) {
        json cmem = json::object();
        for (const auto& [bank, bytes] : k.cmem_bytes) cmem[std::to_string(bank)] = bytes;
        ks.push_back({{"name", k.name},
                      {"demangled", k.demangled},
                      {"target", k.target},
                      {"registers", k.registers},
                      {"barriers", k.barriers},
                      {"smem_bytes", k.smem_bytes},
                      {"stack_frame_bytes", k.stack_frame_bytes},
                      {"spill_store_bytes", k.spill_store_bytes},
                      {"spill_load_bytes", k.spill_load_bytes},
                      {"cumulative_stack_bytes", k.cumulative_stack_bytes},
                      {"cmem_bytes", cmem}});
    }
    json fs = json::array();
    for (const auto& f : device_functions)
        fs.push_back({{"name", f.name},
                      {"demangled", f.demangled},
                      {"stack_frame_bytes", f.stack_frame_bytes},
                      {"spill_store_bytes", f.spill_store_bytes},
                      {"spill_load_bytes", f.spill_load_bytes}});
    return json{{"kernels", ks}, {"device_functions", fs}, {"gmem_bytes", gmem_bytes}, {"notes", notes}};
}

ptxas_report ptxas_report::from_json(const json& j) {
    ptxas_report r;
    for (const auto& k : j.at("kernels")) {
        ptxas_kernel x;
        x.name = k.at("name").get<std::string>();
        x.demangled = k.value("demangled", x.name);
        x.target = k.value("target", "");
        x.registers = k.value("registers", -1);
        x.barriers = k.value("barriers", -1);
        x.smem_bytes = k.value("smem_bytes", std::int64_t{0});
        x.stack_frame_bytes = k.value("stack_frame_bytes", std::int64_t{0});
        x.spill_store_bytes = k.value("spill_store_bytes", std::int64_t{0});
        x.spill_load_bytes = k.value("spill_load_bytes", std::int64_t{0});
        x.cumulative_stack_bytes = k.value("cumulative_stack_bytes", std::int64_t{0});
        const json cmem = k.value("cmem_bytes", json::object());  // a named copy: items() must not dangle
        for (const auto& [bank, bytes] : cmem.items()) x.cmem_bytes[std::stoi(bank)] = bytes.get<std::int64_t>();
        r.kernels.push_back(std::move(x));
    }
    for (const auto& f : j.value("device_functions", json::array()))
        r.device_functions.push_back({f.at("name").get<std::string>(), f.value("demangled", ""),
                                      f.value("stack_frame_bytes", std::int64_t{0}),
                                      f.value("spill_store_bytes", std::int64_t{0}),
                                      f.value("spill_load_bytes", std::int64_t{0})});
    r.gmem_bytes = j.value("gmem_bytes", std::int64_t{0});
    r.notes = j.value("notes", std::vector<std::string>{});
    return r;
}

std::string summarize_kernel(const ptxas_kernel& k) {
    std::string s = fmt::format("{} [{}]: {} regs, {} B smem", k.demangled, k.target, k.registers, k.smem_bytes);
    if (k.stack_frame_bytes > 0) s += fmt::format(", {} B stack", k.stack_frame_bytes);
    if (k.spill_store_bytes > 0 || k.spill_load_bytes > 0)
        s += fmt::format(", {}/{} B spill st/ld", k.spill_store_bytes, k.spill_load_bytes);
    return s;
}

}  // namespace kloop::backend::cuda
