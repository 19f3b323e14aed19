// Unit under test: backend/cuda/ptxas_report — parsing recorded `nvcc -Xptxas -v` output
// (tests/data/ptxas/, CUDA 13.0 and the older cmem format) into per-kernel resource usage.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "backend/cuda/ptxas_report.hpp"
#include "platform/file_io.hpp"

namespace kc = kloop::backend::cuda;

namespace {

kc::ptxas_report parse_recorded(const std::string& name) {
    return kc::parse_ptxas_output(kloop::platform::read_file(std::string(KLOOP_TEST_SOURCE_DIR) + "/tests/data/ptxas/" + name));
}

}  // namespace

TEST(PtxasReportTest, ParsesEveryKernelOfACuda13Build) {
    const auto r = parse_recorded("cuda13_sm90_basic.txt");
    ASSERT_EQ(r.kernels.size(), 3u);
    const auto* copy = r.find("_Z6copy_kPKfPfl");
    ASSERT_NE(copy, nullptr);
    EXPECT_EQ(copy->target, "sm_90");
    EXPECT_EQ(copy->registers, 8);
    EXPECT_EQ(copy->barriers, 0);
    EXPECT_EQ(copy->smem_bytes, 0);
    EXPECT_EQ(copy->demangled, "copy_k(float const*, float*, long)");
    EXPECT_FALSE(copy->uses_local_memory());
    const auto* smem = r.find("smem_k(float const*, float*, int)");  // by demangled name too
    ASSERT_NE(smem, nullptr);
    EXPECT_EQ(smem->smem_bytes, 4096);
    EXPECT_EQ(smem->barriers, 1);
    EXPECT_EQ(smem->registers, 14);
    EXPECT_EQ(r.find("_Z7local_kPKfPfi")->registers, 42);
    EXPECT_FALSE(r.has_spills());
    EXPECT_TRUE(r.device_functions.empty());
}

TEST(PtxasReportTest, SpillsStackFramesAndDeviceFunctions) {
    const auto r = parse_recorded("cuda13_sm90_spills_stack.txt");
    ASSERT_EQ(r.kernels.size(), 3u);
    const auto* spill = r.find("_Z7spill_kILi96EEvPKfPf");
    ASSERT_NE(spill, nullptr);
    EXPECT_EQ(spill->registers, 32);
    EXPECT_EQ(spill->stack_frame_bytes, 80);
    EXPECT_EQ(spill->spill_store_bytes, 76);
    EXPECT_EQ(spill->spill_load_bytes, 76);
    EXPECT_EQ(spill->cumulative_stack_bytes, 80);
    const auto* stack = r.find("_Z7stack_kPKfPfi");
    ASSERT_NE(stack, nullptr);
    EXPECT_EQ(stack->stack_frame_bytes, 1152);  // a local array without spills
    EXPECT_EQ(stack->spill_store_bytes, 0);
    EXPECT_TRUE(stack->uses_local_memory());
    EXPECT_TRUE(r.has_spills());
    // "Function properties for" a non-entry function is not a kernel.
    ASSERT_EQ(r.device_functions.size(), 1u);
    EXPECT_EQ(r.device_functions[0].name, "_Z6helperPKfi");
    EXPECT_EQ(r.find("_Z6helperPKfi"), nullptr);
}

TEST(PtxasReportTest, ArchSpecificTargetAndPerformanceNotes) {
    const auto r = parse_recorded("cuda13_sm90a_setmaxnreg.txt");
    ASSERT_EQ(r.kernels.size(), 2u);
    for (const auto& k : r.kernels) EXPECT_EQ(k.target, "sm_90a");
    ASSERT_EQ(r.notes.size(), 1u);
    EXPECT_NE(r.notes[0].find("setmaxnreg"), std::string::npos);
}

TEST(PtxasReportTest, AFailedBuildHasNoKernels) {
    const auto r = parse_recorded("cuda13_sm90_error.txt");
    EXPECT_TRUE(r.empty());
}

TEST(PtxasReportTest, OlderFormatWithConstantBanks) {
    const auto r = parse_recorded("cuda12_format_cmem.txt");
    ASSERT_EQ(r.kernels.size(), 2u);
    EXPECT_EQ(r.kernels[0].registers, 8);
    EXPECT_EQ(r.kernels[0].barriers, -1);  // not reported by that format
    EXPECT_EQ(r.kernels[0].cmem_bytes.at(0), 368);
    const auto& k = r.kernels[1];
    EXPECT_EQ(k.registers, 64);
    EXPECT_EQ(k.smem_bytes, 4096);
    EXPECT_EQ(k.cumulative_stack_bytes, 16);
    EXPECT_EQ(k.cmem_bytes.at(0), 372);
    EXPECT_EQ(k.cmem_bytes.at(2), 8);
    EXPECT_EQ(k.spill_store_bytes, 8);
}

TEST(PtxasReportTest, JsonRoundTrip) {
    const auto r = parse_recorded("cuda12_format_cmem.txt");
    const auto j = r.to_json();
    EXPECT_EQ(j.at("kernels").at(1).at("cmem_bytes").at("2"), 8);
    const auto back = kc::ptxas_report::from_json(j);
    ASSERT_EQ(back.kernels.size(), 2u);
    EXPECT_EQ(back.kernels[1].cmem_bytes.at(2), 8);
    EXPECT_EQ(back.kernels[1].spill_load_bytes, 8);
    EXPECT_EQ(back.to_json(), j);
}

TEST(PtxasReportTest, IgnoresUnrelatedOutputAndSummarises) {
    const auto r = kc::parse_ptxas_output("a.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"
                                          "ptxas info    : Compiling entry function 'k' for 'sm_90'\r\n"
                                          "ptxas info    : Used 4 registers, used 0 barriers\r\n");
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].name, "k");
    EXPECT_EQ(r.kernels[0].registers, 4);
    EXPECT_EQ(kc::summarize_kernel(r.kernels[0]), "k [sm_90]: 4 regs, 0 B smem");
}
