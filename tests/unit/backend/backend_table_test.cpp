// Unit under test: backend/backend — the one table (which backend an op gets) and the
// interface's per-backend answers the pipeline relies on instead of naming a backend: the
// runner it starts, whether its timing is on a GPU, whether ncu can profile it, whether it
// brings its own pipeline, and where a candidate's headers may come from.
#include <gtest/gtest.h>

#include "backend/backend.hpp"
#include "backend/python/python_worker.hpp"
#include "core/error.hpp"
#include "platform/file_io.hpp"
#include "platform/paths.hpp"

namespace kb = kloop::backend;
namespace ks = kloop::spec;

namespace {

ks::op_spec spec_of(ks::backend_kind kind) {
    ks::op_spec s;
    s.name = "op";
    s.backend = kind;
    s.op_dir = "/op";
    s.build.include_dirs = {ks::include_dir{"/op/include", "", 1, "build.include_dirs[0]"}};
    return s;
}

kloop::runner::job job_on(const std::string& candidate_device, const std::string& reference_device) {
    kloop::runner::job j;
    j.candidate_device = candidate_device;
    j.reference_device = reference_device;
    return j;
}

kloop::platform::process_request launched(const kb::op_backend& be, const kloop::runner::job& job, bool wrapped) {
    kloop::platform::process_request req;
    req.argv = {"wrapper"};
    be.launch(req, kb::launch_inputs{job, "/s/gate_job.json", "/s/gate_events.jsonl", wrapped, 1 << 30});
    return req;
}

}  // namespace

TEST(BackendTableTest, EachLanguageGetsItsBackendAndABlackBoxOpGetsTheBlackBoxOne) {
    EXPECT_EQ(kb::backend_for(spec_of(ks::backend_kind::cpu)).name(), "cpu");
    EXPECT_EQ(kb::backend_for(spec_of(ks::backend_kind::cuda)).name(), "cuda");
    EXPECT_EQ(kb::backend_for(spec_of(ks::backend_kind::python)).name(), "python");
    auto bb = spec_of(ks::backend_kind::python);
    bb.blackbox.emplace();
    const auto& be = kb::backend_for(bb);
    EXPECT_EQ(be.name(), "blackbox");
    EXPECT_NE(be.own_pipeline(), nullptr);
    for (auto k : {ks::backend_kind::cpu, ks::backend_kind::cuda, ks::backend_kind::python})
        EXPECT_EQ(kb::backend_for(spec_of(k)).own_pipeline(), nullptr);
    // A black-box op's candidate files follow its language (the loop stages them).
    EXPECT_EQ(be.plan(bb, "/repo/fla/layernorm.py", kb::source_role::candidate).builder, kb::builder_kind::python);
    EXPECT_NE(be.profile_unavailable(bb).find("black-box"), std::string::npos);
}

TEST(BackendTableTest, NativeBackendsStartTheirRunnerAndCapOnlyTheCpuOne) {
    const auto cpu = launched(kb::backend_for(ks::backend_kind::cpu), job_on("cpu", "cpu"), false);
    ASSERT_EQ(cpu.argv.size(), 6u);
    EXPECT_EQ(cpu.argv[0], "wrapper");  // the wrapper stays in front
    EXPECT_EQ(std::filesystem::path(cpu.argv[1]).filename(), "kloop-runner");
    EXPECT_EQ(cpu.argv[3], "/s/gate_job.json");
    EXPECT_EQ(cpu.argv[5], "/s/gate_events.jsonl");
    EXPECT_EQ(cpu.memory_limit_bytes, std::size_t{1} << 30);
    // Under a wrapper (ncu) the cap would bind the wrapper too: none.
    EXPECT_EQ(launched(kb::backend_for(ks::backend_kind::cpu), job_on("cpu", "cpu"), true).memory_limit_bytes, 0u);

    const auto gpu = launched(kb::backend_for(ks::backend_kind::cuda), job_on("cuda", "cpu"), false);
    EXPECT_EQ(std::filesystem::path(gpu.argv[1]).filename(), "kloop-runner-cuda");
    EXPECT_EQ(gpu.memory_limit_bytes, 0u);  // the driver maps device memory into the runner
}

TEST(BackendTableTest, TimedOnAGpuIsTheBackendsAnswer) {
    kloop::eval::build_summary b;
    b.device = "cuda";
    b.target = "sm_90";
    EXPECT_TRUE(kb::backend_for(ks::backend_kind::cuda).timed_on_gpu(b));
    EXPECT_FALSE(kb::backend_for(ks::backend_kind::cpu).timed_on_gpu(b));
    b.device = "python";
    b.target = "torch-cuda";
    EXPECT_TRUE(kb::backend_for(ks::backend_kind::python).timed_on_gpu(b));
    b.target = "torch-cpu+TRITON_INTERPRET";
    EXPECT_FALSE(kb::backend_for(ks::backend_kind::python).timed_on_gpu(b));
    b.target = "numpy";
    EXPECT_FALSE(kb::backend_for(ks::backend_kind::python).timed_on_gpu(b));
}

