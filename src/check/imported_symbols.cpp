// kloop check: ELF64 dynamic symbol table reader and import classifier.
#include "check/imported_symbols.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <tuple>

#include "core/error.hpp"
#include "platform/file_io.hpp"

namespace kloop::check {

namespace {

// Bounds-checked views into the image: every read goes through these.
class elf_image {
public:
    elf_image(std::string_view bytes, std::string_view what) : m_bytes(bytes), m_what(what) {}

    [[noreturn]] void bad(const std::string& why) const {
        throw usage_error("cannot read the dynamic symbol table of '" + std::string(m_what) + "': " + why);
    }

    template <class T>
    T read(std::uint64_t offset) const {
        if (offset > m_bytes.size() || sizeof(T) > m_bytes.size() - offset) bad("truncated file (offset " + std::to_string(offset) + ")");
        T v;
        std::memcpy(&v, m_bytes.data() + offset, sizeof(T));
        return v;
    }

    // A NUL-terminated string at `offset` inside the string table [base, base + size).
    std::string string_at(std::uint64_t base, std::uint64_t size, std::uint64_t offset) const {
        if (base > m_bytes.size() || size > m_bytes.size() - base) bad("string table out of range");
        if (offset >= size) bad("string offset " + std::to_string(offset) + " outside its table");
        const char* p = m_bytes.data() + base + offset;
        const auto max = static_cast<std::size_t>(size - offset);
        const auto n = ::strnlen(p, max);
        if (n == max) bad("unterminated string in a string table");
        return std::string(p, n);
    }

