// Every CUDA version the examples ship (examples/*/versions/*.cu) builds with kloop's own build
// path, as `kloop verify` builds it for the H200 — the op's backend (a CUDA op, or a Python op's
// native candidate), its [build] flags and arch suffix, compute capability 9.0, its local headers
// — on a machine without a GPU. A version an edit broke fails here, in CI, and not on
// the GPU machine. Each build prints what ptxas reports per kernel (registers, shared memory,
// spills) and its compile time: the facts work on the GPU starts from. Skipped without nvcc.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <iostream>
#include <ostream>
#include <string>
#include <vector>

#include "backend/backend.hpp"
#include "backend/cuda/cuda_backend.hpp"
#include "backend/cuda/ptxas_report.hpp"
#include "eval/evaluator.hpp"
#include "platform/file_io.hpp"
#include "platform/subprocess.hpp"
#include "spec/spec_loader.hpp"
#include "support/nvcc_installed.hpp"

namespace fs = std::filesystem;

namespace {

struct example_version {
    fs::path op_toml;
    fs::path source;
};

// What ctest shows as the case's parameter: the version's path in the repository.
void PrintTo(const example_version& v, std::ostream* os) {
    *os << v.source.lexically_relative(KLOOP_TEST_SOURCE_DIR).string();
}

std::vector<example_version> shipped_cuda_versions() {
    std::vector<example_version> out;
    const fs::path examples = fs::path(KLOOP_TEST_SOURCE_DIR) / "examples";
    for (const auto& op : fs::directory_iterator(examples)) {
        if (!fs::is_regular_file(op.path() / "op.toml") || !fs::is_directory(op.path() / "versions")) continue;
        for (const auto& v : fs::directory_iterator(op.path() / "versions"))
            if (v.path().extension() == ".cu") out.push_back({op.path() / "op.toml", v.path()});
    }
    std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.source < b.source; });
    return out;
}

std::string test_name(const ::testing::TestParamInfo<example_version>& info) {
    std::string s = info.param.source.parent_path().parent_path().filename().string() + "_" + info.param.source.stem().string();
    for (char& c : s)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    return s;
}

class ExampleCudaBuildTest : public ::testing::TestWithParam<example_version> {};

}  // namespace

TEST_P(ExampleCudaBuildTest, BuildsForTheH200) {
    if (!kloop::testing::nvcc_installed()) GTEST_SKIP() << "nvcc not installed";
    const auto& p = GetParam();
    const auto spec = kloop::spec::load_op_spec(p.op_toml);
    const auto sources = kloop::eval::candidate_sources(spec, p.source);
    kloop::platform::scoped_temp_dir cache("kloop-example-build");
    kloop::platform::posix_command_runner runner;
    // A Python op's native candidate is compiled by the CUDA backend (python_backend.cpp, build_native)
    // and then registered with the op's interpreter (torch and a GPU's: not here); the compile is all
    // that is checked of it.
    const auto& backend = spec.backend == kloop::spec::backend_kind::python ? kloop::backend::cuda::cuda_backend()
                                                                             : kloop::backend::backend_for(spec);
    const auto rec = backend.build(
        {spec, p.source, kloop::backend::source_role::candidate, &sources, cache.path(), 900, runner});
    ASSERT_TRUE(rec.ok) << p.source << ":\n" << rec.diagnostics;
    EXPECT_FALSE(rec.cache_hit);
    EXPECT_EQ(rec.target, "sm_90" + spec.build.arch_suffix);
    const auto report = kloop::backend::cuda::ptxas_report::from_json(rec.ptxas);
    EXPECT_FALSE(report.kernels.empty()) << "ptxas reported no kernel for " << p.source;
    std::cout << p.source.lexically_relative(KLOOP_TEST_SOURCE_DIR).string() << ": built for " << rec.target << " in "
              << rec.compile_wall_s << " s\n";
    for (const auto& k : report.kernels) std::cout << "  " << kloop::backend::cuda::summarize_kernel(k) << "\n";
}

INSTANTIATE_TEST_SUITE_P(Shipped, ExampleCudaBuildTest, ::testing::ValuesIn(shipped_cuda_versions()), test_name);