TEST(BackendTableTest, CudaAndGpuPythonOpsCanBeProfiledAndTheOthersSayWhy) {
    const auto cuda = spec_of(ks::backend_kind::cuda);
    EXPECT_EQ(kb::backend_for(cuda).profile_unavailable(cuda), "");
    const auto cpu = spec_of(ks::backend_kind::cpu);
    const auto why_cpu = kb::backend_for(cpu).profile_unavailable(cpu);
    EXPECT_NE(why_cpu.find("needs a CUDA candidate"), std::string::npos) << why_cpu;
    EXPECT_NE(why_cpu.find("cpu"), std::string::npos) << why_cpu;
    // A Python op on the GPU: its worker runs under ncu (Triton's kernels, a native candidate's).
    auto py = spec_of(ks::backend_kind::python);
    py.python.device = "cuda";
    EXPECT_EQ(kb::backend_for(py).profile_unavailable(py), "");
    for (const char* device : {"auto", "cpu"}) {
        py.python.device = device;
        const auto why = kb::backend_for(py).profile_unavailable(py);
        EXPECT_NE(why.find("[python] device = \"cuda\""), std::string::npos) << why;
        EXPECT_NE(why.find(std::string("\"") + device + "\""), std::string::npos) << why;
    }
}

TEST(BackendTableTest, NativeHeadersMayComeFromKloopsAbiInEveryBackend) {
    // A Python op's candidate may be native (.cu, .cpp) and include kloop/kernel.h as well.
    for (auto k : {ks::backend_kind::cpu, ks::backend_kind::python}) {
        const auto spec = spec_of(k);
        const auto dirs = kb::backend_for(spec).header_dirs(spec);
        ASSERT_EQ(dirs.size(), 2u) << ks::to_string(k);
        EXPECT_EQ(dirs[0], std::filesystem::path("/op/include"));
        EXPECT_EQ(dirs[1], kloop::platform::abi_include_dir());
    }
}

// Under Nsight Compute (a wrapper in front): the worker is a fresh interpreter that ncu starts, never
// a request to the fork server (whose processes ncu would not see), on the GPU.
TEST(BackendTableTest, AWrappedPythonJobRunsTheWorkerUnderTheWrapper) {
    kloop::platform::scoped_temp_dir dir("kloop-backend-wrapped");
    kloop::backend::python::library_manifest m;
    m.role = "candidate";
    m.source = dir.path() / "kernel.py";
    m.snapshot = dir.path() / "kernel.py";
    m.module = "kernel";
    m.interpreter = "/usr/bin/python3";
    m.worker_dir = dir.path();
    m.device = "cuda";
    kloop::platform::write_file_atomic(dir.path() / "manifest.json", kloop::backend::python::to_json(m).dump());
    auto job = job_on("python", "python");
    job.candidate_lib = (dir.path() / "manifest.json").string();
    kloop::platform::process_request req;
    req.argv = {"/opt/ncu", "--profile-from-start", "off"};
    kb::backend_for(ks::backend_kind::python).launch(req, kb::launch_inputs{job, "/s/j.json", "/s/e.jsonl", true, 0});
    const std::vector<std::string> expected = {"/opt/ncu", "--profile-from-start", "off", "/usr/bin/python3", "-m",
                                               "kloop_worker", "--job", "/s/j.json", "--events", "/s/e.jsonl"};
    EXPECT_EQ(req.argv, expected);
    for (const auto& a : req.argv) EXPECT_EQ(a.find("fork_client"), std::string::npos) << a;
}

TEST(BackendTableTest, APythonJobStartsTheWorkerNotARunnerBinary) {
    // The worker's command needs a manifest: one that is missing is a usage error naming it, and
    // no kloop-runner is started in its place.
    auto job = job_on("python", "python");
    job.candidate_lib = "/nonexistent/manifest.json";
    kloop::platform::process_request req;
    EXPECT_THROW(kb::backend_for(ks::backend_kind::python)
                     .launch(req, kb::launch_inputs{job, "/s/j.json", "/s/e.jsonl", true, 0}),
                 kloop::usage_error);
    for (const auto& a : req.argv) EXPECT_EQ(a.find("kloop-runner"), std::string::npos) << a;
}