    [[nodiscard]] std::size_t size() const { return m_bytes.size(); }

private:
    std::string_view m_bytes;
    std::string_view m_what;
};

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool contains(std::string_view s, std::string_view p) { return s.find(p) != std::string_view::npos; }

enum class match { exact, prefix, contains };

struct symbol_rule {
    match how;
    std::string_view pattern;
    import_category category;
};

// Ordered: the first matching rule wins. Exact names first where a prefix rule would misfire.
constexpr symbol_rule k_symbol_rules[] = {
    // Delegation to vendor libraries (GPU and CPU).
    {match::prefix, "cublas", import_category::vendor_library},  // also cublasLt*
    {match::prefix, "cudnn", import_category::vendor_library},
    {match::prefix, "cufft", import_category::vendor_library},
    {match::prefix, "cusparse", import_category::vendor_library},
    {match::prefix, "cusolver", import_category::vendor_library},
    {match::prefix, "nppi", import_category::vendor_library},
    {match::prefix, "npps", import_category::vendor_library},
    {match::prefix, "createInferBuilder", import_category::vendor_library},  // TensorRT
    {match::prefix, "createInferRuntime", import_category::vendor_library},
    {match::prefix, "cblas_", import_category::vendor_library},
    {match::prefix, "LAPACKE_", import_category::vendor_library},
    {match::prefix, "mkl_", import_category::vendor_library},
    {match::prefix, "MKL_", import_category::vendor_library},
    {match::prefix, "openblas_", import_category::vendor_library},
    {match::prefix, "dnnl_", import_category::vendor_library},
    {match::exact, "sgemm_", import_category::vendor_library},
    {match::exact, "dgemm_", import_category::vendor_library},
    {match::exact, "hgemm_", import_category::vendor_library},
    {match::exact, "sgemv_", import_category::vendor_library},
    {match::exact, "dgemv_", import_category::vendor_library},
    // Reading time: CUDA events, OS clocks, std::chrono.
    {match::prefix, "cudaEvent", import_category::timer},
    {match::prefix, "cuEvent", import_category::timer},
    {match::exact, "clock_gettime", import_category::timer},
    {match::exact, "__clock_gettime", import_category::timer},
    {match::exact, "clock_gettime64", import_category::timer},
    {match::exact, "__clock_gettime64", import_category::timer},
    {match::exact, "gettimeofday", import_category::timer},
    {match::exact, "__gettimeofday", import_category::timer},
    {match::exact, "clock", import_category::timer},
    {match::exact, "time", import_category::timer},
    {match::exact, "times", import_category::timer},
    {match::exact, "ftime", import_category::timer},
    {match::exact, "timespec_get", import_category::timer},
    {match::exact, "getrusage", import_category::timer},
    {match::exact, "omp_get_wtime", import_category::timer},
    // (std::chrono::<clock>::now() is matched in classify_symbol: _ZNSt6chrono...3nowEv)
    // Talking to the profiler / management layers the census and the clock records rely on.
    {match::prefix, "cupti", import_category::profiler_interface},
    {match::prefix, "nvml", import_category::profiler_interface},
    // Fetching functions at run time.
    {match::exact, "dlopen", import_category::dynamic_loading},
    {match::exact, "dlmopen", import_category::dynamic_loading},
    {match::exact, "dlsym", import_category::dynamic_loading},
    {match::exact, "dlvsym", import_category::dynamic_loading},
    {match::exact, "__libc_dlopen_mode", import_category::dynamic_loading},
    {match::exact, "__libc_dlsym", import_category::dynamic_loading},
    {match::exact, "__libc_dlvsym", import_category::dynamic_loading},
    {match::exact, "_dl_sym", import_category::dynamic_loading},
    {match::exact, "_dl_vsym", import_category::dynamic_loading},
    {match::exact, "_r_debug", import_category::dynamic_loading},
    {match::prefix, "cuGetProcAddress", import_category::dynamic_loading},
    {match::prefix, "cudaGetDriverEntryPoint", import_category::dynamic_loading},
    {match::exact, "dl_iterate_phdr", import_category::loader_walk},
    {match::exact, "_dl_find_object", import_category::loader_walk},
    // Other processes.
    {match::exact, "fork", import_category::process_creation},
    {match::exact, "vfork", import_category::process_creation},
    {match::exact, "_Fork", import_category::process_creation},
    {match::exact, "__fork", import_category::process_creation},
    {match::exact, "clone", import_category::process_creation},
    {match::exact, "__clone", import_category::process_creation},
    {match::exact, "clone3", import_category::process_creation},
    {match::exact, "system", import_category::process_creation},
    {match::exact, "popen", import_category::process_creation},
    {match::prefix, "posix_spawn", import_category::process_creation},  // posix_spawn, posix_spawnp (not _file_actions)
    {match::exact, "execl", import_category::process_creation},
    {match::exact, "execle", import_category::process_creation},
    {match::exact, "execlp", import_category::process_creation},
    {match::exact, "execv", import_category::process_creation},
    {match::exact, "execve", import_category::process_creation},
    {match::exact, "execvp", import_category::process_creation},
    {match::exact, "execvpe", import_category::process_creation},
    {match::exact, "execveat", import_category::process_creation},
    {match::exact, "fexecve", import_category::process_creation},
    {match::exact, "syscall", import_category::raw_syscall},
    {match::exact, "mprotect", import_category::code_patching},
    {match::exact, "pkey_mprotect", import_category::code_patching},
    {match::exact, "ptrace", import_category::code_patching},
    {match::exact, "process_vm_writev", import_category::code_patching},
    // Threads (warn).
    {match::exact, "pthread_create", import_category::thread_creation},
    {match::exact, "thrd_create", import_category::thread_creation},
    {match::prefix, "_ZNSt6thread15_M_start_thread", import_category::thread_creation},  // std::thread, jthread, async
    {match::prefix, "GOMP_parallel", import_category::thread_creation},
    {match::prefix, "GOMP_teams", import_category::thread_creation},
    {match::exact, "__kmpc_fork_call", import_category::thread_creation},
    {match::exact, "__kmpc_fork_teams", import_category::thread_creation},
    // Streams and host callbacks (warn).
    {match::prefix, "cudaStreamCreate", import_category::stream_creation},
    {match::prefix, "cuStreamCreate", import_category::stream_creation},
    {match::exact, "cudaLaunchHostFunc", import_category::host_callback},
    {match::exact, "cudaStreamAddCallback", import_category::host_callback},
    {match::exact, "cuLaunchHostFunc", import_category::host_callback},
    {match::exact, "cuStreamAddCallback", import_category::host_callback},
};

struct library_rule {
    std::string_view prefix;  // of the soname
    import_category category;
};

constexpr library_rule k_library_rules[] = {
    {"libcublas", import_category::vendor_library},  // libcublas.so.13, libcublasLt.so.13
    {"libcudnn", import_category::vendor_library},   // libcudnn.so.9, libcudnn_*.so.9
    {"libcufft", import_category::vendor_library},
    {"libcusparse", import_category::vendor_library},
    {"libcusolver", import_category::vendor_library},
    {"libnvblas", import_category::vendor_library},
    {"libnpp", import_category::vendor_library},
    {"libnvinfer", import_category::vendor_library},
    {"libtorch", import_category::vendor_library},
    {"libc10", import_category::vendor_library},
    {"libmkl", import_category::vendor_library},
    {"libopenblas", import_category::vendor_library},
    {"libblas.", import_category::vendor_library},
    {"libcblas.", import_category::vendor_library},
    {"liblapack", import_category::vendor_library},
    {"libdnnl", import_category::vendor_library},
    {"libcupti", import_category::profiler_interface},
    {"libnvidia-ml", import_category::profiler_interface},
    {"libgomp", import_category::thread_creation},
    {"libiomp", import_category::thread_creation},
    {"libomp", import_category::thread_creation},
};

// The symbol part of a versioned name ("dlopen@GLIBC_2.34" → "dlopen"); .dynsym names carry no
// version, but recorded lists (nm -D output) may.
std::string_view unversioned(std::string_view name) {
    const auto at = name.find('@');
    return at == std::string_view::npos ? name : name.substr(0, at);
}

}  // namespace

std::vector<std::string> dynamic_symbol_table::get_imports() const {
    std::set<std::string> s;
    for (const auto& sym : symbols)
        if (!sym.defined) s.insert(sym.name);
    return {s.begin(), s.end()};
}

bool dynamic_symbol_table::has_section(std::string_view name) const {
    return std::find(section_names.begin(), section_names.end(), name) != section_names.end();
}

bool dynamic_symbol_table::has_device_code() const {
    return has_section(".nv_fatbin") || has_section("__nv_relfatbin") || has_section(".nvFatBinSegment");
}

dynamic_symbol_table parse_dynamic_symbols(std::string_view bytes, std::string_view what) {
    const elf_image img(bytes, what);
    if (img.size() < sizeof(Elf64_Ehdr)) img.bad("not an ELF file (too short)");
    const auto eh = img.read<Elf64_Ehdr>(0);
    if (std::memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0) img.bad("not an ELF file");
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) img.bad("not a 64-bit ELF file");
    if (eh.e_ident[EI_DATA] != ELFDATA2LSB) img.bad("not a little-endian ELF file");
    if (eh.e_type != ET_DYN) img.bad("not a shared object (ELF type " + std::to_string(eh.e_type) + ")");
    if (eh.e_shoff == 0) img.bad("no section headers");
    if (eh.e_shentsize != sizeof(Elf64_Shdr)) img.bad("unexpected section header size");

