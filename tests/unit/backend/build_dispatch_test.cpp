// Unit under test: backend/build_dispatch — which builder, device and runner binary a source
// gets for each backend, and the clear refusal of cuda specs by a kloop built without CUDA.
#include <gtest/gtest.h>

#include "backend/build_dispatch.hpp"
#include "backend/cuda/nvcc_builder.hpp"
#include "core/error.hpp"

namespace kb = kloop::backend;
using kloop::spec::backend_kind;

TEST(BuildDispatchTest, CudaBackendBuildsCuWithNvccOnTheGpu) {
    const auto c = kb::plan_source(backend_kind::cuda, "/op/versions/v1.cu", kb::source_role::candidate);
    EXPECT_EQ(c.builder, kb::builder_kind::nvcc);
    EXPECT_EQ(c.device, "cuda");
    const auto r = kb::plan_source(backend_kind::cuda, "/op/reference.cu", kb::source_role::reference);
    EXPECT_EQ(r.builder, kb::builder_kind::nvcc);
    EXPECT_EQ(r.device, "cuda");
    EXPECT_EQ(kb::runner_tool_for(c.device, r.device), "kloop-runner-cuda");
    EXPECT_EQ(kb::to_string(c.builder), "nvcc");
}

TEST(BuildDispatchTest, CudaBackendMayHaveACpuReference) {
    const auto r = kb::plan_source(backend_kind::cuda, "/op/reference.cpp", kb::source_role::reference);
    EXPECT_EQ(r.builder, kb::builder_kind::cpp);
    EXPECT_EQ(r.device, "cpu");
    EXPECT_EQ(kb::runner_tool_for("cuda", "cpu"), "kloop-runner-cuda");
}

TEST(BuildDispatchTest, CudaCandidateMustBeCu) {
    try {
        (void)kb::plan_source(backend_kind::cuda, "/op/v1.cpp", kb::source_role::candidate);
        FAIL();
    } catch (const kloop::usage_error& e) {
        EXPECT_NE(std::string(e.what()).find("not supported by the cuda backend (use .cu)"), std::string::npos) << e.what();
    }
}

TEST(BuildDispatchTest, CpuBackendStaysOnTheHost) {
    const auto c = kb::plan_source(backend_kind::cpu, "/op/v1.cpp", kb::source_role::candidate);
    EXPECT_EQ(c.builder, kb::builder_kind::cpp);
    EXPECT_EQ(c.device, "cpu");
    EXPECT_EQ(kb::runner_tool_for("cpu", "cpu"), "kloop-runner");
    EXPECT_THROW((void)kb::plan_source(backend_kind::cpu, "/op/v1.cu", kb::source_role::candidate), kloop::usage_error);
}

TEST(BuildDispatchTest, CudaSpecWithoutCudaSupportIsAUsageError) {
    kloop::spec::op_spec s;
    s.name = "copy";
    s.backend = backend_kind::cuda;
    try {
        kb::require_backend_support(s, false);
        FAIL();
    } catch (const kloop::error& e) {
        EXPECT_EQ(e.get_code(), kloop::exit_code::usage_error);
        EXPECT_NE(std::string(e.what()).find("built without CUDA"), std::string::npos);
    }
    EXPECT_NO_THROW(kb::require_backend_support(s, true));
    s.backend = backend_kind::cpu;
    EXPECT_NO_THROW(kb::require_backend_support(s, false));
}

TEST(BuildDispatchTest, PythonBackendTakesNativeCandidatesRunByTheWorker) {
    const auto cu = kb::plan_source(backend_kind::python, "/op/versions/v1.cu", kb::source_role::candidate);
    EXPECT_EQ(cu.builder, kb::builder_kind::nvcc);
    EXPECT_EQ(cu.device, "python");
    for (const char* f : {"/op/v1.cpp", "/op/v1.cc", "/op/v1.cxx", "/op/v1.c"}) {
        const auto c = kb::plan_source(backend_kind::python, f, kb::source_role::candidate);
        EXPECT_EQ(c.builder, kb::builder_kind::cpp) << f;
        EXPECT_EQ(c.device, "python") << f;
    }
    EXPECT_EQ(kb::plan_source(backend_kind::python, "/op/v1.py", kb::source_role::candidate).builder, kb::builder_kind::python);
    // The reference is a module; anything else is refused naming the file and what is allowed.
    for (const char* f : {"/op/ref.cu", "/op/ref.cpp"})
        EXPECT_THROW((void)kb::plan_source(backend_kind::python, f, kb::source_role::reference), kloop::usage_error) << f;
    try {
        (void)kb::plan_source(backend_kind::python, "/op/v1.rs", kb::source_role::candidate);
        FAIL();
    } catch (const kloop::usage_error& e) {
        const std::string w = e.what();
        EXPECT_NE(w.find("/op/v1.rs"), std::string::npos) << w;
        EXPECT_NE(w.find(".cu, .cpp"), std::string::npos) << w;
    }
}
