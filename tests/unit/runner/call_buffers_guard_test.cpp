// Unit under test: runner/call_buffers — the checks after every call on an executor whose mirrors
// are not cheap to read back (a GPU): red zones gathered in one download, and every input
// compared on the "device" with a pristine copy kept current through perturb_inputs and
// prepare(). The executor here is a fake device in host memory that counts what crosses it.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <set>

#include "runner/call_buffers.hpp"

namespace kloop::runner {
namespace {

class fake_device final : public executor_base {
public:
    explicit fake_device(bool compares) : m_compares(compares) {}
    ~fake_device() override {
        for (void* p : m_live) std::free(p);
    }
    std::size_t downloaded = 0;     // bytes read back to the host
    std::set<void*> privates;       // allocate_private's blocks

protected:
    kl_device do_get_device() const override { return KL_CUDA; }
    bool do_can_compare_on_device() const override { return m_compares; }
    void* do_allocate(std::size_t bytes) override {
        void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
        m_live.insert(p);
        return p;
    }
    void do_release(void* p) noexcept override {
        m_live.erase(p);
        std::free(p);
    }
    void* do_allocate_private(std::size_t bytes) override {
        void* p = do_allocate(bytes);
        privates.insert(p);
        return p;
    }
    void do_release_private(void* p) noexcept override {
        privates.erase(p);
        do_release(p);
    }
    void do_upload(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void do_download(void* dst, const void* src, std::size_t bytes) override {
        downloaded += bytes;
        std::memcpy(dst, src, bytes);
    }
    void do_copy_on_device_deferred(void* dst, const void* src, std::size_t bytes) override { std::memcpy(dst, src, bytes); }
    void do_first_difference_deferred(const void* a, const void* b, std::size_t bytes, std::uint64_t* result) override {
        *result = ~std::uint64_t{0};
        for (std::size_t k = 0; k < bytes; ++k)
            if (static_cast<const unsigned char*>(a)[k] != static_cast<const unsigned char*>(b)[k]) {
                *result = k;
                return;
            }
    }
    call_outcome do_invoke(entry_fn, const kl_args&) override { return {}; }
    void do_flush_caches(std::uint64_t) override {}
    double do_time_call(entry_fn, const kl_args&, call_outcome&) override { return 0; }

private:
    bool m_compares;
    std::set<void*> m_live;
};

call_plan plan_of(bool inout = false) {
    call_plan p;
    p.mode = "fwd";
    p.shape = "s";
    p.inputs.push_back({"x", dtype::f32, {64, 64}, "normal(0, 1)", false, {}});
    p.inputs.push_back({"state", dtype::f32, {16}, "normal(0, 1)", inout, {}});
    p.outputs.push_back({"y", dtype::f32, {64, 64}, "", false, {}});
    return p;
}

// Inputs filled and uploaded, the first call prepared (the pristine copies made on the device).
void first_call(call_buffers& set) {
    set.fill_inputs(7);
    set.prepare();
    set.prepare_call();
}

// Writes one float of input `i` on the fake device, as a candidate's kernel would.
void scribble(const call_buffers& set, std::size_t i, std::size_t element) {
    static_cast<float*>(set.get_args().inputs[i].data)[element] += 1.0f;
}

TEST(CallBuffersGuardTest, EveryInputIsComparedOnTheDeviceAfterACall) {
    fake_device dev(true);
    const auto plan = plan_of();
    call_buffers set(plan, dev);
    first_call(set);
    set.perturb_inputs(11, 8);  // new values are the pristine ones too
    EXPECT_TRUE(set.guards_cover_inputs());

    dev.downloaded = 0;
    set.collect_guards();
    EXPECT_TRUE(set.find_changed_inputs().empty());
    // Only red zones and the comparison results came back, not the 16 KiB input.
    EXPECT_LT(dev.downloaded, plan.inputs[0].numel() * sizeof(float));

    set.prepare_call();
    set.perturb_inputs(12, 8);
    scribble(set, 0, 1234);
    set.collect_guards();
    const auto changed = set.find_changed_inputs();
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0].name, "x");
    EXPECT_EQ(changed[0].first_changed, 1234);
}

TEST(CallBuffersGuardTest, NewValuesUploadedByPrepareBecomeThePristineOnes) {
    fake_device dev(true);
    const auto plan = plan_of();
    call_buffers set(plan, dev);
    first_call(set);
    set.collect_guards();
    EXPECT_TRUE(set.find_changed_inputs().empty());
    set.fill_inputs(8);  // other values at the same addresses
    set.prepare();
    set.prepare_call();
    set.collect_guards();
    EXPECT_TRUE(set.find_changed_inputs().empty());
}

TEST(CallBuffersGuardTest, InoutInputsHaveNoPristineCopyOnTheDevice) {
    fake_device dev(true);
    const auto plan = plan_of(true);
    call_buffers set(plan, dev);
    first_call(set);
    EXPECT_EQ(dev.privates.size(), 2u);  // x's pristine copy and the results, none for "state"
    scribble(set, 1, 3);                  // an inout input may change
    set.collect_guards();
    EXPECT_TRUE(set.find_changed_inputs().empty());
}

TEST(CallBuffersGuardTest, AfterAFullReadBackTheHostCopiesAreCompared) {
    fake_device dev(true);
    const auto plan = plan_of();
    call_buffers set(plan, dev);
    first_call(set);
    scribble(set, 0, 99);
    set.collect();  // a checked call reads everything back
    const auto changed = set.find_changed_inputs();
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0].first_changed, 99);
}