    // Extended numbering: e_shnum == 0 and e_shstrndx == SHN_XINDEX keep the real values in
    // section 0.
    const auto sh0 = img.read<Elf64_Shdr>(eh.e_shoff);
    const std::uint64_t shnum = eh.e_shnum != 0 ? eh.e_shnum : sh0.sh_size;
    const std::uint64_t shstrndx = eh.e_shstrndx != SHN_XINDEX ? eh.e_shstrndx : sh0.sh_link;
    if (shnum == 0 || shnum > 1u << 20) img.bad("implausible section count " + std::to_string(shnum));
    std::vector<Elf64_Shdr> sh(shnum);
    for (std::uint64_t i = 0; i < shnum; ++i) sh[i] = img.read<Elf64_Shdr>(eh.e_shoff + i * sizeof(Elf64_Shdr));

    dynamic_symbol_table t;
    if (shstrndx != SHN_UNDEF && shstrndx < shnum) {
        const auto& names = sh[shstrndx];
        for (const auto& s : sh) t.section_names.push_back(img.string_at(names.sh_offset, names.sh_size, s.sh_name));
    }

    auto linked_strtab = [&](const Elf64_Shdr& s) -> const Elf64_Shdr& {
        if (s.sh_link >= shnum || sh[s.sh_link].sh_type != SHT_STRTAB) img.bad("section links to no string table");
        return sh[s.sh_link];
    };

