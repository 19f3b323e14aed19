// kloop backend/cuda: compiles a CUDA C++ candidate (or reference) into a shared object with
// nvcc, cached; host-only code (it spawns nvcc, it includes no CUDA header).
//
// Responsibility: turn one .cu file plus the spec's flags and include directories into lib.so
// for kloop-runner-cuda, with the resource usage ptxas reports for every kernel, and never
// compile the same thing twice. The command (docs/cuda.md):
//
//   nvcc <spec flags> -std=c++17 -O3 -lineinfo -shared -Xcompiler -fPIC
//        -arch=sm_90                                  (compute capability 9.0, no suffix)
//        -gencode=arch=compute_90a,code=sm_90a        (arch_suffix "a": wgmma, setmaxnreg)
//        -Xptxas -v -I<abi> -I<include dirs> -I<source dir> -MD -MF <deps> -o <lib> <source>
//
// plus `-cudart shared -Xlinker -rpath -Xlinker <toolkit>/lib64`: the candidate imports the CUDA
// API from libcudart.so (its dynamic symbols then show what it calls; see the imported-symbol
// check), and finds it where it was built. It shares the device's primary context with the
// runner (which links cudart statically), so pointers, streams and sticky errors are common.
// -std, -O, -cudart and the target are added only when the spec's flags do not set them (a flag given by
// the spec wins, as torch.utils.cpp_extension does with arch flags). -lineinfo is always there:
// ncu needs it for source correlation.
//
// The cache is the CPU builder's (backend/build_cache.hpp) with its own salt; the key adds the
// target and nvcc's identity (path, size, mtime), the host compiler's identity (-ccbin or g++ on
// PATH) and NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS / NVCC_CCBIN / CPATH / CPLUS_INCLUDE_PATH.
// meta.json also holds the parsed ptxas report and the nvcc version line ("Cuda compilation
// tools, release 13.0, V13.0.88"); ptxas.txt keeps ptxas's raw output. A hit spawns nothing.
//
// nvcc: nvcc_request::compiler, else $KLOOP_NVCC, else nvcc on PATH, else $CUDA_HOME/bin/nvcc,
// else /usr/local/cuda/bin/nvcc (default_nvcc()).
#pragma once

#include <filesystem>
#include <string>
#include <vector>

#include "backend/build_cache.hpp"

namespace kloop::platform {
class command_runner_base;
}

namespace kloop::backend::cuda {

struct nvcc_request {
    std::filesystem::path source;
    std::vector<std::string> flags;                  // the spec's [build] flags, verbatim
    std::vector<std::filesystem::path> include_dirs; // e.g. CUTLASS's include and tools/util/include
    std::filesystem::path abi_include_dir;           // holds kloop/kernel.h; empty: platform::abi_include_dir()
    int compute_capability = 90;                     // major * 10 + minor of the device
    std::string arch_suffix;                         // "" | "a" (sm_90a) | "f" (family-specific)
    std::string compiler;                            // empty: default_nvcc()
    std::filesystem::path cache_dir;                 // empty: platform::cache_dir()
    double timeout_s = 600;
    // Where libcudart.so lives, baked in as the library's rpath; empty: the toolkit of the nvcc
    // that builds it (<toolkit>/lib64).
    std::filesystem::path cudart_dir;
};

// "sm_90", "sm_90a" for (90, "a"). Throws kloop::usage_error for a capability below 50 or a
// suffix other than "", "a", "f".
[[nodiscard]] std::string target_name(int compute_capability, const std::string& arch_suffix);

// The nvcc argv (argv[0] = `nvcc`) for a request whose paths are already absolute. Pure: the
// unit tests check it; nvcc_builder::build runs it.
[[nodiscard]] std::vector<std::string> nvcc_argv(const std::string& nvcc, const nvcc_request& r,
                                                 const std::filesystem::path& abi_dir,
                                                 const std::vector<std::filesystem::path>& include_dirs,
                                                 const std::filesystem::path& source,
                                                 const std::filesystem::path& depfile,
                                                 const std::filesystem::path& output);

// $KLOOP_NVCC, else "nvcc" when it is on PATH, else $CUDA_HOME/bin/nvcc or /usr/local/cuda/bin/nvcc
// when one exists, else "nvcc" (so the error names it).
[[nodiscard]] std::string default_nvcc();

// The "release" line of `nvcc --version` (the last line mentioning "release"), or its first line.
[[nodiscard]] std::string pick_nvcc_version_line(const std::string& version_output);

// True when this kloop was configured with KLOOP_ENABLE_CUDA (kloop-runner-cuda was built).
[[nodiscard]] bool cuda_support_built_in();

// <toolkit>/lib64 (or targets/x86_64-linux/lib) of an nvcc, where libcudart.so is; empty if none.
[[nodiscard]] std::filesystem::path toolkit_library_dir(const compiler_identity& nvcc);

// One builder per thread (it memoises nvcc versions); builders and kloop processes may share a
// cache directory. Errors as in cpu_builder: a compile error is data (ok == false), a missing
// nvcc or source or an unwritable cache is a usage_error, SIGINT is exit_code::interrupted.
class nvcc_builder {
public:
    explicit nvcc_builder(platform::command_runner_base& runner);
    build_record build(const nvcc_request& r);

private:
    platform::command_runner_base& m_runner;
    compiler_version_cache m_versions;
};

}  // namespace kloop::backend::cuda
