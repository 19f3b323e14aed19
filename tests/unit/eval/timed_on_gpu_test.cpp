// Unit under test: eval::timed_on_gpu — which candidates get the GPU's cache flush (2 x L2) rather
// than the host's (2 x LLC) in verify and in the A/B of compare and iterate.
#include <gtest/gtest.h>

#include "eval/evaluator.hpp"

TEST(TimedOnGpuTest, CudaAndTorchOnCudaYesHostAndInterpreterNo) {
    kloop::eval::build_summary b;
    b.device = "cuda";
    b.target = "sm_90";
    EXPECT_TRUE(kloop::eval::timed_on_gpu(b));
    b.device = "python";
    b.target = "torch-cuda";
    EXPECT_TRUE(kloop::eval::timed_on_gpu(b));
    b.target = "torch-cpu+TRITON_INTERPRET";
    EXPECT_FALSE(kloop::eval::timed_on_gpu(b));
    b.target = "numpy";
    EXPECT_FALSE(kloop::eval::timed_on_gpu(b));
    b.device = "cpu";
    b.target = "x86_64";
    EXPECT_FALSE(kloop::eval::timed_on_gpu(b));
}