    bool found_dynsym = false;
    for (const auto& s : sh) {
        if (s.sh_type == SHT_DYNSYM) {
            found_dynsym = true;
            if (s.sh_entsize != sizeof(Elf64_Sym)) img.bad("unexpected .dynsym entry size");
            const auto& str = linked_strtab(s);
            const std::uint64_t n = s.sh_size / sizeof(Elf64_Sym);
            for (std::uint64_t i = 1; i < n; ++i) {  // entry 0 is the null symbol
                const auto sym = img.read<Elf64_Sym>(s.sh_offset + i * sizeof(Elf64_Sym));
                if (sym.st_name == 0) continue;
                dynamic_symbol d;
                d.name = img.string_at(str.sh_offset, str.sh_size, sym.st_name);
                d.defined = sym.st_shndx != SHN_UNDEF;
                d.weak = ELF64_ST_BIND(sym.st_info) == STB_WEAK;
                t.symbols.push_back(std::move(d));
            }
        } else if (s.sh_type == SHT_DYNAMIC) {
            const auto& str = linked_strtab(s);
            const std::uint64_t n = s.sh_size / sizeof(Elf64_Dyn);
            for (std::uint64_t i = 0; i < n; ++i) {
                const auto dyn = img.read<Elf64_Dyn>(s.sh_offset + i * sizeof(Elf64_Dyn));
                if (dyn.d_tag == DT_NULL) break;
                if (dyn.d_tag == DT_NEEDED) t.needed.push_back(img.string_at(str.sh_offset, str.sh_size, dyn.d_un.d_val));
            }
        }
    }
    if (!found_dynsym) img.bad("no .dynsym section");
    return t;
}

dynamic_symbol_table read_dynamic_symbols(const std::filesystem::path& so) {
    const auto bytes = platform::read_file(so);
    return parse_dynamic_symbols(bytes, so.string());
}

std::string to_string(import_category c) {
    switch (c) {
        case import_category::vendor_library: return "vendor_library";
        case import_category::timer: return "timer";
        case import_category::profiler_interface: return "profiler_interface";
        case import_category::dynamic_loading: return "dynamic_loading";
        case import_category::process_creation: return "process_creation";
        case import_category::raw_syscall: return "raw_syscall";
        case import_category::code_patching: return "code_patching";
        case import_category::static_cuda_runtime: return "static_cuda_runtime";
        case import_category::thread_creation: return "thread_creation";
        case import_category::stream_creation: return "stream_creation";
        case import_category::host_callback: return "host_callback";
        case import_category::loader_walk: return "loader_walk";
    }
    return "unknown";
}

bool from_string(std::string_view s, import_category& out) {
    for (int i = 0; i <= static_cast<int>(import_category::loader_walk); ++i) {
        const auto c = static_cast<import_category>(i);
        if (to_string(c) == s) {
            out = c;
            return true;
        }
    }
    return false;
}

std::string to_string(finding_severity s) { return s == finding_severity::fail ? "fail" : "warn"; }

finding_severity severity_of(import_category c) {
    switch (c) {
        case import_category::thread_creation:
        case import_category::stream_creation:
        case import_category::host_callback:
        case import_category::loader_walk: return finding_severity::warn;
        default: return finding_severity::fail;
    }
}