TEST(CallBuffersGuardTest, WithoutADeviceComparisonInputsAreLeftToCheckedCalls) {
    fake_device dev(false);
    const auto plan = plan_of();
    call_buffers set(plan, dev);
    first_call(set);
    EXPECT_FALSE(set.guards_cover_inputs());
    EXPECT_TRUE(dev.privates.empty());
}

// A checked call with both sides on one device: the reference gets the pristine inputs (with
// the renewed elements) by device copies and poisoned outputs; the candidate's damage to an input
// is found by the device comparison; no input crosses to the host.
TEST(CallBuffersGuardTest, ACheckedCallOnOneDeviceMovesOnlyOutputs) {
    fake_device dev(true);
    const auto plan = plan_of();
    call_buffers set(plan, dev);
    call_buffers ref(plan, dev);
    first_call(set);
    set.perturb_inputs(11, 8);
    ASSERT_TRUE(set.can_check_on_device_with(ref));
    const std::vector<float> pristine(static_cast<const float*>(set.get_input(0).data()),
                                      static_cast<const float*>(set.get_input(0).data()) + plan.inputs[0].numel());
    scribble(set, 0, 4000);  // the candidate's damage, on the device only

    dev.downloaded = 0;
    set.collect_for_check();
    const auto changed = set.find_changed_inputs();
    ASSERT_EQ(changed.size(), 1u);
    EXPECT_EQ(changed[0].first_changed, 4000);

    ref.take_inputs_on_device(set);
    const auto* ref_x = static_cast<const float*>(ref.get_args().inputs[0].data);
    for (std::size_t k = 0; k < pristine.size(); ++k) ASSERT_EQ(ref_x[k], pristine[k]) << "element " << k;
    const auto* ref_y = static_cast<const unsigned char*>(ref.get_args().outputs[0].data);
    for (std::size_t k = 0; k < plan.outputs[0].numel() * sizeof(float); ++k) ASSERT_EQ(ref_y[k], 0xFF) << "byte " << k;
    const_cast<float*>(static_cast<const float*>(ref.get_args().outputs[0].data))[5] = 42.0f;  // "the reference ran"
    ref.collect_outputs();
    EXPECT_EQ(static_cast<const float*>(ref.get_output(0).data())[5], 42.0f);
    // Outputs (two 16 KiB blocks with zones) and zones came back; no input block did.
    const std::size_t out_block = set.get_output(0).get_block_bytes();
    EXPECT_LT(dev.downloaded, 2 * out_block + plan.inputs[0].numel() * sizeof(float) / 2);
}

TEST(CallBuffersGuardTest, InoutInputsKeepTheHostPathForCheckedCalls) {
    fake_device dev(true);
    const auto plan = plan_of(true);
    call_buffers set(plan, dev);
    call_buffers ref(plan, dev);
    first_call(set);
    EXPECT_FALSE(set.can_check_on_device_with(ref));
}

}  // namespace
}  // namespace kloop::runner
