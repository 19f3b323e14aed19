// kloop check: what a candidate's shared object imports, and which of those imports betray a
// cheat (integrity check `imported_symbols`).
//
// Responsibility: read the dynamic symbol table of an ELF64 shared object ourselves (<elf.h>,
// no nm/readelf subprocess, no libelf) — the undefined (imported) symbols, the symbols it
// exports, the DT_NEEDED libraries and its section names — and classify them into named
// findings, each `fail` or `warn`:
//
//   fail  vendor_library      cuBLAS/cuBLASLt/cuDNN/cuFFT/cuSPARSE/cuSOLVER/NPP/TensorRT, CPU BLAS
//                             (cblas_, MKL, OpenBLAS, oneDNN): delegation of the op
//   fail  timer               cudaEvent*/cuEvent*, clock_gettime, gettimeofday, std::chrono::*::now,
//                             …: the candidate reading (or faking) time
//   fail  profiler_interface  cupti*, nvml*: it could blind or feed the kernel census / clocks
//   fail  dynamic_loading     dlopen/dlsym and friends, cuGetProcAddress, cudaGetDriverEntryPoint:
//                             imports fetched at run time escape this very check
//   fail  process_creation    fork, exec*, posix_spawn, system, popen, clone
//   fail  raw_syscall         syscall(): any of the above without naming it
//   fail  code_patching       mprotect, ptrace, process_vm_writev: rewriting the runner
//   fail  static_cuda_runtime device code but no libcudart.so needed: the CUDA runtime was linked
//                             statically, its own imports (dlopen, pthread_create, clock_gettime…)
//                             hide the candidate's, so the check cannot vouch for it
//   warn  thread_creation     pthread_create, std::thread, OpenMP: work may outlive the call
//   warn  stream_creation     cudaStreamCreate*, cuStreamCreate*: work off args->stream (the
//                             device-wide sync still counts it; the census shows where it ran)
//   warn  host_callback       cudaLaunchHostFunc, cudaStreamAddCallback: host code run by the stream
//   warn  loader_walk         dl_iterate_phdr, _dl_find_object: legitimate in a statically linked
//                             unwinder, also a way to find functions without importing them
//
// An *exported* (defined) symbol with a timer or profiler name is a fail too (an attempt to
// interpose on the runner's clock). Weak imports count like strong ones.
//
// This is a screen, not a proof: inline `syscall`/`rdtsc` instructions, device-side
// %globaltimer reads and pointer arithmetic into the runner are invisible to it; the kernel
// census, the timed-output checks and the process boundary cover those.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace kloop::check {

struct dynamic_symbol {
    std::string name;
    bool defined = false;   // st_shndx != SHN_UNDEF: exported (or at least present) in this object
    bool weak = false;      // STB_WEAK binding
};

struct dynamic_symbol_table {
    std::vector<dynamic_symbol> symbols;     // .dynsym in file order, the null entry dropped
    std::vector<std::string> needed;         // DT_NEEDED, in order
    std::vector<std::string> section_names;  // every section header's name
    [[nodiscard]] std::vector<std::string> get_imports() const;  // undefined names, sorted, unique
    [[nodiscard]] bool has_section(std::string_view name) const;
    // Holds CUDA device code (.nv_fatbin or __nv_relfatbin): an nvcc-built object.
    [[nodiscard]] bool has_device_code() const;
};

// Parses an ELF64 little-endian image. Throws kloop::usage_error "cannot read the dynamic symbol
// table of '<what>': <why>" for anything that is not a well-formed ELF64 shared object with
// section headers (every offset is bounds-checked: a malformed file never reads out of range).
[[nodiscard]] dynamic_symbol_table parse_dynamic_symbols(std::string_view image, std::string_view what);
// Reads `so` and parses it (same errors; an unreadable file names the OS reason).
[[nodiscard]] dynamic_symbol_table read_dynamic_symbols(const std::filesystem::path& so);

enum class import_category {
    vendor_library,
    timer,
    profiler_interface,
    dynamic_loading,
    process_creation,
    raw_syscall,
    code_patching,
    static_cuda_runtime,
    thread_creation,
    stream_creation,
    host_callback,
    loader_walk,
};
[[nodiscard]] std::string to_string(import_category c);
[[nodiscard]] bool from_string(std::string_view s, import_category& out);

enum class finding_severity { warn, fail };
[[nodiscard]] std::string to_string(finding_severity s);

struct import_finding {
    import_category category = import_category::vendor_library;
    finding_severity severity = finding_severity::fail;
    std::string subject;   // the symbol or library name
    std::string relation;  // "imports" | "exports" | "needs" | "links"
};

// The category of one symbol name, if any rule matches (used for imports and exports alike).
[[nodiscard]] bool classify_symbol(std::string_view name, import_category& out);
// The category of one DT_NEEDED entry ("libcublas.so.13" → vendor_library), if any.
[[nodiscard]] bool classify_library(std::string_view soname, import_category& out);
[[nodiscard]] finding_severity severity_of(import_category c);

// Every finding of `t`, fails first, then by category and subject.
[[nodiscard]] std::vector<import_finding> classify_imports(const dynamic_symbol_table& t);

// One line for the integrity check's detail: "fail: imports cublasSgemm_v2 (vendor_library),
// needs libcublas.so.13 (vendor_library); warn: imports pthread_create (thread_creation)", or
// "<n> imported symbols, <m> needed libraries: none suspicious".
[[nodiscard]] std::string describe_findings(const std::vector<import_finding>& f, const dynamic_symbol_table& t);

}  // namespace kloop::check