bool classify_symbol(std::string_view raw, import_category& out) {
    const auto name = unversioned(raw);
    // std::chrono::{steady,system,high_resolution}_clock::now() in any ABI namespace:
    // _ZNSt6chrono3_V212steady_clock3nowEv, _ZNSt6chrono12system_clock3nowEv, ...
    if (starts_with(name, "_ZNSt6chrono") && name.size() >= 6 && name.substr(name.size() - 6) == "3nowEv") {
        out = import_category::timer;
        return true;
    }
    for (const auto& r : k_symbol_rules) {
        const bool hit = r.how == match::exact    ? name == r.pattern
                         : r.how == match::prefix ? starts_with(name, r.pattern)
                                                  : contains(name, r.pattern);
        if (!hit) continue;
        // posix_spawn_file_actions_* and posix_spawnattr_* only prepare a spawn.
        if (r.pattern == "posix_spawn" && name != "posix_spawn" && name != "posix_spawnp") continue;
        out = r.category;
        return true;
    }
    return false;
}

bool classify_library(std::string_view soname, import_category& out) {
    for (const auto& r : k_library_rules)
        if (starts_with(soname, r.prefix)) {
            out = r.category;
            return true;
        }
    return false;
}

std::vector<import_finding> classify_imports(const dynamic_symbol_table& t) {
    std::vector<import_finding> f;
    std::set<std::pair<std::string, std::string>> seen;  // (relation, subject)
    auto add = [&](import_category c, const std::string& subject, const char* relation) {
        if (!seen.emplace(relation, subject).second) return;
        f.push_back({c, severity_of(c), subject, relation});
    };
    for (const auto& s : t.symbols) {
        import_category c{};
        if (!classify_symbol(s.name, c)) continue;
        if (!s.defined) {
            add(c, s.name, "imports");
        } else if (c == import_category::timer || c == import_category::profiler_interface) {
            // Defining clock_gettime or cuptiActivity* in a candidate is an interposition attempt.
            add(c, s.name, "exports");
        }
    }
    for (const auto& lib : t.needed) {
        import_category c{};
        if (classify_library(lib, c)) add(c, lib, "needs");
    }
    const bool shared_cudart = std::any_of(t.needed.begin(), t.needed.end(),
                                           [](const std::string& n) { return starts_with(n, "libcudart.so"); });
    if (t.has_device_code() && !shared_cudart)
        add(import_category::static_cuda_runtime, "libcudart_static", "links");
    std::stable_sort(f.begin(), f.end(), [](const import_finding& a, const import_finding& b) {
        return std::tuple(a.severity != finding_severity::fail, static_cast<int>(a.category), a.subject) <
               std::tuple(b.severity != finding_severity::fail, static_cast<int>(b.category), b.subject);
    });
    return f;
}

std::string describe_findings(const std::vector<import_finding>& f, const dynamic_symbol_table& t) {
    if (f.empty())
        return std::to_string(t.get_imports().size()) + " imported symbols, " + std::to_string(t.needed.size()) +
               " needed libraries: none suspicious";
    std::string out;
    for (const auto sev : {finding_severity::fail, finding_severity::warn}) {
        std::string part;
        int shown = 0, total = 0;
        for (const auto& x : f) {
            if (x.severity != sev) continue;
            ++total;
            if (shown == 8) continue;  // keep the line readable; the JSON has them all
            ++shown;
            if (!part.empty()) part += ", ";
            if (x.category == import_category::static_cuda_runtime)
                part += "links the CUDA runtime statically, so its own imports hide the candidate's "
                        "(static_cuda_runtime; build with -cudart shared)";
            else
                part += x.relation + " " + x.subject + " (" + to_string(x.category) + ")";
        }
        if (total > shown) part += " and " + std::to_string(total - shown) + " more";
        if (part.empty()) continue;
        if (!out.empty()) out += "; ";
        out += to_string(sev) + ": " + part;
    }
    return out;
}

}  // namespace kloop::check
